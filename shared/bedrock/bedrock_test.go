package bedrock_test

import (
	"context"
	"encoding/json"
	"os"
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

// system and packet are long enough (~1,100 estimated tokens each) for a
// cache point after each on Claude Sonnet 4.5 (minimum 1,024 tokens).
var (
	system = "You are ora's reasoner." + strings.Repeat(" Rules follow.", 320)
	packet = "ORIENTATION PACKET ..." + strings.Repeat(" fact", 900)
)

func request() bedrock.Request {
	return bedrock.Request{
		Models:    []string{primary, fallback},
		System:    []string{system},
		Prefix:    packet,
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
	if len(r.System) != 2 || r.System[0].Text == nil || *r.System[0].Text != system || r.System[1].CachePoint == nil || r.System[1].CachePoint.Type != "default" {
		t.Errorf("system = %+v, want the prompt then a default cache point", r.System)
	}
	content := r.Messages[0].Content
	if r.Messages[0].Role != "user" || len(content) != 3 || content[1].CachePoint == nil || content[2].Text == nil || *content[2].Text != "Stage 1: explore." {
		t.Errorf("message = %+v, want prefix, cache point, prompt", r.Messages[0])
	}
	ic := r.InferenceConfig
	// Sonnet 4.5 takes temperature or top_p: temperature wins.
	if ic == nil || ic.MaxTokens == nil || *ic.MaxTokens != 1024 || ic.Temperature == nil || *ic.Temperature < 0.19 || *ic.Temperature > 0.21 || ic.TopP != nil {
		t.Errorf("inferenceConfig = %+v, want maxTokens 1024, temperature 0.2 and no topP", ic)
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
		// wantFailures is the failures listed on success (default: 1 after a fallback, else 0)
		wantFailures int
	}{
		{name: "throttling then success", replies: []bedrocktest.Reply{bedrocktest.Throttle(), bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5})}, attempts: 3, models: []string{primary}, wantReqs: 2, wantOK: true, wantFrom: primary},
		{name: "throttling exhausts retries", replies: []bedrocktest.Reply{bedrocktest.Throttle(), bedrocktest.Throttle(), bedrocktest.Throttle()}, attempts: 3, models: []string{primary}, wantCode: ora.ETRANSIENT, wantReqs: 3},
		{name: "throttling via __type only", replies: []bedrocktest.Reply{{Status: 429, ErrorType: "ThrottlingException", Message: "slow down", BodyTypeOnly: true}}, attempts: 1, models: []string{primary}, wantCode: ora.ETRANSIENT, wantReqs: 1},
		{name: "500 internal", replies: []bedrocktest.Reply{bedrocktest.InternalError(), bedrocktest.InternalError()}, attempts: 2, models: []string{primary}, wantCode: ora.ETRANSIENT, wantReqs: 2},
		{name: "503 unavailable", replies: []bedrocktest.Reply{bedrocktest.Unavailable()}, attempts: 1, models: []string{primary}, wantCode: ora.ETRANSIENT, wantReqs: 1},
		{name: "validation is invalid input, no retry, no fallback", replies: []bedrocktest.Reply{bedrocktest.Invalid("maxTokens too large")}, attempts: 3, models: []string{primary, fallback}, wantCode: ora.EINVALID, wantReqs: 1},
		{name: "model-specific validation tries the fallback", replies: []bedrocktest.Reply{bedrocktest.Invalid("This model doesn't support tool use."), bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5})}, attempts: 3, models: []string{primary, fallback}, wantReqs: 2, wantOK: true, wantFrom: fallback},
		{name: "model-specific validation tries the fallback once", replies: []bedrocktest.Reply{bedrocktest.Invalid("The provided model identifier is invalid."), bedrocktest.Invalid("The provided model identifier is invalid.")}, attempts: 3, models: []string{primary, fallback, "third"}, wantCode: ora.EINVALID, wantReqs: 2},
		{name: "424 model error retried on the same model", replies: []bedrocktest.Reply{bedrocktest.ModelError(), bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5})}, attempts: 1, models: []string{primary, fallback}, wantReqs: 2, wantOK: true, wantFrom: primary, wantFailures: 1},
		{name: "424 twice goes to the fallback", replies: []bedrocktest.Reply{bedrocktest.ModelError(), bedrocktest.ModelError(), bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5})}, attempts: 1, models: []string{primary, fallback}, wantReqs: 3, wantOK: true, wantFrom: fallback, wantFailures: 2},
		{name: "424 everywhere is transient", replies: []bedrocktest.Reply{bedrocktest.ModelError(), bedrocktest.ModelError()}, attempts: 1, models: []string{primary}, wantCode: ora.ETRANSIENT, wantReqs: 2},
		{name: "model not ready retried on the same model", replies: []bedrocktest.Reply{bedrocktest.ModelNotReady(), bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5})}, attempts: 1, models: []string{primary, fallback}, wantReqs: 2, wantOK: true, wantFrom: primary, wantFailures: 1},
		{name: "model not ready twice goes to the fallback", replies: []bedrocktest.Reply{bedrocktest.ModelNotReady(), bedrocktest.ModelNotReady(), bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5})}, attempts: 1, models: []string{primary, fallback}, wantReqs: 3, wantOK: true, wantFrom: fallback, wantFailures: 2},
		{name: "model timeout falls back", replies: []bedrocktest.Reply{{Status: 408, ErrorType: "ModelTimeoutException", Message: "timed out"}, bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5})}, attempts: 1, models: []string{primary, fallback}, wantReqs: 2, wantOK: true, wantFrom: fallback, wantFailures: 1},
		{name: "quota exceeded falls back", replies: []bedrocktest.Reply{{Status: 400, ErrorType: "ServiceQuotaExceededException", Message: "quota"}, bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5})}, attempts: 1, models: []string{primary, fallback}, wantReqs: 2, wantOK: true, wantFrom: fallback, wantFailures: 1},
		{name: "unlisted error is internal", replies: []bedrocktest.Reply{{Status: 400, ErrorType: "SomethingNewException", Message: "?"}}, attempts: 1, models: []string{primary, fallback}, wantCode: ora.EINTERNAL, wantReqs: 1},
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
				want := tc.wantFailures
				if want == 0 && resp.Fallback {
					want = 1
				}
				if len(resp.Failures) != want {
					t.Errorf("failures = %v, want %d", resp.Failures, want)
				}
				for _, f := range resp.Failures {
					if !strings.Contains(f, "Exception") {
						t.Errorf("failure %q does not name the Bedrock error", f)
					}
				}
				return
			}
			if got := ora.ErrorCode(err); got != tc.wantCode {
				t.Fatalf("error %v has code %q, want %q", err, got, tc.wantCode)
			}
			if !strings.Contains(err.Error(), "Exception") {
				t.Errorf("error %q does not name the Bedrock error", err)
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

// TestErrorPolicyCoversEveryCode: every code of the policy table is tested
// above (a new row needs a test row).
func TestErrorPolicyCoversEveryCode(t *testing.T) {
	tested := map[string]bool{"ThrottlingException": true, "ServiceUnavailableException": true, "InternalServerException": true,
		"ModelTimeoutException": true, "ServiceQuotaExceededException": true, "ModelNotReadyException": true, "ModelErrorException": true,
		"AccessDeniedException": true, "ResourceNotFoundException": true, "ValidationException": true}
	for _, c := range bedrock.PolicyCodes() {
		if !tested[c] {
			t.Errorf("ErrorPolicy has %s, which TestConverseErrors does not test", c)
		}
	}
}

func TestCacheMinimumPerModel(t *testing.T) {
	tests := []struct {
		name     string
		model    string
		system   string
		prefix   string
		sys, msg int
	}{
		{"sonnet: both segments reach 1,024", primary, system, packet, 1, 1},
		{"sonnet: short system, one point after the prefix", primary, "short", packet, 0, 1},
		{"sonnet: both short", primary, "short", "short", 0, 0},
		{"haiku: 2,200 tokens are below 4,096", fallback, system, packet, 0, 0},
		{"haiku: long prefix", fallback, system, packet + strings.Repeat(" fact", 3000), 0, 1},
		{"unknown model: no cache points", "example.unknown-model-v1:0", system, packet, 0, 0},
		{"global profile of sonnet", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", system, packet, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := bedrocktest.New(t, bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5}))
			req := request()
			req.Models, req.System, req.Prefix = []string{tc.model}, []string{tc.system}, tc.prefix
			resp, err := bedrock.New(srv.Client(1)).Converse(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			s, m := srv.Requests()[0].CachePoints()
			if s != tc.sys || m != tc.msg || resp.CachePoints != s+m {
				t.Errorf("cache points %d/%d (response says %d), want %d/%d", s, m, resp.CachePoints, tc.sys, tc.msg)
			}
		})
	}
}

func TestStrictToolsAndGuardrailConfig(t *testing.T) {
	for _, tc := range []struct {
		model  string
		strict bool
	}{{primary, true}, {"example.unknown-model-v1:0", false}} {
		t.Run(tc.model, func(t *testing.T) {
			srv := bedrocktest.New(t, bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5}))
			req := request()
			req.Models = []string{tc.model}
			req.Tools[0].Strict = true
			req.Tools[0].Schema = json.RawMessage(`{"type":"object","properties":{"confidence":{"type":"number","minimum":0,"maximum":1}},"required":["confidence"]}`)
			req.Guardrail = bedrock.Guardrail{ID: "gr-123", Version: "2"}
			if _, err := bedrock.New(srv.Client(1)).Converse(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			r := srv.Requests()[0]
			g := r.GuardrailConfig
			if g == nil || g.GuardrailIdentifier != "gr-123" || g.GuardrailVersion != "2" {
				t.Errorf("guardrailConfig = %+v", g)
			}
			var raw struct {
				ToolConfig struct {
					Tools []struct {
						ToolSpec struct {
							Strict      *bool `json:"strict"`
							InputSchema struct {
								JSON map[string]any `json:"json"`
							} `json:"inputSchema"`
						} `json:"toolSpec"`
					} `json:"tools"`
				} `json:"toolConfig"`
			}
			if err := json.Unmarshal(r.Body, &raw); err != nil {
				t.Fatal(err)
			}
			spec := raw.ToolConfig.Tools[0].ToolSpec
			gotStrict := spec.Strict != nil && *spec.Strict
			if gotStrict != tc.strict {
				t.Errorf("strict = %v, want %v", gotStrict, tc.strict)
			}
			js, _ := json.Marshal(spec.InputSchema.JSON)
			if tc.strict && (strings.Contains(string(js), "minimum") || !strings.Contains(string(js), `"additionalProperties":false`)) {
				t.Errorf("strict schema %s keeps bounds or lacks additionalProperties:false", js)
			}
		})
	}
	t.Run("guardrail without version", func(t *testing.T) {
		srv := bedrocktest.New(t)
		req := request()
		req.Guardrail = bedrock.Guardrail{ID: "gr-123"}
		if _, err := bedrock.New(srv.Client(1)).Converse(context.Background(), req); ora.ErrorCode(err) != ora.EINVALID {
			t.Errorf("err = %v, want EINVALID", err)
		}
	})
}

func TestToolResultTurns(t *testing.T) {
	srv := bedrocktest.New(t, bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5}))
	req := request()
	req.Turns = []bedrock.Turn{{
		ToolUses: []bedrock.ToolUse{{ID: "tu-1", Name: "oa_ledger_entries", Input: json.RawMessage(`{"signal_id":"s"}`)}},
		Results:  []bedrock.ToolResult{{ToolUseID: "tu-1", JSON: json.RawMessage(`{"entries":[]}`)}},
	}}
	if _, err := bedrock.New(srv.Client(1)).Converse(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if len(r.Messages) != 3 || r.Messages[1].Role != "assistant" || r.Messages[1].Content[0].ToolUse == nil {
		t.Fatalf("messages = %+v", r.Messages)
	}
	res := r.ToolResults()
	if len(res) != 1 || res[0].ToolUseID != "tu-1" || string(res[0].Content[0].JSON) != `{"entries":[]}` {
		t.Errorf("tool results = %+v", res)
	}
	// A result answering no tool call is refused by Bedrock (and the fake).
	req.Turns[0].Results[0].ToolUseID = "tu-other"
	srv2 := bedrocktest.New(t)
	if _, err := bedrock.New(srv2.Client(1)).Converse(context.Background(), req); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("err = %v, want EINVALID", err)
	}
}

func TestGuard(t *testing.T) {
	srv := bedrocktest.New(t)
	srv.OnGuardrail(func(r bedrocktest.GuardrailRequest) bedrocktest.GuardrailReply {
		for _, x := range r.Texts() {
			if strings.Contains(x, "rm -rf") {
				return bedrocktest.GuardrailReply{Intervened: true, Topic: "destructive-commands"}
			}
		}
		return bedrocktest.GuardrailReply{}
	})
	g, err := bedrock.NewGuard(srv.Client(1), bedrock.Guardrail{ID: "gr-1", Version: "3"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := g.Check(context.Background(), "OUTPUT", `{"command":"rm -rf /"}`, "signal text")
	if err != nil || !v.Intervened || len(v.Policies) != 1 || v.Policies[0] != "topic:destructive-commands" {
		t.Errorf("verdict %+v, err %v: want an intervention naming the topic", v, err)
	}
	v, err = g.Check(context.Background(), "INPUT", "a harmless comment")
	if err != nil || v.Intervened {
		t.Errorf("verdict %+v, err %v: want none", v, err)
	}
	reqs := srv.GuardrailRequests()
	if len(reqs) != 2 || reqs[0].GuardrailID != "gr-1" || reqs[0].Version != "3" || reqs[0].Source != "OUTPUT" || len(reqs[0].Texts()) != 2 {
		t.Errorf("guardrail requests = %+v", reqs)
	}
	if _, err := g.Check(context.Background(), "SIDEWAYS", "x"); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("bad source: err = %v", err)
	}
	if _, err := bedrock.NewGuard(srv.Client(1), bedrock.Guardrail{}); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("no guardrail: err = %v", err)
	}
	missing, _ := bedrock.NewGuard(srv.Client(1), bedrock.Guardrail{ID: "gr-1", Version: "3"})
	srv.OnGuardrail(func(bedrocktest.GuardrailRequest) bedrocktest.GuardrailReply {
		return bedrocktest.GuardrailReply{Status: 404, ErrorType: "ResourceNotFoundException", Message: "no such guardrail"}
	})
	if _, err := missing.Check(context.Background(), "INPUT", "x"); ora.ErrorCode(err) != ora.ENOTFOUND || !strings.Contains(err.Error(), "ResourceNotFoundException") {
		t.Errorf("missing guardrail: err = %v", err)
	}
}

func TestSamplingParameters(t *testing.T) {
	tests := []struct {
		name      string
		model     string
		temp, top *float64
		wantTemp  bool
		wantTop   bool
	}{
		{"sonnet 4.5: both set, temperature alone sent", primary, ptr(0.2), ptr(0.9), true, false},
		{"sonnet 4.5: top_p alone is sent", primary, nil, ptr(0.9), false, true},
		{"claude 3.7 takes both", "us.anthropic.claude-3-7-sonnet-20250219-v1:0", ptr(0.2), ptr(0.9), true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := bedrocktest.New(t, bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5}))
			req := request()
			req.Models, req.Inference.Temperature, req.Inference.TopP = []string{tc.model}, tc.temp, tc.top
			if _, err := bedrock.New(srv.Client(1)).Converse(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			ic := srv.Requests()[0].InferenceConfig
			if (ic.Temperature != nil) != tc.wantTemp || (ic.TopP != nil) != tc.wantTop {
				t.Errorf("temperature sent %v, topP sent %v; want %v, %v", ic.Temperature != nil, ic.TopP != nil, tc.wantTemp, tc.wantTop)
			}
		})
	}
}

func TestStrictSchemaKeepsKeyOrderOnTheWire(t *testing.T) {
	srv := bedrocktest.New(t, bedrocktest.Tool("record_observation", map[string]any{"reasoning": "r", "safety": "s", "action": "a", "confidence": 0.5}))
	req := request()
	req.Tools[0].Strict = true
	req.Tools[0].Schema = json.RawMessage(`{"type":"object","required":["reasoning","safety","action","confidence"],"properties":{
"reasoning":{"type":"string","minLength":1},"safety":{"type":"string","maxLength":400},"action":{"type":"string"},"confidence":{"type":"number","minimum":0,"maximum":1}}}`)
	if _, err := bedrock.New(srv.Client(1)).Converse(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	sent := string(srv.Requests()[0].Tool("record_observation").InputSchema.JSON)
	last := -1
	for _, k := range []string{`"reasoning"`, `"safety"`, `"action"`, `"confidence"`} {
		i := strings.Index(sent[strings.Index(sent, `"properties"`):], k)
		if i <= last {
			t.Errorf("key %s at %d, not after %d: the schema's key order is lost: %s", k, i, last, sent)
		}
		last = i
	}
	for _, k := range []string{"minLength", "maxLength", "minimum", "maximum"} {
		if strings.Contains(sent, k) {
			t.Errorf("strict schema keeps %s: %s", k, sent)
		}
	}
}

func TestCheckStrict(t *testing.T) {
	obj := func(props string) string {
		return `{"type":"object","additionalProperties":false,"properties":{` + props + `},"required":[]}`
	}
	tests := []struct {
		name   string
		schema string
		ok     bool
	}{
		{"plain object", obj(`"a":{"type":"string","description":"d"}`), true},
		{"enum and const", obj(`"a":{"type":"string","enum":["x","y"]},"b":{"const":"z"}`), true},
		{"anyOf of objects", obj(`"a":{"anyOf":[` + obj(`"t":{"const":"x"}`) + `,` + obj(`"t":{"const":"y"}`) + `]}`), true},
		{"nullable type list", obj(`"a":{"type":["string","null"]}`), true},
		{"local $ref", `{"type":"object","additionalProperties":false,"$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}}}`, true},
		{"date-time format", obj(`"a":{"type":"string","format":"date-time"}`), true},
		{"minItems 1", obj(`"a":{"type":"array","items":{"type":"string"},"minItems":1}`), true},
		{"minLength", obj(`"a":{"type":"string","minLength":1}`), false},
		{"maxLength", obj(`"a":{"type":"string","maxLength":9}`), false},
		{"minimum", obj(`"a":{"type":"number","minimum":0}`), false},
		{"minItems 2", obj(`"a":{"type":"array","items":{"type":"string"},"minItems":2}`), false},
		{"maxItems", obj(`"a":{"type":"array","items":{"type":"string"},"maxItems":3}`), false},
		{"oneOf", obj(`"a":{"oneOf":[{"type":"string"},{"type":"number"}]}`), false},
		{"object without additionalProperties false", `{"type":"object","properties":{"a":{"type":"object","properties":{}}}}`, false},
		{"additionalProperties true", `{"type":"object","additionalProperties":true,"properties":{}}`, false},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"string"},"properties":{}}`, false},
		{"complex enum value", obj(`"a":{"enum":[{"x":1}]}`), false},
		{"unsupported format", obj(`"a":{"type":"string","format":"regex"}`), false},
		{"lookahead pattern", obj(`"a":{"type":"string","pattern":"^(?=a)"}`), false},
		{"recursive $ref", `{"type":"object","additionalProperties":false,"$defs":{"n":{"type":"object","additionalProperties":false,"properties":{"c":{"$ref":"#/$defs/n"}}}},"properties":{"a":{"$ref":"#/$defs/n"}}}`, false},
		{"external $ref", obj(`"a":{"$ref":"https://example.com/s.json"}`), false},
		{"required names an undeclared property", `{"type":"object","additionalProperties":false,"properties":{},"required":["x"]}`, false},
		{"top level not an object", `{"type":"array","items":{"type":"string"}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bedrock.CheckStrict(json.RawMessage(tc.schema))
			if (err == nil) != tc.ok {
				t.Errorf("CheckStrict(%s) = %v, want ok=%v", tc.schema, err, tc.ok)
			}
			if err != nil && ora.ErrorCode(err) != ora.EINVALID {
				t.Errorf("error kind %s, want EINVALID", ora.ErrorCode(err))
			}
		})
	}
	t.Run("StrictSchema output passes", func(t *testing.T) {
		in := `{"type":"object","properties":{"a":{"type":"string","minLength":1},"n":{"type":"integer","minimum":1,"maximum":3},"l":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string"}}},"minItems":2,"maxItems":5}},"required":["a","n","l"]}`
		out, err := bedrock.StrictSchema(json.RawMessage(in))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bedrock.CheckStrict(out); err != nil {
			t.Errorf("CheckStrict(StrictSchema(...)) = %v for %s", err, out)
		}
	})
}

// TestModelInfo: strict tool use only on the models AWS lists for structured
// outputs; one of temperature and top_p on the Claude 4.5 generation.
func TestModelInfo(t *testing.T) {
	tests := []struct {
		model       string
		strict, one bool
		window      int
	}{
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", true, true, 200000},
		{"global.anthropic.claude-haiku-4-5-20251001-v1:0", true, true, 200000},
		{"anthropic.claude-opus-4-5-20251101-v1:0", true, true, 200000},
		{"us.anthropic.claude-opus-4-6-v1", true, true, 200000},
		{"us.anthropic.claude-opus-4-1-20250805-v1:0", false, true, 200000},
		{"us.anthropic.claude-3-7-sonnet-20250219-v1:0", false, false, 200000},
		{"us.amazon.nova-premier-v1:0", false, false, 1000000},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			info, ok := bedrock.Info(tc.model)
			if !ok || info.StrictTools != tc.strict || info.OneSampling != tc.one || info.ContextTokens != tc.window {
				t.Errorf("Info = %+v (known %v), want strict %v, one sampling parameter %v, window %d", info, ok, tc.strict, tc.one, tc.window)
			}
		})
	}
}

// TestMessagePolicy: each row of MessagePolicy, sent by the fake Bedrock
// with the message Bedrock documents, makes Converse try the next model
// (NextModel: two calls, the fallback answers) or stop at once (NoModel:
// one call, the primary's error).
func TestMessagePolicy(t *testing.T) {
	status := map[string]int{"ValidationException": 400, "AccessDeniedException": 403, "ResourceNotFoundException": 404, "ThrottlingException": 429}
	answer := bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5})
	for _, row := range bedrock.MessagePolicy {
		t.Run(row.Code+": "+row.Contains, func(t *testing.T) {
			if !strings.Contains(strings.ToLower(row.Example), row.Contains) {
				t.Fatalf("example %q does not contain %q", row.Example, row.Contains)
			}
			if status[row.Code] == 0 {
				t.Fatalf("no HTTP status for %s in this test", row.Code)
			}
			srv := bedrocktest.New(t, bedrocktest.Reply{Status: status[row.Code], ErrorType: row.Code, Message: row.Example}, answer)
			resp, err := bedrock.New(srv.Client(1)).Converse(context.Background(), request())
			calls := len(srv.Requests())
			switch row.Meaning {
			case bedrock.NextModel:
				if err != nil || resp.Model != fallback || calls != 2 {
					t.Fatalf("answered by %q after %d calls (err %v), want the fallback after 2", resp.Model, calls, err)
				}
			case bedrock.NoModel:
				if err == nil || calls != 1 {
					t.Fatalf("err %v after %d calls, want the primary's error after 1", err, calls)
				}
				if !strings.Contains(err.Error(), row.Example) {
					t.Errorf("error %q does not carry Bedrock's message", err)
				}
			default:
				t.Fatalf("meaning %q is neither NextModel nor NoModel", row.Meaning)
			}
		})
	}
}

// TestMessagePolicyDefaults: a message MessagePolicy does not list takes its
// code's default: a ValidationException is about the request (even when it
// says "model"), the codes ErrorPolicy falls back on are about the model.
func TestMessagePolicyDefaults(t *testing.T) {
	answer := bedrocktest.Tool("record_observation", map[string]any{"confidence": 0.5})
	tests := []struct {
		name      string
		reply     bedrocktest.Reply
		wantCalls int
	}{
		{"unlisted validation naming the model is the request", bedrocktest.Invalid("The maximum tokens you requested exceeds the model limit of 32768"), 1},
		{"unlisted access denied is the model", bedrocktest.Reply{Status: 403, ErrorType: "AccessDeniedException", Message: "User: arn:aws:sts::123456789012:assumed-role/ora-reason/fn is not authorized to perform: bedrock:InvokeModel on resource: arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0"}, 2},
		{"unlisted not found is the model", bedrocktest.Reply{Status: 404, ErrorType: "ResourceNotFoundException", Message: "Model not found"}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := bedrocktest.New(t, tc.reply, answer)
			_, _ = bedrock.New(srv.Client(1)).Converse(context.Background(), request())
			if got := len(srv.Requests()); got != tc.wantCalls {
				t.Errorf("calls = %d, want %d", got, tc.wantCalls)
			}
		})
	}
}

// TestMessagePolicyInTheDocs: docs/bedrock.md prints MessagePolicy, row for row.
func TestMessagePolicyInTheDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/bedrock.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range bedrock.MessagePolicy {
		row := "| " + r.Code + " | " + r.Example + " | " + string(r.Meaning) + " |"
		if !strings.Contains(string(b), row) {
			t.Errorf("docs/bedrock.md lacks the row\n%s", row)
		}
	}
}
