package bedrocktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
)

const sonnet = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

func text(s string) types.ContentBlock { return &types.ContentBlockMemberText{Value: s} }

func user(blocks ...types.ContentBlock) types.Message {
	return types.Message{Role: types.ConversationRoleUser, Content: blocks}
}

func tool(name, schema string, strict bool) types.Tool {
	var v any
	if err := json.Unmarshal([]byte(schema), &v); err != nil {
		panic(err)
	}
	return &types.ToolMemberToolSpec{Value: types.ToolSpecification{Name: aws.String(name), Description: aws.String("d"), Strict: aws.Bool(strict),
		InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(v)}}}
}

const okSchema = `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string"}}}`

func base() *bedrockruntime.ConverseInput {
	return &bedrockruntime.ConverseInput{
		ModelId:  aws.String(sonnet),
		Messages: []types.Message{user(text("hello"))},
		ToolConfig: &types.ToolConfiguration{
			Tools:      []types.Tool{tool("record", okSchema, true)},
			ToolChoice: &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String("record")}},
		},
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(1024)},
	}
}

// TestRefusesWhatBedrockRefuses sends requests Bedrock documents as invalid
// through the SDK and expects the 400 ValidationException Bedrock answers.
func TestRefusesWhatBedrockRefuses(t *testing.T) {
	assistantUse := types.Message{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{
		&types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String("tu-1"), Name: aws.String("record"), Input: document.NewLazyDocument(map[string]any{"a": "x"})}}}}
	tests := []struct {
		name string
		edit func(*bedrockruntime.ConverseInput)
		want string
	}{
		{"valid request is accepted", func(*bedrockruntime.ConverseInput) {}, ""},
		{"minLength in a strict schema", func(in *bedrockruntime.ConverseInput) {
			in.ToolConfig.Tools = []types.Tool{tool("record", `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string","minLength":1}}}`, true)}
		}, "minLength"},
		{"strict object without additionalProperties false", func(in *bedrockruntime.ConverseInput) {
			in.ToolConfig.Tools = []types.Tool{tool("record", `{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`, true)}
		}, "additionalProperties"},
		{"strict tools on a model without them", func(in *bedrockruntime.ConverseInput) {
			in.ModelId = aws.String("us.anthropic.claude-opus-4-1-20250805-v1:0")
		}, "strict"},
		{"too many optional parameters", func(in *bedrockruntime.ConverseInput) {
			var props []string
			for i := 0; i < 25; i++ {
				props = append(props, fmt.Sprintf(`"p%d":{"type":"string"}`, i))
			}
			in.ToolConfig.Tools = []types.Tool{tool("record", `{"type":"object","additionalProperties":false,"properties":{`+strings.Join(props, ",")+`}}`, true)}
			in.ToolConfig.ToolChoice = nil
		}, "optional parameters"},
		{"roles do not alternate", func(in *bedrockruntime.ConverseInput) {
			in.Messages = append(in.Messages, user(text("again")))
		}, "alternate"},
		{"conversation ends with the assistant", func(in *bedrockruntime.ConverseInput) {
			in.Messages = append(in.Messages, types.Message{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{text("prefill")}})
		}, "end with a user message"},
		{"toolUse without its toolResult", func(in *bedrockruntime.ConverseInput) {
			in.Messages = append(in.Messages, assistantUse, user(text("no result")))
		}, "Expected toolResult"},
		{"toolResult without its toolUse", func(in *bedrockruntime.ConverseInput) {
			in.Messages = append(in.Messages, types.Message{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{text("hm")}},
				user(&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String("tu-9"), Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: "r"}}}}))
		}, "toolResult"},
		{"temperature and top_p on Sonnet 4.5", func(in *bedrockruntime.ConverseInput) {
			in.InferenceConfig.Temperature, in.InferenceConfig.TopP = aws.Float32(0.2), aws.Float32(0.9)
		}, "temperature and top_p"},
		{"maxTokens over the model's cap", func(in *bedrockruntime.ConverseInput) {
			in.InferenceConfig.MaxTokens = aws.Int32(100000)
		}, "exceeds the model limit"},
		{"forced tool with extended thinking", func(in *bedrockruntime.ConverseInput) {
			in.InferenceConfig.MaxTokens = aws.Int32(4096)
			in.AdditionalModelRequestFields = document.NewLazyDocument(map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 2048}})
		}, "Thinking may not be enabled"},
		{"toolChoice names a tool not offered", func(in *bedrockruntime.ConverseInput) {
			in.ToolConfig.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String("other")}}
		}, "not among the tools"},
		{"five cache points", func(in *bedrockruntime.ConverseInput) {
			var blocks []types.ContentBlock
			for i := 0; i < 5; i++ {
				blocks = append(blocks, text(strings.Repeat("x", 5000)), &types.ContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}})
			}
			in.Messages = []types.Message{user(append(blocks, text("q"))...)}
		}, "maximum of 4"},
		{"input over the context window", func(in *bedrockruntime.ConverseInput) {
			in.Messages = []types.Message{user(text(strings.Repeat("fact ", 170000)))}
		}, "too long"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply {
				return bedrocktest.Tool("record", map[string]any{"a": "x"})
			})
			in := base()
			tc.edit(in)
			_, err := srv.Client(1).Converse(context.Background(), in)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Converse: %v", err)
				}
				return
			}
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != "ValidationException" || !strings.Contains(api.ErrorMessage(), tc.want) {
				t.Errorf("err = %v, want a ValidationException mentioning %q", err, tc.want)
			}
		})
	}
}

// recorder is a testing.TB that keeps the errors the fake reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestRefusesAnswersNoModelCouldGive: a scripted strict answer that breaks
// the request's own schema, or calls a tool that is not offered, fails the
// test instead of reaching the code under test.
func TestRefusesAnswersNoModelCouldGive(t *testing.T) {
	tests := []struct {
		name  string
		reply bedrocktest.Reply
		want  string
	}{
		{"valid answer", bedrocktest.Tool("record", map[string]any{"a": "x"}), ""},
		{"missing required key", bedrocktest.Tool("record", map[string]any{}), "breaks the request's schema"},
		{"extra key", bedrocktest.Tool("record", map[string]any{"a": "x", "b": 1}), "breaks the request's schema"},
		{"wrong type", bedrocktest.Tool("record", map[string]any{"a": 3}), "breaks the request's schema"},
		{"tool not offered", bedrocktest.Tool("other", map[string]any{"a": "x"}), "toolChoice forces record"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			srv := bedrocktest.NewFunc(rec, func(bedrocktest.Request) bedrocktest.Reply { return tc.reply })
			_, err := srv.Client(1).Converse(context.Background(), base())
			got := strings.Join(rec.errs, "; ")
			if tc.want == "" {
				if err != nil || got != "" {
					t.Errorf("err = %v, reported %q; want the answer delivered", err, got)
				}
				return
			}
			if err == nil || !strings.Contains(got, tc.want) {
				t.Errorf("err = %v, reported %q; want a refusal mentioning %q", err, got, tc.want)
			}
		})
	}
}
