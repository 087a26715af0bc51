package reason

import (
	"encoding/json"
	"fmt"
	"strconv"
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

// proposing is a SafeOPSDecision payload proposing one action.
func proposing(verdict, params string) json.RawMessage {
	return json.RawMessage(`{"allowed_action":"` + verdict + `","safety_check_summary":"s","action":{"type":"http.request","parameters":` + params + `,"tier":2}}`)
}

// thenAfter is p with one follow-up notify carrying params, after the
// action numbered dep.
func thenAfter(p json.RawMessage, params string, dep int) json.RawMessage {
	return json.RawMessage(strings.TrimSuffix(string(p), "}") + `,"then":[{"action":{"type":"notify","parameters":` + params + `,"tier":2},"depends_on":[` + strconv.Itoa(dep) + `]}]}`)
}

func TestLowComplexityThreshold(t *testing.T) {
	for _, tc := range []struct {
		layers []string
		want   int
	}{{DefaultLayers, 3}, {layers(12), 6}, {layers(5), 3}, {layers(1), 1}} {
		if got := LowComplexityThreshold(tc.layers); got != tc.want {
			t.Errorf("%d layers: threshold %d, want %d", len(tc.layers), got, tc.want)
		}
	}
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
		{"the same action", Observation{Confidence: 0.6, Layers: six, Decision: proposing("PROCEED", `{"a":1,"b":[2]}`)}, &Observation{Confidence: 0.3, Layers: seven, Decision: proposing("PROCEED", `{"b":[2], "a":1}`)}, false, SameAction},
		{"other parameters", Observation{Confidence: 0.6, Layers: six, Decision: proposing("PROCEED", `{"a":1}`)}, &Observation{Confidence: 0.3, Layers: six, Decision: proposing("PROCEED", `{"a":2}`)}, false, ""},
		{"the same action and follow-ups", Observation{Confidence: 0.6, Layers: six, Decision: thenAfter(proposing("PROCEED", `{"a":1}`), `{"b":2}`, 0)}, &Observation{Confidence: 0.3, Layers: seven, Decision: thenAfter(proposing("PROCEED", `{"a":1}`), `{"b":2}`, 0)}, false, SameAction},
		{"the same action, other follow-ups", Observation{Confidence: 0.6, Layers: six, Decision: thenAfter(proposing("PROCEED", `{"a":1}`), `{"b":2}`, 0)}, &Observation{Confidence: 0.3, Layers: six, Decision: thenAfter(proposing("PROCEED", `{"a":1}`), `{"b":3}`, 0)}, false, ""},
		{"the same action, a follow-up added", Observation{Confidence: 0.6, Layers: six, Decision: thenAfter(proposing("PROCEED", `{"a":1}`), `{"b":2}`, 0)}, &Observation{Confidence: 0.3, Layers: six, Decision: proposing("PROCEED", `{"a":1}`)}, false, ""},
		{"the same action, now aborted", Observation{Confidence: 0.6, Layers: six, Decision: proposing("ABORT", `{"a":1}`)}, &Observation{Confidence: 0.3, Layers: six, Decision: proposing("PROCEED", `{"a":1}`)}, false, ""},
		{"same action before consistency", Observation{Confidence: 0.8, Layers: six, Decision: proposing("PROCEED", `{}`)}, &Observation{Confidence: 0.8, Layers: six, Decision: proposing("PROCEED", `{}`)}, false, SameAction},
		{"no decisions are not the same action", Observation{Confidence: 0.6, Layers: six}, &Observation{Confidence: 0.2, Layers: six}, false, ""},
		{"invented layers do not count", Observation{Confidence: 0.6, Layers: []string{"LA", "X1", "X2", "X3", "X4", "X5", "X6"}}, nil, false, LowComplexity},
		{"layers count once, in any case", Observation{Confidence: 0.6, Layers: []string{"la", "LA", "lb", "LC", "LD", "LE", "LE"}}, nil, false, LowComplexity},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Inspect(tc.cur, tc.prev, tc.pattern, layers(12)) // a catalogue of 12: low complexity below 6
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
		{"a layer twice", bad(func(c *Config) { c.Layers = []string{"RISK", "risk"} }), "reason.layers[1]"},
		{"an empty layer", bad(func(c *Config) { c.Layers = []string{" "} }), "reason.layers[0]"},
		{"similarity", bad(func(c *Config) { c.PatternSimilarity = 1.5 }), "reason.pattern_similarity"},
		{"view tokens", bad(func(c *Config) { c.PacketViewTokens = -1 }), "reason.packet_view_tokens"},
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
	u := ora.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 400_000}
	tests := []struct {
		profile string
		want    float64
	}{
		{GlobalSonnet45, 3 + 1.5 + 0.6 + 1.5},
		{DefaultModel, (3 + 1.5 + 0.6 + 1.5) * 1.1}, // us. profile: 10% over global
		{GlobalHaiku45, 1 + 0.5 + 0.2 + 0.5},
		{DefaultFallbackModel, (1 + 0.5 + 0.2 + 0.5) * 1.1},
	}
	for _, tc := range tests {
		t.Run(tc.profile, func(t *testing.T) {
			got := DefaultPrices()[tc.profile].Cost(u)
			if diff := got - tc.want; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("cost = %v, want %v", got, tc.want)
			}
		})
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
	safe := `"allowed_action":"PROCEED","safety_check_summary":"ok","then":[]`
	act := `"type":"notify","parameters":{"subject":"s","message":"m"},"allowed_operations":["notify"],"forbidden_paths":[],"author_type":"architect"`
	tests := []struct {
		name    string
		program ora.ProgramID
		raw     string
		wantErr string
	}{
		{"safe ops", ora.ProgramSafeOPSDecision, `{` + safe + `,"action":{` + act + `,"tier":1}}`, ""},
		{"safe ops bad verb", ora.ProgramSafeOPSDecision, `{"allowed_action":"MAYBE","safety_check_summary":"ok","then":[],"action":{` + act + `,"tier":1}}`, "/allowed_action"},
		{"safe ops no action", ora.ProgramSafeOPSDecision, `{` + safe + `}`, "missing property 'action'"},
		{"safe ops tier", ora.ProgramSafeOPSDecision, `{` + safe + `,"action":{` + act + `,"tier":4}}`, "/action/tier"},
		{"safe ops unknown field", ora.ProgramSafeOPSDecision, `{` + safe + `,"action":{` + act + `,"tier":1},"extra":1}`, "additional properties 'extra'"},
		{"safe ops unknown action field", ora.ProgramSafeOPSDecision, `{` + safe + `,"action":{` + act + `,"tier":1,"sudo":true}}`, "additional properties 'sudo'"},
		{"safe ops bad author", ora.ProgramSafeOPSDecision, `{` + safe + `,"action":{"type":"notify","parameters":{},"allowed_operations":["notify"],"forbidden_paths":[],"author_type":"human","tier":1}}`, "/action/author_type"},
		{"safe ops parameters not an object", ora.ProgramSafeOPSDecision, `{` + safe + `,"action":{"type":"notify","parameters":"x","allowed_operations":["notify"],"forbidden_paths":[],"author_type":"architect","tier":1}}`, "/action/parameters"},
		{"ops block", ora.ProgramOPSBlockGenerator, `{"ops_block":["a","b"],"complexity_score":3,"risk_analysis":"low"}`, ""},
		{"ops block score", ora.ProgramOPSBlockGenerator, `{"ops_block":["a"],"complexity_score":11,"risk_analysis":"low"}`, "/complexity_score"},
		{"ops block score not an integer", ora.ProgramOPSBlockGenerator, `{"ops_block":["a"],"complexity_score":2.5,"risk_analysis":"low"}`, "/complexity_score"},
		{"guard", ora.ProgramGuardFailureInterpreter, `{"root_cause":"disk full","remediation_plan":"rm","is_transient":false}`, ""},
		{"guard transient as string", ora.ProgramGuardFailureInterpreter, `{"root_cause":"disk full","remediation_plan":"rm","is_transient":"yes"}`, "/is_transient"},
		{"phase", ora.ProgramPhaseTransitionValidator, `{"transition_status":"NOT_READY","missing_criteria":["tests"]}`, ""},
		{"phase ready with missing", ora.ProgramPhaseTransitionValidator, `{"transition_status":"READY","missing_criteria":["tests"]}`, "READY with missing"},
		{"wrong types", ora.ProgramPhaseTransitionValidator, `{"transition_status":1,"missing_criteria":[]}`, "/transition_status"},
		{"empty", ora.ProgramPhaseTransitionValidator, ``, "empty"},
	}
	// Every required field of every program, left out, is rejected: none is
	// filled in with a default.
	full := map[ora.ProgramID]string{
		ora.ProgramSafeOPSDecision:          `{` + safe + `,"action":{` + act + `,"tier":1}}`,
		ora.ProgramOPSBlockGenerator:        `{"ops_block":["a"],"complexity_score":3,"risk_analysis":"low"}`,
		ora.ProgramGuardFailureInterpreter:  `{"root_cause":"disk full","remediation_plan":"rm","is_transient":false}`,
		ora.ProgramPhaseTransitionValidator: `{"transition_status":"NOT_READY","missing_criteria":["tests"]}`,
	}
	for id, raw := range full {
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
		for field := range m {
			c := map[string]any{}
			for k, v := range m {
				if k != field {
					c[k] = v
				}
			}
			b, _ := json.Marshal(c)
			tests = append(tests, struct {
				name    string
				program ora.ProgramID
				raw     string
				wantErr string
			}{fmt.Sprintf("%s without %s", id, field), id, string(b), "missing property '" + field + "'"})
		}
		if id == ora.ProgramSafeOPSDecision {
			a := m["action"].(map[string]any)
			for field := range a {
				c := map[string]any{}
				for k, v := range a {
					if k != field {
						c[k] = v
					}
				}
				mm := map[string]any{"allowed_action": "PROCEED", "safety_check_summary": "ok", "action": c, "then": []any{}}
				b, _ := json.Marshal(mm)
				tests = append(tests, struct {
					name    string
					program ora.ProgramID
					raw     string
					wantErr string
				}{fmt.Sprintf("%s without action.%s", id, field), id, string(b), "missing property '" + field + "'"})
			}
		}
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

func TestObservationSchema(t *testing.T) {
	dec := `{"transition_status":"NOT_READY","missing_criteria":[]}`
	tests := []struct {
		name, raw, wantErr string
	}{
		{"valid", `{"confidence":0.5,"layers":["A"],"content":"x","decision":` + dec + `}`, ""},
		{"no layers", `{"confidence":0.5,"content":"x","decision":` + dec + `}`, "missing property 'layers'"},
		{"empty layers", `{"confidence":0.5,"layers":[],"content":"x","decision":` + dec + `}`, "/layers"},
		{"no decision", `{"confidence":0.5,"layers":["A"],"content":"x"}`, "missing property 'decision'"},
		{"no content", `{"confidence":0.5,"layers":["A"],"decision":` + dec + `}`, "missing property 'content'"},
		{"confidence as string", `{"confidence":"high","layers":["A"],"content":"x","decision":` + dec + `}`, "/confidence"},
		{"unknown field", `{"confidence":0.5,"layers":["A"],"content":"x","decision":` + dec + `,"mood":"good"}`, "additional properties 'mood'"},
		{"bad decision", `{"confidence":0.5,"layers":["A"],"content":"x","decision":{"transition_status":"READY"}}`, "missing property 'missing_criteria'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateObservation(ora.ProgramPhaseTransitionValidator, json.RawMessage(tc.raw))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestPayloadText(t *testing.T) {
	many := make([]int, 5000)
	for i := range many {
		many[i] = 100000 + i
	}
	huge, _ := json.Marshal(map[string]any{"items": many})
	links, _ := json.Marshal(map[string]any{"title": "t", "html_url": "https://github.com/x", "node_id": "N", "pad": strings.Repeat("y", 900),
		"repo": map[string]any{"issues_url": strings.Repeat("z", 2000), "name": "shop"}})
	tests := []struct {
		name    string
		payload string
		limit   int
		want    []string
		wantNot []string
	}{
		{"small: compact, whole", `{ "a" : [1, 2] }`, 100, []string{`{"a":[1,2]}`}, []string{"left out"}},
		{"links left out", string(links), 1500, []string{`"html_url":"https://github.com/x"`, `"name":"shop"`, "API links and node ids left out"}, []string{"issues_url", "node_id"}},
		{"cut", string(huge), 1000, []string{"cut at 1000 of"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := payloadText(json.RawMessage(tc.payload), tc.limit)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%.300s", w, got)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("has %q", w)
				}
			}
			if len(got) > tc.limit+200 {
				t.Errorf("%d bytes for a limit of %d", len(got), tc.limit)
			}
		})
	}
}
