// Package bedrock adapts Amazon Bedrock's Converse API (bedrockruntime) to
// ora: one Converse call per request with a model id and a fallback list,
// inference settings, system prompts, tools forced through toolChoice for
// structured JSON output, prompt-caching cache points after the stable prefix,
// and the usage of every call. SDK errors are translated to ora's error kinds
// at this boundary: throttling and 5xx are ETRANSIENT (after the SDK's own
// bounded retries), validation errors EINVALID.
package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
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
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage
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
	Inference Inference
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
	// Failures lists the models tried before Model, with why they failed.
	Failures []string
}

// Converser makes Converse calls.
type Converser struct {
	api API
}

// New returns a Converser over api (a *bedrockruntime.Client, usually from NewClient).
func New(api API) *Converser { return &Converser{api: api} }

// Converse runs req on its first model, falling back to the next one when a
// model is unavailable (ETRANSIENT after the SDK's retries, ENOTFOUND,
// EFORBIDDEN). Errors: EINVALID (a bad request, including a ValidationException;
// no fallback), ETRANSIENT (throttled or 5xx on every model), ENOTFOUND,
// EFORBIDDEN, EINTERNAL.
func (c *Converser) Converse(ctx context.Context, req Request) (Response, error) {
	if len(req.Models) == 0 {
		return Response{}, ora.Invalid("bedrock.models", "at least one model id is required")
	}
	if req.Prompt == "" && req.Prefix == "" {
		return Response{}, ora.Invalid("bedrock.prompt", "required")
	}
	in, err := buildInput(req)
	if err != nil {
		return Response{}, err
	}
	var failures []string
	var last error
	for i, model := range req.Models {
		in.ModelId = aws.String(model)
		out, err := c.api.Converse(ctx, in)
		if err != nil {
			last = translate(model, err)
			switch ora.ErrorCode(last) {
			case ora.ETRANSIENT, ora.ENOTFOUND, ora.EFORBIDDEN:
				if ctx.Err() != nil {
					return Response{}, last
				}
				failures = append(failures, fmt.Sprintf("%s: %v", model, last))
				continue
			}
			return Response{}, last
		}
		resp, err := parseOutput(out)
		if err != nil {
			return Response{}, fmt.Errorf("bedrock: converse %s: %w", model, err)
		}
		resp.Model, resp.Fallback, resp.Failures = model, i > 0, failures
		return resp, nil
	}
	return Response{}, last
}

func buildInput(req Request) (*bedrockruntime.ConverseInput, error) {
	in := &bedrockruntime.ConverseInput{}
	for _, s := range req.System {
		in.System = append(in.System, &types.SystemContentBlockMemberText{Value: s})
	}
	if len(in.System) > 0 && !req.NoCache {
		in.System = append(in.System, &types.SystemContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}})
	}
	var content []types.ContentBlock
	if req.Prefix != "" {
		content = append(content, &types.ContentBlockMemberText{Value: req.Prefix})
		if !req.NoCache {
			content = append(content, &types.ContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}})
		}
	}
	if req.Prompt != "" {
		content = append(content, &types.ContentBlockMemberText{Value: req.Prompt})
	}
	in.Messages = []types.Message{{Role: types.ConversationRoleUser, Content: content}}
	inf := &types.InferenceConfiguration{}
	set := false
	if req.Inference.MaxTokens > 0 {
		inf.MaxTokens, set = aws.Int32(int32(req.Inference.MaxTokens)), true
	}
	if t := req.Inference.Temperature; t != nil {
		inf.Temperature, set = aws.Float32(float32(*t)), true
	}
	if p := req.Inference.TopP; p != nil {
		inf.TopP, set = aws.Float32(float32(*p)), true
	}
	if set {
		in.InferenceConfig = inf
	}
	if len(req.Tools) > 0 {
		tc := &types.ToolConfiguration{}
		forced := false
		for _, t := range req.Tools {
			var schema any
			if err := json.Unmarshal(t.Schema, &schema); err != nil {
				return nil, ora.Invalid("bedrock.tools."+t.Name+".schema", "not JSON: %v", err)
			}
			tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: types.ToolSpecification{
				Name:        aws.String(t.Name),
				Description: aws.String(t.Description),
				InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)},
			}})
			forced = forced || t.Name == req.ForceTool
		}
		if req.ForceTool != "" {
			if !forced {
				return nil, ora.Invalid("bedrock.force_tool", "%q is not among the tools", req.ForceTool)
			}
			tc.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(req.ForceTool)}}
		}
		in.ToolConfig = tc
	} else if req.ForceTool != "" {
		return nil, ora.Invalid("bedrock.force_tool", "%q is not among the tools", req.ForceTool)
	}
	return in, nil
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

// transient error codes: throttling, capacity and server-side failures.
var transientCodes = map[string]bool{
	"ThrottlingException":           true,
	"ServiceUnavailableException":   true,
	"InternalServerException":       true,
	"ModelNotReadyException":        true,
	"ModelTimeoutException":         true,
	"ServiceQuotaExceededException": true,
}

// translate maps an SDK error to an ora error kind, naming the model.
func translate(model string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return ora.Transient(err, "bedrock: converse %s", model)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		code := api.ErrorCode()
		switch {
		case transientCodes[code]:
			return ora.Transient(err, "bedrock: converse %s: %s", model, code)
		case code == "ValidationException":
			return &ora.Error{Code: ora.EINVALID, Field: "bedrock.request", Message: fmt.Sprintf("converse %s: %s", model, api.ErrorMessage()), Err: err}
		case code == "AccessDeniedException":
			return &ora.Error{Code: ora.EFORBIDDEN, Message: fmt.Sprintf("bedrock: converse %s: %s", model, api.ErrorMessage()), Err: err}
		case code == "ResourceNotFoundException":
			return &ora.Error{Code: ora.ENOTFOUND, Message: fmt.Sprintf("bedrock: converse %s: %s", model, api.ErrorMessage()), Err: err}
		}
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= http.StatusInternalServerError {
		return ora.Transient(err, "bedrock: converse %s: HTTP %d", model, re.HTTPStatusCode())
	}
	return &ora.Error{Code: ora.EINTERNAL, Message: fmt.Sprintf("bedrock: converse %s", model), Err: err}
}
