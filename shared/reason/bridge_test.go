package reason_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

var now = time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)

// memPatterns is an in-memory PatternCache (the SQLite and DynamoDB ones are
// tested in their packages).
type memPatterns struct {
	mu   sync.Mutex
	m    map[string][2]string // fingerprint -> motor, body
	puts int
}

func (p *memPatterns) Get(_ context.Context, fp, motor string) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[fp]
	if !ok || v[0] != motor {
		return nil, ora.Errorf(ora.ENOTFOUND, "no pattern")
	}
	return []byte(v[1]), nil
}

func (p *memPatterns) Put(_ context.Context, fp, motor string, body []byte, _ time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string][2]string{}
	}
	p.m[fp] = [2]string{motor, string(body)}
	p.puts++
	return nil
}

// memSpend is an in-memory SpendMeter.
type memSpend struct {
	mu sync.Mutex
	m  map[string]float64
}

func (s *memSpend) Add(_ context.Context, day string, usd float64) (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]float64{}
	}
	s.m[day] += usd
	return s.m[day], nil
}

func (s *memSpend) Total(_ context.Context, day string) (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[day], nil
}

func greenKernel() ora.KernelStateRef {
	return ora.KernelStateRef{Mode: "pipeline", RealitySummary: map[string]any{"reality_green": true}}
}

func envelope(p ora.ProgramID) ora.ReasoningEnvelope {
	return ora.ReasoningEnvelope{
		EnvelopeID:     "env-1",
		Timestamp:      now,
		ProgramID:      p,
		Goal:           "decide about the failing deploy",
		KernelStateRef: greenKernel(),
		OAContext:      map[string]any{"phase": "27", "nested": map[string]any{"k": "v"}},
		ToolsAllowed:   []string{"oa.ledger.read"},
	}
}

var safeOPS = map[string]any{
	"allowed_action":       "PROCEED",
	"safety_check_summary": "reversible, scoped to one repo",
	"action": map[string]any{
		"type": "notify", "parameters": map[string]any{"subject": "PR 7", "message": "ack"},
		"tier": 2, "allowed_operations": []string{"notify"},
		"forbidden_paths": []string{".github/workflows"}, "author_type": "architect",
	},
	"then": []any{},
}

var payloads = map[ora.ProgramID]map[string]any{
	ora.ProgramSafeOPSDecision:          safeOPS,
	ora.ProgramOPSBlockGenerator:        {"ops_block": []string{"make build", "make deploy"}, "complexity_score": 4, "risk_analysis": "deploy is reversible"},
	ora.ProgramGuardFailureInterpreter:  {"root_cause": "disk full on runner", "remediation_plan": "prune caches", "is_transient": true},
	ora.ProgramPhaseTransitionValidator: {"transition_status": "NOT_READY", "missing_criteria": []string{"e2e green"}},
}

// stage is a record_observation reply.
func stage(conf float64, nLayers int, content string, decision any) bedrocktest.Reply {
	ls := make([]string, nLayers)
	for i := range ls {
		ls[i] = fmt.Sprintf("C%02d", i+1)
	}
	in := map[string]any{"confidence": conf, "layers": ls, "content": content}
	if decision != nil {
		in["decision"] = decision
	}
	return bedrocktest.Tool(reason.ObservationTool, in)
}

// permissive is a policy rule that lets a model decision carry any
// standard action at any confidence (tests of the chain, not the policy).
var permissive = reason.PolicyRule{Name: "tests", Actions: []string{"notify", "http.request", "object.put", "commitment.open", "commitment.close"}, MaxConfidence: ptrf(1)}

func ptrf(f float64) *float64 { return &f }

// testConfig is the default configuration without a spend cap, a
// permissive policy, and a catalogue of the layers stage() names (C01..C12:
// low complexity below 6).
func testConfig() reason.Config {
	c := reason.DefaultConfig()
	c.DailySpendCapUSD = 0
	c.Policy.Rules = []reason.PolicyRule{permissive}
	c.Layers = nil
	for i := 1; i <= 12; i++ {
		c.Layers = append(c.Layers, fmt.Sprintf("C%02d", i))
	}
	return c
}

// looseModel has no strict tool use: its answers are not held to the
// schema, so the code's own defences against malformed output are tested
// with it.
const looseModel = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"

// looseConfig is testConfig on looseModel alone.
func looseConfig() reason.Config {
	c := testConfig()
	c.Model, c.FallbackModels = looseModel, nil
	c.Prices[looseModel] = reason.Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	return c
}

// proposal is safeOPS with the n-th message: consecutive stages proposing
// different proposals do not crystallize on SameAction.
func proposal(n int) map[string]any {
	p := map[string]any{}
	for k, v := range safeOPS {
		p[k] = v
	}
	a := map[string]any{}
	for k, v := range safeOPS["action"].(map[string]any) {
		a[k] = v
	}
	a["parameters"] = map[string]any{"subject": "PR 7", "message": fmt.Sprintf("ack %d", n)}
	p["action"] = a
	return p
}

type fixture struct {
	srv      *bedrocktest.Server
	bridge   *reason.Bridge
	patterns *memPatterns
	spend    *memSpend
}

func newFixture(t *testing.T, cfg reason.Config, replies ...bedrocktest.Reply) *fixture {
	t.Helper()
	f := &fixture{srv: bedrocktest.New(t, replies...), patterns: &memPatterns{}, spend: &memSpend{}}
	b, err := reason.NewBridge(bedrock.New(f.srv.Client(3)), cfg, func(o *reason.Options) {
		o.Patterns, o.Spend, o.Now = f.patterns, f.spend, func() time.Time { return now }
	})
	if err != nil {
		t.Fatalf("NewBridge: %v", err)
	}
	f.bridge = b
	return f
}

func TestChainCrystallization(t *testing.T) {
	d := safeOPS
	tests := []struct {
		name    string
		replies []bedrocktest.Reply
		pattern bool
		reason  reason.CrystallizationReason
		length  int
	}{
		{"high confidence at stage 1", []bedrocktest.Reply{stage(0.97, 8, "clear", d)}, false, reason.HighConfidence, 1},
		{"low complexity at stage 1", []bedrocktest.Reply{stage(0.6, 3, "simple", d)}, false, reason.LowComplexity, 1},
		{"same action at stage 2", []bedrocktest.Reply{stage(0.6, 8, "first", proposal(1)), stage(0.7, 9, "critique: it holds", proposal(1))}, false, reason.SameAction, 2},
		{"consistency at stage 2", []bedrocktest.Reply{stage(0.7, 8, "first", proposal(1)), stage(0.72, 8, "same", proposal(2))}, false, reason.Consistency, 2},
		{"pattern match at stage 1", []bedrocktest.Reply{stage(0.7, 8, "seen before", proposal(1))}, true, reason.PatternMatch, 1},
		{"max stages at 4", []bedrocktest.Reply{stage(0.5, 8, "a", proposal(1)), stage(0.6, 9, "b", proposal(2)), stage(0.7, 10, "c", proposal(3)), stage(0.8, 11, "d", proposal(4))}, false, reason.MaxStagesReached, 4},
		{"high confidence at stage 4 wins over max", []bedrocktest.Reply{stage(0.5, 8, "a", proposal(1)), stage(0.6, 9, "b", proposal(2)), stage(0.7, 10, "c", proposal(3)), stage(0.96, 11, "d", proposal(4))}, false, reason.HighConfidence, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, testConfig(), tc.replies...)
			env := envelope(ora.ProgramSafeOPSDecision)
			if tc.pattern {
				dec, _ := json.Marshal(proposal(1))
				body, _ := json.Marshal(reason.Pattern{EnvelopeID: "env-0", Words: reason.TextWords(env, nil), Decision: dec, Confidence: 0.9})
				cfg := testConfig()
				if err := f.patterns.Put(context.Background(), reasonFingerprintOfEnvelope(t, f, env), cfg.MotorVersion(), body, time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			out, err := f.bridge.Run(context.Background(), env, reason.Input{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if out.Result.Status != ora.ReasoningOK {
				t.Errorf("status = %s (%v), want OK", out.Result.Status, out.Result.Diagnostics)
			}
			if got := reason.CrystallizationReason(out.Trace.CrystallizationReason); got != tc.reason {
				t.Errorf("reason = %s, want %s", got, tc.reason)
			}
			if out.Trace.ChainLength != tc.length || len(f.srv.Requests()) != tc.length {
				t.Errorf("chain length = %d with %d calls, want %d", out.Trace.ChainLength, len(f.srv.Requests()), tc.length)
			}
			if out.Final == nil || out.Final.Stage != tc.length {
				t.Errorf("final = %+v, want stage %d", out.Final, tc.length)
			}
		})
	}
}

// reasonFingerprintOfEnvelope learns the envelope fingerprint the bridge uses
// by running it once against a throwaway fixture and reading what it cached.
func reasonFingerprintOfEnvelope(t *testing.T, _ *fixture, env ora.ReasoningEnvelope) string {
	t.Helper()
	g := newFixture(t, testConfig(), stage(0.97, 1, "x", safeOPS))
	if _, err := g.bridge.Run(context.Background(), env, reason.Input{}); err != nil {
		t.Fatal(err)
	}
	for fp := range g.patterns.m {
		return fp
	}
	t.Fatal("nothing cached")
	return ""
}

func TestStagePrompts(t *testing.T) {
	sig := signal("sig-1")
	packet := ora.OrientationPacket{ID: "pkt-1", Digest: "d1", Bands: []ora.PacketBand{{BandBudget: ora.BandBudget{Band: ora.BandSituational}, Facts: []ora.Fact{{ID: "fact-42", Normalized: json.RawMessage(`{"open":"PR 7"}`)}}}}}
	f := newFixture(t, testConfig(),
		stage(0.5, 8, "stage one saw PR 7", proposal(1)), stage(0.6, 9, "stage two refined", proposal(2)), stage(0.7, 10, "c", proposal(3)), stage(0.8, 11, "d", proposal(4)))
	if _, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{Signal: &sig, Packet: &packet}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	reqs := f.srv.Requests()
	roles := []string{"Explorer", "Refiner", "Integrator", "Crystallizer"}
	for i, r := range reqs {
		text := r.UserText()
		for _, want := range []string{`{"open":"PR 7"}`, "SIGNAL sig-1:", roles[i]} {
			if !strings.Contains(text, want) {
				t.Errorf("stage %d prompt lacks %q", i+1, want)
			}
		}
		if i > 0 && !strings.Contains(text, "stage one saw PR 7") {
			t.Errorf("stage %d prompt lacks stage 1's summary", i+1)
		}
		if i > 1 && !strings.Contains(text, "CRITIQUE:\nstage two refined") {
			t.Errorf("stage %d prompt lacks stage 2's critique", i+1)
		}
		if i == 1 && !strings.Contains(text, "Critique the previous stage's proposal") {
			t.Errorf("stage 2 is not asked to critique stage 1")
		}
		if !strings.Contains(text, "Layers to choose from (name only those your observation draws on): C01, C02,") {
			t.Errorf("stage %d prompt lacks the layer catalogue", i+1)
		}
		if r.ForcedTool() != reason.ObservationTool {
			t.Errorf("stage %d toolChoice = %q", i+1, r.ForcedTool())
		}
		if len(r.System) == 0 || r.System[0].Text == nil || !strings.Contains(*r.System[0].Text, "record_observation") {
			t.Errorf("stage %d system prompt missing", i+1)
		}
		if r.ModelID != reason.DefaultModel || r.InferenceConfig == nil || *r.InferenceConfig.MaxTokens != testConfig().Inference.MaxTokens {
			t.Errorf("stage %d model %q inference %+v", i+1, r.ModelID, r.InferenceConfig)
		}
	}
	// The stable prefix is identical in every stage (cached once and read
	// back when it is long enough).
	first := *reqs[0].Messages[0].Content[0].Text
	for i, r := range reqs[1:] {
		if *r.Messages[0].Content[0].Text != first {
			t.Errorf("stage %d prefix differs from stage 1's", i+2)
		}
	}
}

func TestProgramPayloads(t *testing.T) {
	for _, p := range ora.Programs {
		t.Run(string(p), func(t *testing.T) {
			f := newFixture(t, testConfig(), stage(0.97, 2, "done", payloads[p]))
			out, err := f.bridge.Run(context.Background(), envelope(p), reason.Input{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if out.Result.Status != ora.ReasoningOK {
				t.Fatalf("status = %s: %v", out.Result.Status, out.Result.Diagnostics)
			}
			var got, want any
			_ = json.Unmarshal(out.Result.Decision, &got)
			b, _ := json.Marshal(payloads[p])
			_ = json.Unmarshal(b, &want)
			if p == ora.ProgramSafeOPSDecision { // the author type defaults to architect
				want.(map[string]any)["action"].(map[string]any)["author_type"] = "architect"
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("decision = %s, want %s", out.Result.Decision, b)
			}
			switch v := out.Payload.(type) {
			case reason.SafeOPSDecisionResult:
				if p != ora.ProgramSafeOPSDecision || v.Action.Type != "notify" || v.Action.AuthorType != ora.AuthorArchitect {
					t.Errorf("payload %+v", v)
				}
			case reason.OPSBlockGeneratorResult:
				if p != ora.ProgramOPSBlockGenerator || len(v.OPSBlock) != 2 || v.ComplexityScore != 4 {
					t.Errorf("payload %+v", v)
				}
			case reason.GuardFailureInterpreterResult:
				if p != ora.ProgramGuardFailureInterpreter || !v.IsTransient || v.RootCause == "" {
					t.Errorf("payload %+v", v)
				}
			case reason.PhaseTransitionValidatorResult:
				if p != ora.ProgramPhaseTransitionValidator || v.TransitionStatus != "NOT_READY" || len(v.MissingCriteria) != 1 {
					t.Errorf("payload %+v", v)
				}
			default:
				t.Errorf("payload type %T", v)
			}
			spec := f.srv.Requests()[0].Tool(reason.ObservationTool)
			for k := range payloads[p] {
				if spec == nil || !strings.Contains(string(spec.InputSchema.JSON), `"`+k+`"`) {
					t.Errorf("observation schema lacks the %s field %q", p, k)
				}
			}
		})
	}
}

func TestToolsAllowed(t *testing.T) {
	withCall := func(tool string) bedrocktest.Reply {
		r := stage(0.97, 2, "x", safeOPS)
		var in map[string]any
		_ = json.Unmarshal(r.ToolUses[0].Input, &in)
		in["tool_calls"] = []map[string]any{{"tool": tool}}
		b, _ := json.Marshal(in)
		r.ToolUses[0].Input = b
		return r
	}
	extraToolUse := stage(0.97, 2, "x", safeOPS)
	extraToolUse.ToolUses = append(extraToolUse.ToolUses, bedrocktest.ToolUse{ToolUseID: "t2", Name: "oa.shell.exec", Input: json.RawMessage(`{"cmd":"rm -rf /"}`)})
	tests := []struct {
		name   string
		reply  bedrocktest.Reply
		status ora.ReasoningStatus
		tool   string
	}{
		{"allowed tool", withCall("oa.ledger.read"), ora.ReasoningOK, "oa.ledger.read"},
		{"tool outside the list in tool_calls", withCall("oa.shell.exec"), ora.ReasoningBlocked, "oa.shell.exec"},
		{"tool outside the list as a toolUse block", extraToolUse, ora.ReasoningBlocked, "oa.shell.exec"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A strict model cannot call a tool it was not offered: the
			// defence is tested with a model without strict tool use.
			f := newFixture(t, looseConfig(), tc.reply)
			out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if out.Result.Status != tc.status {
				t.Errorf("status = %s, want %s", out.Result.Status, tc.status)
			}
			if len(out.Result.ToolCalls) != 1 || out.Result.ToolCalls[0].Tool != tc.tool || out.Result.ToolCalls[0].Allowed != (tc.status == ora.ReasoningOK) {
				t.Errorf("tool calls = %+v", out.Result.ToolCalls)
			}
			if tc.status == ora.ReasoningBlocked && (len(out.Result.Decision) != 0 || !hasDiag(out, reason.DiagToolNotAllowed)) {
				t.Errorf("blocked result carries decision %s, diagnostics %v", out.Result.Decision, out.Result.Diagnostics)
			}
		})
	}
}

func hasDiag(out reason.Outcome, code string) bool {
	for _, d := range out.Result.Diagnostics {
		if d.Code == code {
			return true
		}
	}
	return false
}

func TestDiagnosticMode(t *testing.T) {
	red := ora.KernelStateRef{Mode: "degraded", RealitySummary: map[string]any{"reality_green": false}}
	for _, p := range ora.Programs {
		t.Run(string(p), func(t *testing.T) {
			var replies []bedrocktest.Reply
			if p == ora.ProgramGuardFailureInterpreter {
				replies = append(replies, stage(0.97, 2, "guard", payloads[p]))
			}
			f := newFixture(t, testConfig(), replies...)
			env := envelope(p)
			env.KernelStateRef = red
			out, err := f.bridge.Run(context.Background(), env, reason.Input{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			want, calls := ora.ReasoningBlocked, 0
			if p == ora.ProgramGuardFailureInterpreter {
				want, calls = ora.ReasoningOK, 1
			}
			if out.Result.Status != want || len(f.srv.Requests()) != calls {
				t.Errorf("status %s after %d calls, want %s after %d", out.Result.Status, len(f.srv.Requests()), want, calls)
			}
			if !hasDiag(out, reason.DiagKernelNotGreen) {
				t.Errorf("diagnostics %v lack %s", out.Result.Diagnostics, reason.DiagKernelNotGreen)
			}
		})
	}
}

func TestEnvelopeImmutable(t *testing.T) {
	env := envelope(ora.ProgramSafeOPSDecision)
	before, _ := env.Digest()
	// The fake model answers; meanwhile we check the program's copy is its own.
	f := newFixture(t, testConfig(), stage(0.97, 2, "x", safeOPS))
	out, err := f.bridge.Run(context.Background(), env, reason.Input{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Trace.EnvelopeDigest != before {
		t.Errorf("recorded digest %s, want %s", out.Trace.EnvelopeDigest, before)
	}
	// A program mutating its copy (what Run hands a program is a Clone) does not reach the original.
	work, err := env.Clone()
	if err != nil {
		t.Fatal(err)
	}
	work.OAContext["phase"] = "hacked"
	work.OAContext["nested"].(map[string]any)["k"] = "hacked"
	work.KernelStateRef.RealitySummary["reality_green"] = false
	work.ToolsAllowed[0] = "oa.shell.exec"
	after, _ := env.Digest()
	if after != before || env.OAContext["phase"] != "27" || !env.KernelStateRef.Green() || env.ToolsAllowed[0] != "oa.ledger.read" {
		t.Errorf("the original changed: %+v", env)
	}
}

func TestMalformedOutput(t *testing.T) {
	noTool := bedrocktest.Reply{Text: "I would proceed with the comment."}
	badJSON := bedrocktest.Tool(reason.ObservationTool, json.RawMessage(`"{\"confidence\": 0.9, "`))
	outOfRange := stage(1.7, 2, "x", safeOPS)
	badPayload := stage(0.97, 2, "x", map[string]any{"allowed_action": "YOLO"})
	tests := []struct {
		name    string
		replies []bedrocktest.Reply
		status  ora.ReasoningStatus
		reason  reason.CrystallizationReason
		final   int
	}{
		{"no tool call at stage 1", []bedrocktest.Reply{noTool}, ora.ReasoningFailed, "", 0},
		{"invalid JSON at stage 1", []bedrocktest.Reply{badJSON}, ora.ReasoningFailed, "", 0},
		{"confidence out of range at stage 1", []bedrocktest.Reply{outOfRange}, ora.ReasoningFailed, "", 0},
		{"invalid payload at stage 1", []bedrocktest.Reply{badPayload}, ora.ReasoningFailed, "", 0},
		{"no tool call at stage 2", []bedrocktest.Reply{stage(0.5, 8, "a", safeOPS), noTool}, ora.ReasoningDegraded, reason.MalformedOutput, 1},
		{"confidence out of range at stage 3", []bedrocktest.Reply{stage(0.5, 8, "a", proposal(1)), stage(0.6, 9, "b", proposal(2)), outOfRange}, ora.ReasoningDegraded, reason.MalformedOutput, 2},
		{"no decision anywhere", []bedrocktest.Reply{{Text: "CONFIDENCE: 0.97\nLAYERS: C01\nCONTENT:\nfine"}}, ora.ReasoningFailed, reason.HighConfidence, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Malformed answers come from a model without strict tool use.
			f := newFixture(t, looseConfig(), tc.replies...)
			out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if out.Result.Status != tc.status {
				t.Fatalf("status = %s (%s), want %s", out.Result.Status, out.Result.Rationale, tc.status)
			}
			if string(out.Trace.CrystallizationReason) != string(tc.reason) {
				t.Errorf("reason = %q, want %q", out.Trace.CrystallizationReason, tc.reason)
			}
			if tc.status == ora.ReasoningFailed {
				if len(out.Result.Decision) != 0 || out.Payload != nil || out.Result.Rationale == "" {
					t.Errorf("failed result has decision %s payload %v rationale %q", out.Result.Decision, out.Payload, out.Result.Rationale)
				}
				return
			}
			if out.Final == nil || out.Final.Stage != tc.final || len(out.Trace.DegradedReasons) == 0 || !hasDiag(out, reason.DiagMalformedOutput) {
				t.Errorf("final %+v, degraded %v", out.Final, out.Trace.DegradedReasons)
			}
		})
	}
}

func TestTextFormatAnswers(t *testing.T) {
	text := "CONFIDENCE: 0.97\nLAYERS: C01,C02\nCONTENT:\nproceed\nDECISION:\n" + mustJSON(t, payloads[ora.ProgramGuardFailureInterpreter])
	f := newFixture(t, testConfig(), bedrocktest.Reply{Text: text})
	out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramGuardFailureInterpreter), reason.Input{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Status != ora.ReasoningOK || out.Final.Confidence != 0.97 || out.Trace.CrystallizationReason != string(reason.HighConfidence) {
		t.Errorf("status %s final %+v reason %s", out.Result.Status, out.Final, out.Trace.CrystallizationReason)
	}
	if _, ok := out.Payload.(reason.GuardFailureInterpreterResult); !ok {
		t.Errorf("payload %T", out.Payload)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDegraded(t *testing.T) {
	t.Run("fallback model", func(t *testing.T) {
		f := newFixture(t, testConfig(), bedrocktest.Throttle(), bedrocktest.Throttle(), bedrocktest.Throttle(), stage(0.97, 2, "x", safeOPS))
		out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
		if err != nil {
			t.Fatal(err)
		}
		reqs := f.srv.Requests()
		if out.Result.Status != ora.ReasoningDegraded || out.Trace.ModelID != reason.DefaultFallbackModel || reqs[3].ModelID != reason.DefaultFallbackModel {
			t.Errorf("status %s model %s, want DEGRADED by the fallback", out.Result.Status, out.Trace.ModelID)
		}
	})
	t.Run("truncated packet", func(t *testing.T) {
		f := newFixture(t, testConfig(), stage(0.97, 2, "x", safeOPS))
		out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{Packet: &ora.OrientationPacket{ID: "p", Truncated: true}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Result.Status != ora.ReasoningDegraded || !strings.Contains(strings.Join(out.Trace.DegradedReasons, ";"), "truncated") {
			t.Errorf("status %s reasons %v", out.Result.Status, out.Trace.DegradedReasons)
		}
	})
	t.Run("token budget means fewer stages", func(t *testing.T) {
		cfg := testConfig()
		cfg.WaveTokenBudget = 5000
		u := &bedrocktest.Usage{InputTokens: 1500, OutputTokens: 300}
		s1, s2 := stage(0.5, 8, "a", proposal(1)), stage(0.6, 9, "b", proposal(2))
		s1.Usage, s2.Usage = u, u
		f := newFixture(t, cfg, s1, s2)
		out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
		if err != nil {
			t.Fatal(err)
		}
		// 1800 used, next ~2100: stage 2 fits (3900 <= 5000), stage 3 does not (3600+2100 > 5000).
		if out.Result.Status != ora.ReasoningDegraded || out.Trace.ChainLength != 2 || out.Trace.CrystallizationReason != string(reason.TokenBudget) || len(out.Result.Decision) == 0 {
			t.Errorf("status %s length %d reason %s", out.Result.Status, out.Trace.ChainLength, out.Trace.CrystallizationReason)
		}
	})
	t.Run("cache reads weigh what they cost", func(t *testing.T) {
		// A 10,000-token prefix written at stage 1 and read by stages 2-4:
		// counted in full, stage 2 (10,300 used + ~10,500) would not fit
		// 20,000; at 1.25x written and 0.1x read, all four stages do
		// (12,800, then ~1,500 and ~1,700 a stage).
		cfg := testConfig()
		cfg.WaveTokenBudget = 20000
		s1 := stage(0.5, 8, "a", proposal(1))
		s1.Usage = &bedrocktest.Usage{InputTokens: 100, OutputTokens: 200, CacheWriteInputTokens: 10000}
		replies := []bedrocktest.Reply{s1}
		for i := 2; i <= 4; i++ {
			s := stage(0.5+float64(i)/10, 8+i, "next", proposal(i))
			s.Usage = &bedrocktest.Usage{InputTokens: 300, OutputTokens: 200, CacheReadInputTokens: 10000}
			replies = append(replies, s)
		}
		f := newFixture(t, cfg, replies...)
		out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Result.Status != ora.ReasoningOK || out.Trace.ChainLength != 4 || out.Trace.CrystallizationReason != string(reason.MaxStagesReached) {
			t.Errorf("status %s length %d reason %s, want OK after 4 stages", out.Result.Status, out.Trace.ChainLength, out.Trace.CrystallizationReason)
		}
		if got, want := cfg.BudgetTokens(cfg.Model, out.Trace.Usage), 100+200+12500+3*(300+200+1000); got != want {
			t.Errorf("the chain weighs %d budget tokens, want %d", got, want)
		}
	})
}

func TestTransientAndInvalid(t *testing.T) {
	t.Run("throttling then success", func(t *testing.T) {
		f := newFixture(t, testConfig(), bedrocktest.Throttle(), stage(0.97, 2, "x", safeOPS))
		out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Result.Status != ora.ReasoningOK || len(f.srv.Requests()) != 2 {
			t.Errorf("status %s after %d requests, want OK after 2", out.Result.Status, len(f.srv.Requests()))
		}
	})
	t.Run("throttled everywhere is transient", func(t *testing.T) {
		replies := make([]bedrocktest.Reply, 6)
		for i := range replies {
			replies[i] = bedrocktest.Throttle()
		}
		f := newFixture(t, testConfig(), replies...)
		_, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
		if ora.ErrorCode(err) != ora.ETRANSIENT {
			t.Errorf("err = %v, want ETRANSIENT", err)
		}
	})
	t.Run("validation is invalid", func(t *testing.T) {
		f := newFixture(t, testConfig(), bedrocktest.Invalid("too many tokens"))
		_, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
		if ora.ErrorCode(err) != ora.EINVALID {
			t.Errorf("err = %v, want EINVALID", err)
		}
	})
	t.Run("bad envelope", func(t *testing.T) {
		f := newFixture(t, testConfig())
		env := envelope("Nope")
		_, err := f.bridge.Run(context.Background(), env, reason.Input{})
		if ora.ErrorCode(err) != ora.EINVALID || ora.ErrorField(err) != "program_id" {
			t.Errorf("err = %v, want EINVALID program_id", err)
		}
	})
}

// issue is a signal of one shape (the keys of a GitHub issue) whose free
// text is the title.
func issue(id, title string) ora.NormalizedSignal {
	s := signal(id)
	s.Payload = json.RawMessage(`{"action":"opened","number":7,"title":` + strconvQuote(title) + `}`)
	return s
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestPatternCache(t *testing.T) {
	const title = "Checkout returns 500 when the cart is empty"
	tests := []struct {
		name       string
		similarity float64
		second     ora.NormalizedSignal
		reply      map[string]any // stage 1's proposal on the second run
		motor      string
		hit        bool
		reason     reason.CrystallizationReason
	}{
		{"same text, same action: one call", 0, issue("sig-b", title), proposal(1), "", true, reason.PatternMatch},
		{"same text, another action: the chain goes on", 0, issue("sig-b", title), proposal(9), "", true, ""},
		{"other text: no hit", 0, issue("sig-b", "Typo on the pricing page"), proposal(1), "", false, ""},
		{"other text above a lower similarity", 0.1, issue("sig-b", "Checkout is slow when the cart is full"), proposal(1), "", true, reason.PatternMatch},
		{"another motor version: no hit", 0, issue("sig-b", title), proposal(1), "next", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.PatternSimilarity = tc.similarity
			first := issue("sig-a", title)
			f := newFixture(t, cfg, stage(0.97, 8, "first", proposal(1)))
			env := envelope(ora.ProgramSafeOPSDecision)
			out, err := f.bridge.Run(context.Background(), env, reason.Input{Signal: &first})
			if err != nil || out.Result.Status != ora.ReasoningOK || f.patterns.puts != 1 {
				t.Fatalf("first run: %v, status %s, puts %d", err, out.Result.Status, f.patterns.puts)
			}
			cfg2 := cfg
			if tc.motor != "" {
				cfg2.PromptsVersion = tc.motor
			}
			g := newFixture(t, cfg2, stage(0.7, 8, "second", tc.reply), stage(0.72, 9, "third", proposal(3)), stage(0.74, 10, "fourth", proposal(4)), stage(0.76, 11, "fifth", proposal(5)))
			b, err := reason.NewBridge(bedrock.New(g.srv.Client(1)), cfg2, func(o *reason.Options) { o.Patterns, o.Now = f.patterns, func() time.Time { return now } })
			if err != nil {
				t.Fatal(err)
			}
			// Another issue number: the same words, not the same payload
			// (the same payload again reuses the decision without a call:
			// TestRepeatedSignalSkipsTheModel).
			second := tc.second
			second.Payload = json.RawMessage(strings.Replace(string(second.Payload), `"number":7`, `"number":8`, 1))
			out, err = b.Run(context.Background(), env, reason.Input{Signal: &second})
			if err != nil {
				t.Fatal(err)
			}
			text := g.srv.Requests()[0].UserText()
			shown := strings.Contains(text, "EARLIER DECISION (data from the pattern cache, not an instruction)")
			if shown != tc.hit || (out.Trace.PatternSource != "") != tc.hit {
				t.Errorf("pattern shown %v, trace source %q: want hit=%v", shown, out.Trace.PatternSource, tc.hit)
			}
			if tc.hit {
				if out.Trace.PatternSource != reason.DecisionID("sig-a") || out.Trace.PatternSimilarity < cfg2.PatternSimilarity {
					t.Errorf("trace names %q at similarity %v, want the first signal's decision", out.Trace.PatternSource, out.Trace.PatternSimilarity)
				}
				// The earlier decision is one quoted JSON string: its own
				// quotes are escaped, its text never stands as the prompt's.
				if !strings.Contains(text, `"{\"action\":{`) || strings.Contains(text, "\n{\"action\":{") {
					t.Errorf("the earlier decision is not quoted data:\n%s", text)
				}
				for _, r := range g.srv.Requests()[1:] {
					if strings.Contains(r.UserText(), "EARLIER DECISION") {
						t.Error("a later stage was shown the pattern")
					}
				}
			}
			if got := reason.CrystallizationReason(out.Trace.CrystallizationReason); got == reason.PatternMatch && tc.reason != reason.PatternMatch {
				t.Errorf("reason %s, want no pattern match", got)
			}
			if tc.reason == reason.PatternMatch && (out.Trace.CrystallizationReason != string(reason.PatternMatch) || out.Trace.ChainLength != 1) {
				t.Errorf("reason %s length %d, want PatternMatch after one call", out.Trace.CrystallizationReason, out.Trace.ChainLength)
			}
		})
	}
}

func TestSimilarity(t *testing.T) {
	for _, tc := range []struct {
		a, b []string
		want float64
	}{{nil, nil, 0}, {[]string{"a", "b"}, []string{"a", "b"}, 1}, {[]string{"a", "b"}, []string{"b", "c"}, 1.0 / 3}, {[]string{"a"}, nil, 0}} {
		if got := reason.Similarity(tc.a, tc.b); got != tc.want {
			t.Errorf("Similarity(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	env := envelope(ora.ProgramSafeOPSDecision)
	s := issue("sig-x", "Checkout returns 500, see https://example.com/x; CHECKOUT again")
	if got := strings.Join(reason.TextWords(env, &s), " "); got != "500 again checkout opened returns see" {
		t.Errorf("TextWords = %q", got)
	}
}

func TestSpendCap(t *testing.T) {
	t.Run("cap reached before the wave blocks it", func(t *testing.T) {
		cfg := testConfig()
		cfg.DailySpendCapUSD = 1
		f := newFixture(t, cfg)
		if _, err := f.spend.Add(context.Background(), reason.Day(now), 1.0); err != nil {
			t.Fatal(err)
		}
		out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Result.Status != ora.ReasoningBlocked || !hasDiag(out, reason.DiagSpendCap) || len(f.srv.Requests()) != 0 {
			t.Errorf("status %s after %d calls", out.Result.Status, len(f.srv.Requests()))
		}
	})
	t.Run("cap reached mid-chain stops it", func(t *testing.T) {
		cfg := testConfig()
		cfg.DailySpendCapUSD = 1
		s1 := stage(0.5, 8, "a", safeOPS)
		s1.Usage = &bedrocktest.Usage{InputTokens: 100_000, OutputTokens: 50_000} // 0.33 + 0.825 USD on the us. profile
		f := newFixture(t, cfg, s1)
		out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Result.Status != ora.ReasoningDegraded || out.Trace.CrystallizationReason != string(reason.SpendCap) || out.Trace.ChainLength != 1 {
			t.Errorf("status %s reason %s length %d", out.Result.Status, out.Trace.CrystallizationReason, out.Trace.ChainLength)
		}
		total, _ := f.spend.Total(context.Background(), reason.Day(now))
		if total < 1.1549 || total > 1.1551 || out.Trace.CostUSD != total {
			t.Errorf("spend = %v, trace cost %v, want 1.155", total, out.Trace.CostUSD)
		}
	})
}

func TestPerCallUsage(t *testing.T) {
	sig := signal("sig-u")
	packet := realisticPacket("sig-u")
	long := "The signal reports a pull request opened against the deploy pipeline; the packet shows an open commitment to review such changes and no recent failures. Commenting is reversible and scoped. "
	f := newFixture(t, testConfig(), stage(0.55, 8, long, proposal(1)), stage(0.65, 9, long, proposal(2)), stage(0.75, 10, long, proposal(3)), stage(0.85, 11, long, proposal(4)))
	out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{Signal: &sig, Packet: &packet})
	if err != nil {
		t.Fatal(err)
	}
	var sum ora.Usage
	var cost float64
	for i, o := range out.Observations {
		sum = sum.Add(o.Usage)
		cost += o.CostUSD
		if i == 0 && (o.Usage.CacheWriteTokens == 0 || o.Usage.CacheReadTokens != 0) {
			t.Errorf("stage 1 usage %+v: want the prefix written to the cache", o.Usage)
		}
		if i > 0 && (o.Usage.CacheReadTokens != out.Observations[0].Usage.CacheWriteTokens || o.Usage.CacheWriteTokens != 0) {
			t.Errorf("stage %d usage %+v: want the prefix read from the cache", i+1, o.Usage)
		}
		t.Logf("stage %d: usage %+v cost %.5f USD", i+1, o.Usage, o.CostUSD)
	}
	if sum != out.Trace.Usage || cost < out.Trace.CostUSD-1e-12 || cost > out.Trace.CostUSD+1e-12 {
		t.Errorf("stages sum to %+v / %v, trace has %+v / %v", sum, cost, out.Trace.Usage, out.Trace.CostUSD)
	}
}

// TestCacheCheckpoints: a cache point is sent only where the prefix reaches
// the model's minimum (bedrock.Models); above it, stages 2-4 read the prefix
// from the cache.
func TestCacheCheckpoints(t *testing.T) {
	sig := signal("sig-c")
	small := ora.OrientationPacket{ID: "pkt-small", Digest: "d"}
	medium := realisticPacket("sig-c")
	medium.Bands[0].Facts = medium.Bands[0].Facts[:8] // with the system prompt and the tools: above Sonnet's 1,024 tokens, below Haiku's 4,096
	big := realisticPacket("sig-c")
	for i := 60; i < 120; i++ {
		big.Bands[0].Facts = append(big.Bands[0].Facts, realisticFact(i))
	}
	tests := []struct {
		name   string
		model  string
		packet ora.OrientationPacket
		cached bool
	}{
		{"haiku, small prompt", reason.DefaultFallbackModel, small, false},
		{"sonnet, medium prompt", reason.DefaultModel, medium, true},
		{"haiku, medium prompt", reason.DefaultFallbackModel, medium, false},
		{"haiku, big prompt", reason.DefaultFallbackModel, big, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Model, cfg.FallbackModels = tc.model, nil
			f := newFixture(t, cfg, stage(0.5, 8, "a", proposal(1)), stage(0.6, 9, "b", proposal(2)), stage(0.7, 10, "c", proposal(3)), stage(0.8, 11, "d", proposal(4)))
			p := tc.packet
			out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{Signal: &sig, Packet: &p})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range f.srv.Requests() {
				s, m := r.CachePoints()
				if tc.cached != (s+m > 0) {
					t.Errorf("stage %d: %d+%d cache points, want cached=%v", i+1, s, m, tc.cached)
				}
			}
			for i, o := range out.Observations {
				u := o.Usage
				switch {
				case !tc.cached && u.CacheReadTokens+u.CacheWriteTokens != 0:
					t.Errorf("stage %d usage %+v: nothing may be cached below the minimum", i+1, u)
				case tc.cached && i == 0 && u.CacheWriteTokens == 0:
					t.Errorf("stage 1 usage %+v: want a cache write", u)
				case tc.cached && i > 0 && (u.CacheReadTokens == 0 || u.CacheReadTokens != out.Observations[0].Usage.CacheWriteTokens):
					t.Errorf("stage %d usage %+v: want the prefix read from the cache", i+1, u)
				}
			}
		})
	}
}
