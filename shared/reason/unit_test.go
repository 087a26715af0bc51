package reason

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ora-runtime/ora/shared/ora"
)

func layers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "L" + string(rune('A'+i))
	}
	return out
}

func TestInspect(t *testing.T) {
	six, seven := layers(6), layers(7)
	tests := []struct {
		name    string
		cur     Observation
		prev    *Observation
		pattern bool
		want    CrystallizationReason
	}{
		{"high confidence wins over everything", Observation{Confidence: 0.96, Layers: []string{"A"}}, &Observation{Confidence: 0.96, Layers: []string{"A"}}, true, HighConfidence},
		{"0.95 is not high", Observation{Confidence: 0.95, Layers: seven}, nil, false, ""},
		{"consistency before low complexity", Observation{Confidence: 0.80, Layers: []string{"A", "B"}}, &Observation{Confidence: 0.78, Layers: []string{"A", "B"}}, false, Consistency},
		{"delta 0.05 is not consistent", Observation{Confidence: 0.85, Layers: seven}, &Observation{Confidence: 0.80, Layers: seven}, false, ""},
		{"overlap 0.9 is not consistent", Observation{Confidence: 0.80, Layers: layers(10)}, &Observation{Confidence: 0.80, Layers: layers(9)}, false, ""},
		{"overlap above 0.9 is consistent", Observation{Confidence: 0.80, Layers: layers(11)}, &Observation{Confidence: 0.81, Layers: layers(10)}, false, Consistency},
		{"five layers is low complexity", Observation{Confidence: 0.6, Layers: layers(5)}, nil, true, LowComplexity},
		{"six layers is not low complexity", Observation{Confidence: 0.6, Layers: six}, nil, false, ""},
		{"pattern match last", Observation{Confidence: 0.6, Layers: six}, nil, true, PatternMatch},
		{"nothing", Observation{Confidence: 0.6, Layers: six}, &Observation{Confidence: 0.3, Layers: six}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Inspect(tc.cur, tc.prev, tc.pattern)
			if got.Reason != tc.want || got.Crystallized != (tc.want != "") {
				t.Errorf("Inspect = %+v, want reason %q", got, tc.want)
			}
		})
	}
}

func TestParseText(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		want     Observation
		decision string
		wantErr  string
	}{
		{name: "seed example", text: "CONFIDENCE: 0.9\nLAYERS: C02\nCONTENT:\nThis is a simple arithmetic question. 2+2 = 4.\n", want: Observation{Confidence: 0.9, Layers: []string{"C02"}, Content: "This is a simple arithmetic question. 2+2 = 4."}},
		{name: "layers normalized", text: "confidence: 0.6\nLAYERS: c03, C01 ,C03,\nCONTENT: inline\nmore", want: Observation{Confidence: 0.6, Layers: []string{"C01", "C03"}, Content: "inline\nmore"}},
		{name: "decision section", text: "CONFIDENCE: 0.7\nLAYERS: A\nCONTENT:\nx\nDECISION:\n{\"root_cause\":\"disk\"}", want: Observation{Confidence: 0.7, Layers: []string{"A"}, Content: "x"}, decision: `{"root_cause":"disk"}`},
		{name: "missing confidence", text: "LAYERS: A\nCONTENT:\nx", wantErr: "no tool call"},
		{name: "bad number", text: "CONFIDENCE: high\nLAYERS: A\nCONTENT:\nx", wantErr: "not a number"},
		{name: "out of range", text: "CONFIDENCE: 1.5\nLAYERS: A\nCONTENT:\nx", wantErr: "outside 0..1"},
		{name: "bad decision json", text: "CONFIDENCE: 0.5\nLAYERS: A\nCONTENT:\nx\nDECISION: {nope", wantErr: "DECISION is not valid JSON"},
		{name: "prose", text: "I think we should proceed.", wantErr: "no tool call"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseText(tc.text)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseText: %v", err)
			}
			if got.Confidence != tc.want.Confidence || strings.Join(got.Layers, ",") != strings.Join(tc.want.Layers, ",") || got.Content != tc.want.Content || string(got.Decision) != tc.decision {
				t.Errorf("got %+v (decision %s), want %+v (decision %s)", got, got.Decision, tc.want, tc.decision)
			}
		})
	}
}

func TestParseToolInput(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantErr string
		conf    float64
	}{
		{name: "object", input: `{"confidence":0.7,"layers":["a"],"content":"c","decision":{"x":1}}`, conf: 0.7},
		{name: "json in a string", input: `"{\"confidence\":0.4,\"layers\":[],\"content\":\"c\"}"`, conf: 0.4},
		{name: "invalid json in a string", input: `"{\"confidence\":0.4,"`, wantErr: "not valid JSON"},
		{name: "wrong type", input: `{"confidence":"high"}`, wantErr: "not a valid observation"},
		{name: "no confidence", input: `{"layers":["a"]}`, wantErr: "no confidence"},
		{name: "confidence above 1", input: `{"confidence":1.2}`, wantErr: "outside 0..1"},
		{name: "negative confidence", input: `{"confidence":-0.1}`, wantErr: "outside 0..1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseToolInput(json.RawMessage(tc.input))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.Confidence != tc.conf {
				t.Fatalf("got %+v, %v; want confidence %v", got, err, tc.conf)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	bad := func(f func(*Config)) Config { c := DefaultConfig(); f(&c); return c }
	neg := -0.5
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no model", bad(func(c *Config) { c.Model = "" }), "reason.model"},
		{"fallback without price", bad(func(c *Config) { c.FallbackModels = []string{"other"} }), "reason.prices"},
		{"max tokens", bad(func(c *Config) { c.Inference.MaxTokens = 0 }), "reason.inference.max_tokens"},
		{"temperature", bad(func(c *Config) { c.Inference.Temperature = &neg }), "reason.inference.temperature"},
		{"stages", bad(func(c *Config) { c.MaxStages = 5 }), "reason.max_stages"},
		{"budget", bad(func(c *Config) { c.WaveTokenBudget = 0 }), "reason.wave_token_budget"},
		{"cap", bad(func(c *Config) { c.DailySpendCapUSD = -1 }), "reason.daily_spend_cap_usd"},
		{"prompts", bad(func(c *Config) { c.PromptsVersion = "" }), "reason.prompts_version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if ora.ErrorCode(err) != ora.EINVALID || ora.ErrorField(err) != tc.field {
				t.Errorf("Validate = %v, want EINVALID on %s", err, tc.field)
			}
		})
	}
}

func TestConfigYAML(t *testing.T) {
	src := `
model: m1
fallback_models: [m2]
inference: {max_tokens: 512, temperature: 0.1, top_p: 0.9}
max_stages: 3
wave_token_budget: 1000
daily_spend_cap_usd: 2.5
prices:
  m1: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}
  m2: {input: 1, output: 5, cache_read: 0.1, cache_write: 1.25}
pattern_ttl: 2h
prompts_version: p1
`
	var c Config
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if time.Duration(c.PatternTTL) != 2*time.Hour || c.Inference.MaxTokens != 512 || *c.Inference.TopP != 0.9 || c.Prices["m2"].CacheWrite != 1.25 || c.MotorVersion() != "rules=;prompts=p1;model=m1" {
		t.Errorf("decoded %+v", c)
	}
	b, err := json.Marshal(c)
	if err != nil || !strings.Contains(string(b), `"pattern_ttl":"2h0m0s"`) {
		t.Errorf("json = %s, %v", b, err)
	}
}

func TestPriceCost(t *testing.T) {
	p := DefaultPrices()[DefaultModel]
	got := p.Cost(ora.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 400_000})
	want := 3 + 1.5 + 0.6 + 1.5
	if diff := got - want; diff > 1e-9 || diff < -1e-9 {
		t.Errorf("cost = %v, want %v", got, want)
	}
}

func TestFingerprint(t *testing.T) {
	sig := func(id, payload string) ora.NormalizedSignal {
		return ora.NormalizedSignal{ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: "github", Provider: "github", EventType: "push"}, Payload: json.RawMessage(payload)}
	}
	base := Fingerprint(ora.ProgramSafeOPSDecision, sig("s1", `{"action":"opened","number":1,"title":"a","labels":["x"]}`))
	tests := []struct {
		name string
		fp   string
		same bool
	}{
		{"other ids and values", Fingerprint(ora.ProgramSafeOPSDecision, sig("s2", `{"number":99,"action":"opened","title":"b","labels":["y","z"]}`)), true},
		{"other action", Fingerprint(ora.ProgramSafeOPSDecision, sig("s3", `{"action":"closed","number":1,"title":"a","labels":["x"]}`)), false},
		{"other shape", Fingerprint(ora.ProgramSafeOPSDecision, sig("s4", `{"action":"opened","number":"1","title":"a","labels":["x"]}`)), false},
		{"other program", Fingerprint(ora.ProgramOPSBlockGenerator, sig("s1", `{"action":"opened","number":1,"title":"a","labels":["x"]}`)), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.fp == base) != tc.same {
				t.Errorf("same fingerprint = %v, want %v", tc.fp == base, tc.same)
			}
		})
	}
}

func TestDecodePayload(t *testing.T) {
	tests := []struct {
		name    string
		program ora.ProgramID
		raw     string
		wantErr string
	}{
		{"safe ops", ora.ProgramSafeOPSDecision, `{"allowed_action":"PROCEED","safety_check_summary":"ok","action":{"type":"notify","tier":1,"allowed_operations":["notify"]}}`, ""},
		{"safe ops bad verb", ora.ProgramSafeOPSDecision, `{"allowed_action":"MAYBE","safety_check_summary":"ok","action":{"type":"notify","tier":1,"allowed_operations":["notify"]}}`, "allowed_action"},
		{"safe ops no action", ora.ProgramSafeOPSDecision, `{"allowed_action":"PROCEED","safety_check_summary":"ok"}`, "action is required"},
		{"safe ops tier", ora.ProgramSafeOPSDecision, `{"allowed_action":"PROCEED","safety_check_summary":"ok","action":{"type":"notify","tier":4,"allowed_operations":["notify"]}}`, "tier"},
		{"ops block", ora.ProgramOPSBlockGenerator, `{"ops_block":["a","b"],"complexity_score":3,"risk_analysis":"low"}`, ""},
		{"ops block score", ora.ProgramOPSBlockGenerator, `{"ops_block":["a"],"complexity_score":11,"risk_analysis":"low"}`, "complexity_score"},
		{"guard", ora.ProgramGuardFailureInterpreter, `{"root_cause":"disk full","remediation_plan":"rm","is_transient":false}`, ""},
		{"guard no cause", ora.ProgramGuardFailureInterpreter, `{"remediation_plan":"rm"}`, "root_cause"},
		{"phase", ora.ProgramPhaseTransitionValidator, `{"transition_status":"NOT_READY","missing_criteria":["tests"]}`, ""},
		{"phase ready with missing", ora.ProgramPhaseTransitionValidator, `{"transition_status":"READY","missing_criteria":["tests"]}`, "READY with missing"},
		{"wrong types", ora.ProgramPhaseTransitionValidator, `{"transition_status":1}`, "payload"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodePayload(tc.program, json.RawMessage(tc.raw))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("DecodePayload: %v", err)
				}
				return
			}
			if ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want EINVALID containing %q", err, tc.wantErr)
			}
		})
	}
}
