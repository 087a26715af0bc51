// Package bedrock adapts Amazon Bedrock's Converse API (bedrockruntime) to
// ora: one Converse call per request with a model id and a fallback list,
// inference settings, system prompts, tools forced through toolChoice for
// structured JSON output, prompt-caching cache points after the stable prefix,
// and the usage of every call. SDK errors are translated to ora's error kinds
// at this boundary by ErrorPolicy (see ErrorPolicy for the table); cache
// points are placed only where the prefix reaches the model's minimum
// (CacheMinTokens); an optional guardrail is applied to every call and
// ApplyGuardrail checks texts on their own.
package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/ora-runtime/ora/shared/ora"
)

// API is the part of the bedrockruntime client this package calls; the SDK's
// *bedrockruntime.Client satisfies it.
type API interface {
	Converse(ctx context.Context, in *bedrockruntime.ConverseInput, opts ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseOutput, error)
}

var _ API = (*bedrockruntime.Client)(nil)

// Inference holds the inference settings of a call. Zero values are left to
// the model's defaults.
type Inference struct {
	MaxTokens   int      `yaml:"max_tokens" json:"max_tokens"`
	Temperature *float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	TopP        *float64 `yaml:"top_p,omitempty" json:"top_p,omitempty"`
}

// Tool is a tool the model may call; Schema is its input's JSON Schema.
// Strict asks Bedrock to enforce the schema on the model's tool input
// (structured outputs); it is sent only to models that accept it
// (ModelInfo.StrictTools), with the keywords strict mode rejects left out
// (the caller validates the answer against the full schema anyway).
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage
	Strict      bool
}

// Guardrail names a Bedrock guardrail and its version. The zero value means
// no guardrail.
type Guardrail struct {
	ID      string `yaml:"id,omitempty" json:"id,omitempty"`
	Version string `yaml:"version,omitempty" json:"version,omitempty"`
}

// Enabled reports whether g names a guardrail.
func (g Guardrail) Enabled() bool { return g.ID != "" }

// Validate checks that an enabled guardrail has a version.
func (g Guardrail) Validate() error {
	if g.ID != "" && g.Version == "" {
		return ora.Invalid("guardrail.version", "required with guardrail.id %q (a number or DRAFT)", g.ID)
	}
	if g.ID == "" && g.Version != "" {
		return ora.Invalid("guardrail.id", "required with guardrail.version %q", g.Version)
	}
	return nil
}

// ToolResult is the answer to one of the model's tool calls, sent back in a
// toolResult block.
type ToolResult struct {
	ToolUseID string
	// JSON is the result; Error marks a failed call (status "error").
	JSON  json.RawMessage
	Error bool
}

// Turn is one round of the tool loop after the first user message: the
// assistant's answer (its text and tool calls) and the user message with the
// results of those calls.
type Turn struct {
	Text     string
	ToolUses []ToolUse
	Results  []ToolResult
}

// Request is one Converse call. The prompt is laid out as
//
//	system: System..., [cache point]
//	user:   Prefix, [cache point], Prompt
//
// so that System and Prefix (the stable part of a wave: the system prompt, the
// orientation packet and the signal) are cached and read back by later calls.
type Request struct {
	// Models are tried in order: the primary model, then the fallbacks.
	Models    []string
	System    []string
	Prefix    string
	Prompt    string
	Tools     []Tool
	ForceTool string // when set, toolChoice forces this tool
	// AnyTool makes toolChoice "any": the model must call one of the tools
	// (the tool loop uses it; ForceTool wins when both are set).
	AnyTool   bool
	Inference Inference
	// Turns are the earlier rounds of a tool loop, sent after the first
	// user message.
	Turns []Turn
	// Guardrail, when enabled, is applied to the call (guardrailConfig).
	Guardrail Guardrail
	// NoCache leaves the cache points out.
	NoCache bool
}

// ToolUse is a tool call the model made.
type ToolUse struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// Response is what the model answered.
type Response struct {
	Model      string    // the model that answered
	Fallback   bool      // true when it is not Models[0]
	Text       string    // the text blocks, joined by newlines
	ToolUses   []ToolUse // the tool calls, in order
	StopReason string
	Usage      ora.Usage
	// Failures lists the models tried before Model, with why they failed
	// (each names the Bedrock error code).
	Failures []string
	// CachePoints counts the cache points sent on the call that answered.
	CachePoints int
}

// Converser makes Converse calls.
type Converser struct {
	api     API
	secrets *ora.Secrets
}

// New returns a Converser over api (a *bedrockruntime.Client, usually from NewClient).
func New(api API) *Converser { return &Converser{api: api} }

// Redacting makes c replace every value secrets holds with its marker in
// what it sends the model (system prompts, the packet, the prompt, earlier
// turns), and returns c.
func (c *Converser) Redacting(secrets *ora.Secrets) *Converser {
	c.secrets = secrets
	return c
}

// redact returns req with the registered secrets replaced.
func (c *Converser) redact(req Request) Request {
	if c.secrets.Len() == 0 {
		return req
	}
	r := c.secrets.RedactString
	req.System = append([]string(nil), req.System...)
	for i := range req.System {
		req.System[i] = r(req.System[i])
	}
	req.Prefix, req.Prompt = r(req.Prefix), r(req.Prompt)
	turns := make([]Turn, len(req.Turns))
	for i, t := range req.Turns {
		t.Text = r(t.Text)
		uses := make([]ToolUse, len(t.ToolUses))
		for j, u := range t.ToolUses {
			u.Input = c.secrets.Redact(u.Input)
			uses[j] = u
		}
		results := make([]ToolResult, len(t.Results))
		for j, res := range t.Results {
			res.JSON = c.secrets.Redact(res.JSON)
			results[j] = res
		}
		t.ToolUses, t.Results = uses, results
		turns[i] = t
	}
	req.Turns = turns
	return req
}

// Converse runs req on its first model and handles errors as ErrorPolicy
// says: a model that is throttled or down (after the SDK's retries) or not
// ready or erroring (424, retried once on the same model first) is replaced
// by the next one; a ValidationException about the model (MessagePolicy)
// tries the next model once; any other ValidationException, and any error
// MessagePolicy says no model will get past, is returned at once. Errors:
// EINVALID, ETRANSIENT (every model throttled, down or not ready),
// ENOTFOUND, EFORBIDDEN, EINTERNAL; every message names the model and the
// Bedrock error code.
func (c *Converser) Converse(ctx context.Context, req Request) (Response, error) {
	if len(req.Models) == 0 {
		return Response{}, ora.Invalid("bedrock.models", "at least one model id is required")
	}
	if req.Prompt == "" && req.Prefix == "" {
		return Response{}, ora.Invalid("bedrock.prompt", "required")
	}
	if err := req.Guardrail.Validate(); err != nil {
		return Response{}, err
	}
	req = c.redact(req)
	var failures []string
	var last error
	validationFallback := false
	for i, model := range req.Models {
		in, points, err := buildInput(req, model)
		if err != nil {
			return Response{}, err
		}
		in.ModelId = aws.String(model)
		var out *bedrockruntime.ConverseOutput
		for attempt := 1; ; attempt++ {
			out, err = c.api.Converse(ctx, in)
			if err == nil {
				break
			}
			last = translate(model, err)
			if ErrorPolicy[errorCode(err)].SameModelRetries >= attempt && ctx.Err() == nil {
				failures = append(failures, fmt.Sprintf("%s: %v (retried on the same model)", model, last))
				continue
			}
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return Response{}, last
			}
			rule := ruleFor(err)
			switch {
			case rule.Fallback && meaningOf(err) == NextModel:
			case rule.ModelSpecificFallback && meaningOf(err) == NextModel && !validationFallback:
				validationFallback = true
			default:
				return Response{}, last
			}
			failures = append(failures, fmt.Sprintf("%s: %v", model, last))
			continue
		}
		resp, err := parseOutput(out)
		if err != nil {
			return Response{}, fmt.Errorf("bedrock: converse %s: %w", model, err)
		}
		resp.Model, resp.Fallback, resp.Failures, resp.CachePoints = model, i > 0, failures, points
		return resp, nil
	}
	return Response{}, last
}

// ErrorRule is what Converse does with one Bedrock error.
type ErrorRule struct {
	// Kind is the ora error kind the error becomes.
	Kind string
	// SameModelRetries is how many more times Converse calls the same model
	// (on top of the SDK retryer's attempts).
	SameModelRetries int
	// Fallback: the next model is tried.
	Fallback bool
	// ModelSpecificFallback: the next model is tried once per call, and only
	// when MessagePolicy says the message is about the model (e.g. "This
	// model doesn't support tool use", "The provided model identifier is
	// invalid"), not the request ("Input is too long for requested model").
	ModelSpecificFallback bool
}

// ErrorPolicy maps each Bedrock error code to what Converse does. An error
// not listed is EINTERNAL with no fallback, unless it is an HTTP 5xx, which
// is handled as InternalServerException.
var ErrorPolicy = map[string]ErrorRule{
	"ThrottlingException":           {Kind: ora.ETRANSIENT, Fallback: true},
	"ServiceUnavailableException":   {Kind: ora.ETRANSIENT, Fallback: true},
	"InternalServerException":       {Kind: ora.ETRANSIENT, Fallback: true},
	"ModelTimeoutException":         {Kind: ora.ETRANSIENT, Fallback: true},
	"ServiceQuotaExceededException": {Kind: ora.ETRANSIENT, Fallback: true},
	"ModelNotReadyException":        {Kind: ora.ETRANSIENT, SameModelRetries: 1, Fallback: true},
	"ModelErrorException":           {Kind: ora.ETRANSIENT, SameModelRetries: 1, Fallback: true},
	"AccessDeniedException":         {Kind: ora.EFORBIDDEN, Fallback: true},
	"ResourceNotFoundException":     {Kind: ora.ENOTFOUND, Fallback: true},
	"ValidationException":           {Kind: ora.EINVALID, ModelSpecificFallback: true},
}

// PolicyCodes returns ErrorPolicy's codes, sorted (for docs and tests).
func PolicyCodes() []string {
	codes := make([]string, 0, len(ErrorPolicy))
	for c := range ErrorPolicy {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	return codes
}

// errorCode is the Bedrock error code of err: the API error code, or
// InternalServerException for an HTTP 5xx without one, or "".
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() != "" {
		return api.ErrorCode()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= http.StatusInternalServerError {
		return "InternalServerException"
	}
	return ""
}

func ruleFor(err error) ErrorRule {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return ErrorRule{Kind: ora.ETRANSIENT}
	}
	if r, ok := ErrorPolicy[errorCode(err)]; ok {
		return r
	}
	return ErrorRule{Kind: ora.EINTERNAL}
}

// estimateTokens is ora's estimate of a text's tokens: 4 characters a
// token. It decides where cache points go; Bedrock reports the real counts.
func estimateTokens(chars int) int { return (chars + 3) / 4 }

func buildInput(req Request, model string) (*bedrockruntime.ConverseInput, int, error) {
	in := &bedrockruntime.ConverseInput{}
	info, _ := Info(model)
	caching := !req.NoCache && info.CacheMinTokens > 0
	points := 0
	// segment counts the tokens since the last cache point: tools, then
	// system, then messages, the order in which Bedrock builds the prefix.
	segment := 0
	checkpoint := func() bool {
		if !caching || segment < info.CacheMinTokens {
			return false
		}
		segment = 0
		points++
		return true
	}
	if len(req.Tools) > 0 {
		tc := &types.ToolConfiguration{}
		forced := false
		for _, t := range req.Tools {
			schema, err := parseOrdered(t.Schema)
			if err != nil {
				return nil, 0, ora.Invalid("bedrock.tools."+t.Name+".schema", "not JSON: %v", err)
			}
			spec := types.ToolSpecification{
				Name:        aws.String(t.Name),
				Description: aws.String(t.Description),
			}
			if t.Strict && info.StrictTools {
				schema = strictSchema(schema)
				spec.Strict = aws.Bool(true)
			}
			spec.InputSchema = &types.ToolInputSchemaMemberJson{Value: orderedDocument(schema)}
			segment += estimateTokens(len(t.Name) + len(t.Description) + len(marshalOrdered(schema)))
			tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
			forced = forced || t.Name == req.ForceTool
		}
		switch {
		case req.ForceTool != "":
			if !forced {
				return nil, 0, ora.Invalid("bedrock.force_tool", "%q is not among the tools", req.ForceTool)
			}
			tc.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(req.ForceTool)}}
		case req.AnyTool:
			tc.ToolChoice = &types.ToolChoiceMemberAny{Value: types.AnyToolChoice{}}
		}
		in.ToolConfig = tc
	} else if req.ForceTool != "" {
		return nil, 0, ora.Invalid("bedrock.force_tool", "%q is not among the tools", req.ForceTool)
	}
	for _, s := range req.System {
		in.System = append(in.System, &types.SystemContentBlockMemberText{Value: s})
		segment += estimateTokens(len(s))
	}
	if len(in.System) > 0 && checkpoint() {
		in.System = append(in.System, &types.SystemContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}})
	}
	var content []types.ContentBlock
	if req.Prefix != "" {
		content = append(content, &types.ContentBlockMemberText{Value: req.Prefix})
		segment += estimateTokens(len(req.Prefix))
		if checkpoint() {
			content = append(content, &types.ContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}})
		}
	}
	if req.Prompt != "" {
		content = append(content, &types.ContentBlockMemberText{Value: req.Prompt})
	}
	in.Messages = []types.Message{{Role: types.ConversationRoleUser, Content: content}}
	for i, t := range req.Turns {
		var asst []types.ContentBlock
		if t.Text != "" {
			asst = append(asst, &types.ContentBlockMemberText{Value: t.Text})
		}
		for _, tu := range t.ToolUses {
			var input any = object{}
			if len(tu.Input) > 0 {
				var err error
				if input, err = parseOrdered(tu.Input); err != nil {
					return nil, 0, ora.Invalid(fmt.Sprintf("bedrock.turns[%d].tool_uses", i), "input of %s is not JSON: %v", tu.Name, err)
				}
			}
			asst = append(asst, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String(tu.ID), Name: aws.String(tu.Name), Input: orderedDocument(input)}})
		}
		var results []types.ContentBlock
		for _, r := range t.Results {
			v, err := parseOrdered(r.JSON)
			if err != nil {
				return nil, 0, ora.Invalid(fmt.Sprintf("bedrock.turns[%d].results", i), "result of %s is not JSON: %v", r.ToolUseID, err)
			}
			block := types.ToolResultBlock{ToolUseId: aws.String(r.ToolUseID), Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberJson{Value: orderedDocument(v)}}}
			if r.Error {
				block.Status = types.ToolResultStatusError
			}
			results = append(results, &types.ContentBlockMemberToolResult{Value: block})
		}
		if len(asst) == 0 || len(results) == 0 {
			return nil, 0, ora.Invalid(fmt.Sprintf("bedrock.turns[%d]", i), "a turn needs the assistant's tool calls and their results")
		}
		in.Messages = append(in.Messages,
			types.Message{Role: types.ConversationRoleAssistant, Content: asst},
			types.Message{Role: types.ConversationRoleUser, Content: results})
	}
	inf := &types.InferenceConfiguration{}
	set := false
	if req.Inference.MaxTokens > 0 {
		inf.MaxTokens, set = aws.Int32(int32(req.Inference.MaxTokens)), true
	}
	if t := req.Inference.Temperature; t != nil {
		inf.Temperature, set = aws.Float32(float32(*t)), true
	}
	// Claude 4.5 models take temperature or top_p, not both: temperature
	// wins (ModelInfo.OneSampling).
	if p := req.Inference.TopP; p != nil && (req.Inference.Temperature == nil || !info.OneSampling) {
		inf.TopP, set = aws.Float32(float32(*p)), true
	}
	if set {
		in.InferenceConfig = inf
	}
	if g := req.Guardrail; g.Enabled() {
		in.GuardrailConfig = &types.GuardrailConfiguration{GuardrailIdentifier: aws.String(g.ID), GuardrailVersion: aws.String(g.Version), Trace: types.GuardrailTraceEnabled}
	}
	return in, points, nil
}

func parseOutput(out *bedrockruntime.ConverseOutput) (Response, error) {
	var resp Response
	resp.StopReason = string(out.StopReason)
	if u := out.Usage; u != nil {
		resp.Usage = ora.Usage{
			InputTokens:      int(aws.ToInt32(u.InputTokens)),
			OutputTokens:     int(aws.ToInt32(u.OutputTokens)),
			CacheReadTokens:  int(aws.ToInt32(u.CacheReadInputTokens)),
			CacheWriteTokens: int(aws.ToInt32(u.CacheWriteInputTokens)),
		}
	}
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return resp, ora.Errorf(ora.EINTERNAL, "response has no output message")
	}
	var texts []string
	for _, b := range msg.Value.Content {
		switch b := b.(type) {
		case *types.ContentBlockMemberText:
			texts = append(texts, b.Value)
		case *types.ContentBlockMemberToolUse:
			tu := ToolUse{ID: aws.ToString(b.Value.ToolUseId), Name: aws.ToString(b.Value.Name)}
			if b.Value.Input != nil {
				raw, err := b.Value.Input.MarshalSmithyDocument()
				if err != nil {
					return resp, ora.Errorf(ora.EINTERNAL, "tool use %s: input: %v", tu.Name, err)
				}
				tu.Input = raw
			}
			resp.ToolUses = append(resp.ToolUses, tu)
		}
	}
	resp.Text = strings.Join(texts, "\n")
	return resp, nil
}

// translate maps an SDK error to an ora error kind (ErrorPolicy), naming
// the model and the Bedrock error code.
func translate(model string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return ora.Transient(err, "bedrock: converse %s", model)
	}
	var missing *MissingRecording
	if errors.As(err, &missing) {
		return &ora.Error{Code: ora.ENOTFOUND, Message: "bedrock: converse " + model + ": " + missing.Error(), Err: err}
	}
	code := errorCode(err)
	msg := code
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorMessage() != "" {
		msg += ": " + api.ErrorMessage()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		msg = fmt.Sprintf("%s (HTTP %d)", msg, re.HTTPStatusCode())
	}
	switch ruleFor(err).Kind {
	case ora.ETRANSIENT:
		return ora.Transient(err, "bedrock: converse %s: %s", model, msg)
	case ora.EINVALID:
		return &ora.Error{Code: ora.EINVALID, Field: "bedrock.request", Message: fmt.Sprintf("converse %s: %s", model, msg), Err: err}
	case ora.EFORBIDDEN:
		return &ora.Error{Code: ora.EFORBIDDEN, Message: fmt.Sprintf("bedrock: converse %s: %s", model, msg), Err: err}
	case ora.ENOTFOUND:
		return &ora.Error{Code: ora.ENOTFOUND, Message: fmt.Sprintf("bedrock: converse %s: %s", model, msg), Err: err}
	}
	if code == "" {
		return &ora.Error{Code: ora.EINTERNAL, Message: fmt.Sprintf("bedrock: converse %s", model), Err: err}
	}
	return &ora.Error{Code: ora.EINTERNAL, Message: fmt.Sprintf("bedrock: converse %s: %s", model, msg), Err: err}
}
