package bedrock_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
)

const (
	primary  = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	fallback = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
)

func ptr(f float64) *float64 { return &f }

func request() bedrock.Request {
	return bedrock.Request{
		Models:    []string{primary, fallback},
		System:    []string{"You are ora's reasoner."},
		Prefix:    "ORIENTATION PACKET ...",
		Prompt:    "Stage 1: explore.",
		Tools:     []bedrock.Tool{{Name: "record_observation", Description: "record", Schema: json.RawMessage(`{"type":"object","properties":{"confidence":{"type":"number"}},"required":["confidence"]}`)}},
		ForceTool: "record_observation",
		Inference: bedrock.Inference{MaxTokens: 1024, Temperature: ptr(0.2), TopP: ptr(0.9)},
	}
}

func TestConverseSendsWireFormat(t *testing.T) {
	srv := bedrocktest.New(t, bedrocktest.Reply{
		Text:     "thinking",
		ToolUses: []bedrocktest.ToolUse{{ToolUseID: "t1", Name: "record_observation", Input: json.RawMessage(`{"confidence":0.7}`)}},
		Usage:    &bedrocktest.Usage{InputTokens: 10, OutputTokens: 20, CacheReadInputTokens: 30, CacheWriteInputTokens: 40},
	})
	c := bedrock.New(srv.Client(3))
	resp, err := c.Converse(context.Background(), request())
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %d, want 1", len(reqs))
	}
	r := reqs[0]
	if r.ModelID != primary {
		t.Errorf("model in path = %q, want %q", r.ModelID, primary)
	}
	if got := r.ForcedTool(); got != "record_observation" {
		t.Errorf("toolChoice.tool.name = %q, want record_observation", got)
	}
	if spec := r.Tool("record_observation"); spec == nil || !strings.Contains(string(spec.InputSchema.JSON), `"confidence"`) {
		t.Errorf("tool spec = %+v, want the schema sent as inputSchema.json", spec)
	}
	sys, msg := r.CachePoints()
	if sys != 1 || msg != 1 {
		t.Errorf("cache points system=%d messages=%d, want 1 and 1", sys, msg)
	}
	if len(r.System) != 2 || r.System[0].Text == nil || *r.System[0].Text != "You are ora's reasoner." || r.System[1].CachePoint == nil || r.System[1].CachePoint.Type != "default" {
		t.Errorf("system = %+v, want the prompt then a default cache point", r.System)
	}
	content := r.Messages[0].Content
	if r.Messages[0].Role != "user" || len(content) != 3 || content[1].CachePoint == nil || content[2].Text == nil || *content[2].Text != "Stage 1: explore." {
		t.Errorf("message = %+v, want prefix, cache point, prompt", r.Messages[0])
	}
	ic := r.InferenceConfig
	if ic == nil || ic.MaxTokens == nil || *ic.MaxTokens != 1024 || ic.Temperature == nil || *ic.Temperature < 0.19 || *ic.Temperature > 0.21 || ic.TopP == nil || *ic.TopP < 0.89 || *ic.TopP > 0.91 {
		t.Errorf("inferenceConfig = %+v, want maxTokens 1024, temperature 0.2, topP 0.9", ic)
	}
	if resp.Model != primary || resp.Fallback {
		t.Errorf("model = %q fallback=%v, want primary", resp.Model, resp.Fallback)
	}
	if resp.Text != "thinking" || len(resp.ToolUses) != 1 || resp.ToolUses[0].Name != "record_observation" || string(resp.ToolUses[0].Input) != `{"confidence":0.7}` {
		t.Errorf("response = %+v", resp)
	}
	if resp.StopReason != "tool_use" {
		t.Errorf("stop reason = %q, want tool_use", resp.StopReason)
	}
	want := ora.Usage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40}
	if resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestConverseNoCache(t *testing.T) {
	srv := bedrocktest.New(t, bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5}))
	req := request()
	req.NoCache = true
	if _, err := bedrock.New(srv.Client(1)).Converse(context.Background(), req); err != nil {
		t.Fatalf("Converse: %v", err)
	}
	if s, m := srv.Requests()[0].CachePoints(); s != 0 || m != 0 {
		t.Errorf("cache points = %d/%d, want none", s, m)
	}
}

func TestSimulatedCaching(t *testing.T) {
	srv := bedrocktest.New(t,
		bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5}),
		bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.6}))
	c := bedrock.New(srv.Client(1))
	first, err := c.Converse(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	req := request()
	req.Prompt = "Stage 2: refine, with a longer summary of stage 1."
	second, err := c.Converse(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Usage.CacheWriteTokens == 0 || first.Usage.CacheReadTokens != 0 {
		t.Errorf("first usage = %+v, want cache writes only", first.Usage)
	}
	if second.Usage.CacheReadTokens != first.Usage.CacheWriteTokens || second.Usage.CacheWriteTokens != 0 {
		t.Errorf("second usage = %+v, want the first call's %d written tokens read back", second.Usage, first.Usage.CacheWriteTokens)
	}
}

func TestConverseErrors(t *testing.T) {
	tests := []struct {
		name     string
		replies  []bedrocktest.Reply
		attempts int
		models   []string
		wantCode string
		wantReqs int
		wantOK   bool
		wantFrom string
	}{
		{name: "throttling then success", replies: []bedrocktest.Reply{bedrocktest.Throttle(), bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5})}, attempts: 3, models: []string{primary}, wantReqs: 2, wantOK: true, wantFrom: primary},
		{name: "throttling exhausts retries", replies: []bedrocktest.Reply{bedrocktest.Throttle(), bedrocktest.Throttle(), bedrocktest.Throttle()}, attempts: 3, models: []string{primary}, wantCode: ora.ETRANSIENT, wantReqs: 3},
		{name: "throttling via __type only", replies: []bedrocktest.Reply{{Status: 429, ErrorType: "ThrottlingException", Message: "slow down", BodyTypeOnly: true}}, attempts: 1, models: []string{primary}, wantCode: ora.ETRANSIENT, wantReqs: 1},
		{name: "500 internal", replies: []bedrocktest.Reply{bedrocktest.InternalError(), bedrocktest.InternalError()}, attempts: 2, models: []string{primary}, wantCode: ora.ETRANSIENT, wantReqs: 2},
		{name: "503 unavailable", replies: []bedrocktest.Reply{bedrocktest.Unavailable()}, attempts: 1, models: []string{primary}, wantCode: ora.ETRANSIENT, wantReqs: 1},
		{name: "validation is invalid input, no retry, no fallback", replies: []bedrocktest.Reply{bedrocktest.Invalid("maxTokens too large")}, attempts: 3, models: []string{primary, fallback}, wantCode: ora.EINVALID, wantReqs: 1},
		{name: "primary throttled falls back", replies: []bedrocktest.Reply{bedrocktest.Throttle(), bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5})}, attempts: 1, models: []string{primary, fallback}, wantReqs: 2, wantOK: true, wantFrom: fallback},
		{name: "unknown model falls back", replies: []bedrocktest.Reply{{Status: 404, ErrorType: "ResourceNotFoundException", Message: "model not found"}, bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5})}, attempts: 1, models: []string{primary, fallback}, wantReqs: 2, wantOK: true, wantFrom: fallback},
		{name: "access denied everywhere", replies: []bedrocktest.Reply{{Status: 403, ErrorType: "AccessDeniedException", Message: "no access"}}, attempts: 1, models: []string{primary}, wantCode: ora.EFORBIDDEN, wantReqs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := bedrocktest.New(t, tc.replies...)
			req := request()
			req.Models = tc.models
			resp, err := bedrock.New(srv.Client(tc.attempts)).Converse(context.Background(), req)
			if got := len(srv.Requests()); got != tc.wantReqs {
				t.Errorf("requests = %d, want %d", got, tc.wantReqs)
			}
			if tc.wantOK {
				if err != nil {
					t.Fatalf("Converse: %v", err)
				}
				if resp.Model != tc.wantFrom || resp.Fallback != (tc.wantFrom != tc.models[0]) {
					t.Errorf("answered by %q (fallback %v), want %q", resp.Model, resp.Fallback, tc.wantFrom)
				}
				if resp.Fallback && len(resp.Failures) != 1 {
					t.Errorf("failures = %v, want the primary's", resp.Failures)
				}
				return
			}
			if got := ora.ErrorCode(err); got != tc.wantCode {
				t.Fatalf("error %v has code %q, want %q", err, got, tc.wantCode)
			}
		})
	}
}

func TestConverseRejectsBadRequests(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*bedrock.Request)
		field string
	}{
		{"no model", func(r *bedrock.Request) { r.Models = nil }, "bedrock.models"},
		{"no prompt", func(r *bedrock.Request) { r.Prompt, r.Prefix = "", "" }, "bedrock.prompt"},
		{"forced tool unknown", func(r *bedrock.Request) { r.ForceTool = "other" }, "bedrock.force_tool"},
		{"bad schema", func(r *bedrock.Request) { r.Tools[0].Schema = json.RawMessage(`{`) }, "bedrock.tools.record_observation.schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := bedrocktest.New(t)
			req := request()
			tc.edit(&req)
			_, err := bedrock.New(srv.Client(1)).Converse(context.Background(), req)
			if ora.ErrorCode(err) != ora.EINVALID || ora.ErrorField(err) != tc.field {
				t.Fatalf("err = %v, want EINVALID on %s", err, tc.field)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("requests = %d, want none", n)
			}
		})
	}
}
