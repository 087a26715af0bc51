// Package bedrocktest is a fake Amazon Bedrock for tests: an httptest server
// that speaks the Converse wire format exactly as the SDK
// (aws-sdk-go-v2/service/bedrockruntime) sends and parses it:
// POST /model/{modelId}/converse with a JSON body (messages, system,
// toolConfig, inferenceConfig, cachePoint blocks), answered with
// output.message.content (text and toolUse blocks), stopReason and usage, or
// with an error the SDK parses (the X-Amzn-ErrorType header or __type, and
// message).
//
// Replies are scripted; when a reply leaves Usage nil the server simulates
// prompt caching: every prefix ending at a cache point is remembered by its
// hash, its tokens (4 characters a token) count as cache writes the first time
// and as cache reads afterwards, the rest as input tokens. As on Bedrock, a
// cache point whose segment (the tokens since the previous one) is below the
// model's minimum (bedrock.Info) caches nothing.
//
// It also speaks ApplyGuardrail (POST
// /guardrail/{id}/version/{version}/apply), answered by the function given
// to OnGuardrail.
//
// It is faithful to what Bedrock documents (see Check): a request Bedrock
// would refuse gets the same 400 ValidationException (strict tool schemas
// outside the supported subset, a context window overflow, roles that do
// not alternate, a toolUse without its toolResult, toolChoice forced with
// extended thinking, temperature and top_p together on a model taking one,
// too many cache points), and a scripted tool call no model could have
// made (a tool the request does not offer, or strict tool input that breaks
// the request's own schema) fails the test (see CheckAnswer).
package bedrocktest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/ora-runtime/ora/shared/bedrock"
)

// Block is one content block of the wire format; exactly one field is set.
type Block struct {
	Text       *string     `json:"text,omitempty"`
	CachePoint *CachePoint `json:"cachePoint,omitempty"`
	ToolUse    *ToolUse    `json:"toolUse,omitempty"`
	ToolResult *ToolResult `json:"toolResult,omitempty"`
}

// ToolResult is a toolResult block.
type ToolResult struct {
	ToolUseID string `json:"toolUseId"`
	Content   []struct {
		JSON json.RawMessage `json:"json,omitempty"`
		Text *string         `json:"text,omitempty"`
	} `json:"content"`
	Status string `json:"status,omitempty"`
}

// GuardrailConfig is the guardrailConfig of a Converse request.
type GuardrailConfig struct {
	GuardrailIdentifier string `json:"guardrailIdentifier"`
	GuardrailVersion    string `json:"guardrailVersion"`
	Trace               string `json:"trace,omitempty"`
}

// CachePoint is a cachePoint block.
type CachePoint struct {
	Type string `json:"type"`
}

// ToolUse is a toolUse block.
type ToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// Message is one message of the conversation.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// ToolSpec is a toolSpec as sent.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Strict      *bool  `json:"strict,omitempty"`
	InputSchema struct {
		JSON json.RawMessage `json:"json"`
	} `json:"inputSchema"`
}

// ToolConfig is the toolConfig as sent.
type ToolConfig struct {
	Tools []struct {
		ToolSpec *ToolSpec `json:"toolSpec,omitempty"`
	} `json:"tools"`
	ToolChoice *struct {
		Tool *struct {
			Name string `json:"name"`
		} `json:"tool,omitempty"`
		Any  *struct{} `json:"any,omitempty"`
		Auto *struct{} `json:"auto,omitempty"`
	} `json:"toolChoice,omitempty"`
}

// InferenceConfig is the inferenceConfig as sent.
type InferenceConfig struct {
	MaxTokens     *int     `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

// Request is a Converse request as the server received it.
type Request struct {
	ModelID         string           `json:"-"`
	Header          http.Header      `json:"-"`
	Body            []byte           `json:"-"` // the body as sent
	Messages        []Message        `json:"messages"`
	System          []Block          `json:"system"`
	ToolConfig      *ToolConfig      `json:"toolConfig,omitempty"`
	InferenceConfig *InferenceConfig `json:"inferenceConfig,omitempty"`
	GuardrailConfig *GuardrailConfig `json:"guardrailConfig,omitempty"`
	// AdditionalModelRequestFields holds model-specific fields (Anthropic's
	// extended thinking).
	AdditionalModelRequestFields json.RawMessage `json:"additionalModelRequestFields,omitempty"`
}

// ToolResults returns the toolResult blocks of the messages, in order.
func (r Request) ToolResults() []ToolResult {
	var out []ToolResult
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.ToolResult != nil {
				out = append(out, *b.ToolResult)
			}
		}
	}
	return out
}

// MaxTokens returns inferenceConfig.maxTokens, or 0.
func (r Request) MaxTokens() int {
	if r.InferenceConfig == nil || r.InferenceConfig.MaxTokens == nil {
		return 0
	}
	return *r.InferenceConfig.MaxTokens
}

// GuardrailRequest is an ApplyGuardrail request as the server received it.
type GuardrailRequest struct {
	GuardrailID string `json:"-"`
	Version     string `json:"-"`
	Source      string `json:"source"`
	Content     []struct {
		Text struct {
			Text string `json:"text"`
		} `json:"text"`
	} `json:"content"`
}

// Texts returns the request's texts.
func (g GuardrailRequest) Texts() []string {
	out := make([]string, len(g.Content))
	for i, c := range g.Content {
		out[i] = c.Text.Text
	}
	return out
}

// GuardrailReply is an ApplyGuardrail answer: Intervened sets the action to
// GUARDRAIL_INTERVENED with a topic policy assessment naming Topic, or,
// when Filter is set, a content policy assessment of that filter type
// (PROMPT_ATTACK for the prompt-attack filter); Status >= 400 makes it an
// error as in Reply.
type GuardrailReply struct {
	Intervened bool
	Topic      string
	Filter     string
	Reason     string
	Status     int
	ErrorType  string
	Message    string
}

// ForcedTool returns the tool name toolChoice forces, or "".
func (r Request) ForcedTool() string {
	if r.ToolConfig == nil || r.ToolConfig.ToolChoice == nil || r.ToolConfig.ToolChoice.Tool == nil {
		return ""
	}
	return r.ToolConfig.ToolChoice.Tool.Name
}

// Tool returns the spec of the named tool, or nil.
func (r Request) Tool(name string) *ToolSpec {
	if r.ToolConfig == nil {
		return nil
	}
	for _, t := range r.ToolConfig.Tools {
		if t.ToolSpec != nil && t.ToolSpec.Name == name {
			return t.ToolSpec
		}
	}
	return nil
}

// UserText returns the text blocks of the messages, joined by newlines.
func (r Request) UserText() string {
	var b []string
	for _, m := range r.Messages {
		for _, c := range m.Content {
			if c.Text != nil {
				b = append(b, *c.Text)
			}
		}
	}
	return strings.Join(b, "\n")
}

// CachePoints counts the cache points in system and messages.
func (r Request) CachePoints() (system, messages int) {
	for _, b := range r.System {
		if b.CachePoint != nil {
			system++
		}
	}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.CachePoint != nil {
				messages++
			}
		}
	}
	return system, messages
}

// Usage is the usage object of a reply.
type Usage struct {
	InputTokens           int `json:"inputTokens"`
	OutputTokens          int `json:"outputTokens"`
	TotalTokens           int `json:"totalTokens"`
	CacheReadInputTokens  int `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int `json:"cacheWriteInputTokens"`
}

// Reply is one scripted answer. A Reply with Status >= 400 is an error:
// ErrorType goes into the X-Amzn-ErrorType header (or only into the body's
// __type when BodyTypeOnly is set) and Message into the body.
type Reply struct {
	Status       int
	ErrorType    string
	Message      string
	BodyTypeOnly bool

	Text     string
	ToolUses []ToolUse
	// StopReason is sent as it is: end_turn, tool_use, max_tokens,
	// stop_sequence, guardrail_intervened, content_filtered,
	// malformed_model_output, malformed_tool_use,
	// model_context_window_exceeded. Default tool_use when ToolUses are set,
	// else end_turn.
	StopReason string
	Usage      *Usage // nil: simulated from the request (see the package doc)
	// RawBody, when set, is written as the body as it is.
	RawBody string
}

// Stopped is a record-style reply whose answer ended with stopReason; for
// guardrail_intervened and content_filtered the content is the text Bedrock
// puts in place of the blocked answer.
func Stopped(stopReason string, r Reply) Reply {
	r.StopReason = stopReason
	switch stopReason {
	case "guardrail_intervened", "content_filtered":
		r.ToolUses = nil
		r.Text = "Sorry, the model cannot answer this request."
	}
	return r
}

// ModelError is the 424 ModelErrorException Bedrock returns when the model
// failed to process the request.
func ModelError() Reply {
	return Reply{Status: http.StatusFailedDependency, ErrorType: "ModelErrorException", Message: "The model produced an invalid response."}
}

// ModelNotReady is the 429 ModelNotReadyException of a model being loaded.
func ModelNotReady() Reply {
	return Reply{Status: http.StatusTooManyRequests, ErrorType: "ModelNotReadyException", Message: "Model is not ready to serve inference requests."}
}

// Throttle is the reply Bedrock gives a throttled call (HTTP 429).
func Throttle() Reply {
	return Reply{Status: http.StatusTooManyRequests, ErrorType: "ThrottlingException", Message: "Too many requests, please wait before trying again."}
}

// Invalid is the reply to a request Bedrock rejects (HTTP 400).
func Invalid(msg string) Reply {
	return Reply{Status: http.StatusBadRequest, ErrorType: "ValidationException", Message: msg}
}

// InternalError is a 500 InternalServerException.
func InternalError() Reply {
	return Reply{Status: http.StatusInternalServerError, ErrorType: "InternalServerException", Message: "internal server error"}
}

// Unavailable is a 503 ServiceUnavailableException.
func Unavailable() Reply {
	return Reply{Status: http.StatusServiceUnavailable, ErrorType: "ServiceUnavailableException", Message: "service unavailable"}
}

// Tool is a reply calling tool name with input (any value marshalled to JSON,
// or a json.RawMessage). An input that cannot be marshalled becomes a 500
// reply naming the problem.
func Tool(name string, input any) Reply {
	raw, ok := input.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(input)
		if err != nil {
			return Reply{Status: http.StatusInternalServerError, ErrorType: "InternalServerException", Message: "bedrocktest: marshal tool input: " + err.Error()}
		}
		raw = b
	}
	return Reply{ToolUses: []ToolUse{{ToolUseID: "tooluse_1", Name: name, Input: raw}}}
}

// Server is a fake Bedrock.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	handler  func(Request) Reply
	guard    func(GuardrailRequest) GuardrailReply
	requests []Request
	guards   []GuardrailRequest
	cached   map[string]bool
	t        testing.TB
}

// OnGuardrail sets the function answering ApplyGuardrail requests; without
// one they get a 404 ResourceNotFoundException.
func (s *Server) OnGuardrail(h func(GuardrailRequest) GuardrailReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guard = h
}

// GuardrailRequests returns the ApplyGuardrail requests received so far.
func (s *Server) GuardrailRequests() []GuardrailRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]GuardrailRequest(nil), s.guards...)
}

// New starts a server answering with replies in order; a request beyond the
// script fails the test and gets a 500. It closes with the test.
func New(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	var mu sync.Mutex
	i := 0
	return NewFunc(t, func(Request) Reply {
		mu.Lock()
		defer mu.Unlock()
		if i >= len(replies) {
			t.Errorf("bedrocktest: request %d beyond the %d scripted replies", i+1, len(replies))
			return InternalError()
		}
		i++
		return replies[i-1]
	})
}

// NewFunc starts a server answering each request with h's reply.
func NewFunc(t testing.TB, h func(Request) Reply) *Server {
	t.Helper()
	s := &Server{handler: h, cached: map[string]bool{}, t: t}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Start starts a server outside a test (`ora reason --fake-bedrock`), answering
// each request with h's reply; the caller closes it. Its Client method is for
// tests only.
func Start(h func(Request) Reply) *Server {
	s := &Server{handler: h, cached: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Client returns an SDK client pointed at the server (BaseEndpoint, static
// credentials), with the standard retryer bounded to maxAttempts and no
// backoff delay.
func (s *Server) Client(maxAttempts int) *bedrockruntime.Client {
	c, err := bedrock.NewClient(context.Background(), func(o *bedrock.ClientOptions) {
		o.Endpoint = s.URL
		o.Region = "us-east-1"
		o.Credentials = credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")
		o.MaxAttempts = maxAttempts
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
	if err != nil {
		s.t.Fatalf("bedrocktest: client: %v", err)
	}
	return c
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	if r.Method == http.MethodPost && strings.HasPrefix(path, "/guardrail/") && strings.HasSuffix(path, "/apply") {
		s.serveGuardrail(w, r, path)
		return
	}
	if r.Method != http.MethodPost || !strings.HasPrefix(path, "/model/") || !strings.HasSuffix(path, "/converse") {
		writeError(w, Reply{Status: http.StatusNotFound, ErrorType: "UnknownOperationException", Message: r.Method + " " + path})
		return
	}
	model, err := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(path, "/model/"), "/converse"))
	if err != nil || model == "" {
		writeError(w, Invalid("bad model id in path "+path))
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		writeError(w, Reply{Status: http.StatusForbidden, ErrorType: "AccessDeniedException", Message: "missing SigV4 signature"})
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, Invalid(err.Error()))
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, Invalid("malformed JSON body: "+err.Error()))
		return
	}
	req.ModelID, req.Header, req.Body = model, r.Header.Clone(), body
	if msg := Check(req); msg != "" {
		writeError(w, Invalid(msg))
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()

	rep := s.handler(req)
	if rep.Status >= 400 {
		writeError(w, rep)
		return
	}
	if rep.RawBody == "" && (rep.StopReason == "" || rep.StopReason == "tool_use" || rep.StopReason == "end_turn") {
		for _, tu := range rep.ToolUses {
			if msg := CheckAnswer(req, tu); msg != "" {
				// A model on Bedrock could not have answered this: the
				// script is wrong, not the code under test.
				if s.t != nil {
					s.t.Errorf("bedrocktest: scripted reply refused: %s", msg)
				}
				writeError(w, Reply{Status: http.StatusInternalServerError, ErrorType: "InternalServerException", Message: "bedrocktest: scripted reply refused: " + msg})
				return
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if rep.RawBody != "" {
		_, _ = io.WriteString(w, rep.RawBody)
		return
	}
	var content []map[string]any
	if rep.Text != "" {
		content = append(content, map[string]any{"text": rep.Text})
	}
	for _, tu := range rep.ToolUses {
		content = append(content, map[string]any{"toolUse": tu})
	}
	stop := rep.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(rep.ToolUses) > 0 {
			stop = "tool_use"
		}
	}
	usage := rep.Usage
	if usage == nil {
		out, _ := json.Marshal(content)
		u := s.simulate(req, len(out))
		usage = &u
	}
	usage.TotalTokens = usage.InputTokens + usage.OutputTokens + usage.CacheReadInputTokens + usage.CacheWriteInputTokens
	_ = json.NewEncoder(w).Encode(map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": stop,
		"usage":      usage,
		"metrics":    map[string]any{"latencyMs": 42},
	})
}

func tokens(n int) int { return (n + 3) / 4 }

// simulate computes a usage for req as a caching Bedrock would.
func (s *Server) simulate(req Request, outChars int) Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var u Usage
	info, _ := bedrock.Info(req.ModelID)
	min := info.CacheMinTokens
	h := sha256.New()
	pending := 0
	fmt.Fprintf(h, "model=%s;", req.ModelID)
	if req.ToolConfig != nil {
		b, _ := json.Marshal(req.ToolConfig.Tools)
		h.Write(b)
		pending += tokens(len(b))
	}
	walk := func(blocks []Block) {
		for _, b := range blocks {
			switch {
			case b.Text != nil:
				h.Write([]byte(*b.Text))
				pending += tokens(len(*b.Text))
			case b.ToolUse != nil || b.ToolResult != nil:
				j, _ := json.Marshal(b)
				h.Write(j)
				pending += tokens(len(j))
			case b.CachePoint != nil:
				if pending < min {
					continue // below the minimum: Bedrock ignores the checkpoint
				}
				key := hex.EncodeToString(h.Sum(nil))
				if s.cached[key] {
					u.CacheReadInputTokens += pending
				} else {
					s.cached[key] = true
					u.CacheWriteInputTokens += pending
				}
				pending = 0
			}
		}
	}
	walk(req.System)
	for _, m := range req.Messages {
		walk(m.Content)
	}
	u.InputTokens = pending
	u.OutputTokens = tokens(outChars)
	return u
}

func writeError(w http.ResponseWriter, rep Reply) {
	w.Header().Set("Content-Type", "application/json")
	body := map[string]any{"message": rep.Message}
	if rep.BodyTypeOnly {
		body["__type"] = rep.ErrorType
	} else {
		w.Header().Set("X-Amzn-ErrorType", rep.ErrorType+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	}
	w.WriteHeader(rep.Status)
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) serveGuardrail(w http.ResponseWriter, r *http.Request, path string) {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		writeError(w, Reply{Status: http.StatusForbidden, ErrorType: "AccessDeniedException", Message: "missing SigV4 signature"})
		return
	}
	parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(path, "/guardrail/"), "/apply"), "/version/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		writeError(w, Invalid("bad guardrail path "+path))
		return
	}
	var req GuardrailRequest
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || len(req.Content) == 0 || (req.Source != "INPUT" && req.Source != "OUTPUT") {
		writeError(w, Invalid("content and source (INPUT or OUTPUT) are required"))
		return
	}
	req.GuardrailID, _ = url.PathUnescape(parts[0])
	req.Version, _ = url.PathUnescape(parts[1])
	s.mu.Lock()
	s.guards = append(s.guards, req)
	h := s.guard
	s.mu.Unlock()
	if h == nil {
		writeError(w, Reply{Status: http.StatusNotFound, ErrorType: "ResourceNotFoundException", Message: "guardrail " + req.GuardrailID + " not found"})
		return
	}
	rep := h(req)
	if rep.Status >= 400 {
		writeError(w, Reply{Status: rep.Status, ErrorType: rep.ErrorType, Message: rep.Message})
		return
	}
	out := map[string]any{"action": "NONE", "outputs": []any{}, "assessments": []any{}, "usage": map[string]int{"topicPolicyUnits": 1, "contentPolicyUnits": 1}}
	if rep.Intervened {
		out["action"] = "GUARDRAIL_INTERVENED"
		out["outputs"] = []any{map[string]string{"text": "Sorry, the model cannot answer this request."}}
		out["assessments"] = []any{map[string]any{"topicPolicy": map[string]any{"topics": []any{map[string]string{"name": rep.Topic, "type": "DENY", "action": "BLOCKED"}}}}}
		if rep.Filter != "" {
			out["assessments"] = []any{map[string]any{"contentPolicy": map[string]any{"filters": []any{map[string]string{"type": rep.Filter, "confidence": "HIGH", "filterStrength": "HIGH", "action": "BLOCKED"}}}}}
		}
		if rep.Reason != "" {
			out["actionReason"] = rep.Reason
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
