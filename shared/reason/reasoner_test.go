package reason_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

func signal(id string) ora.NormalizedSignal {
	raw := []byte(`{"action":"opened","number":7}`)
	return ora.NormalizedSignal{
		ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: "github", Provider: "github", EventType: "pull_request"},
		Timestamp: now, NormalizedAt: now, DedupKey: "k-" + id, Payload: json.RawMessage(`{"action":"opened","number":7,"id":"` + id + `"}`),
		Raw: raw, RawDigest: ora.Digest(raw),
	}
}

func newReasoner(t *testing.T, cfg reason.Config, replies ...bedrocktest.Reply) (*reason.Reasoner, *bedrocktest.Server, *memSpend) {
	t.Helper()
	srv := bedrocktest.New(t, replies...)
	spend := &memSpend{}
	r, err := reason.NewReasoner(bedrock.New(srv.Client(3)), cfg, func(o *reason.Options) {
		o.Spend, o.Now = spend, func() time.Time { return now }
	})
	if err != nil {
		t.Fatalf("NewReasoner: %v", err)
	}
	return r, srv, spend
}

func input(id string) ora.ReasonerInput {
	return ora.ReasonerInput{Signal: signal(id), Packet: ora.OrientationPacket{ID: "pkt-" + id, Digest: "digest-" + id, TokenBudget: 150000}}
}

func withVerdict(verdict string) map[string]any {
	m := map[string]any{}
	for k, v := range safeOPS {
		m[k] = v
	}
	m["allowed_action"] = verdict
	return m
}

func TestReasonMapsTheCrystallizedObservation(t *testing.T) {
	tests := []struct {
		name     string
		replies  []bedrocktest.Reply
		wantConf float64
		status   ora.ReasoningStatus
		abort    bool
	}{
		{"proceed keeps the confidence", []bedrocktest.Reply{stage(0.97, 3, "comment on the PR", withVerdict("PROCEED"))}, 0.97, ora.ReasoningOK, false},
		{"warn caps at review", []bedrocktest.Reply{stage(0.97, 3, "risky", withVerdict("WARN"))}, 0.8, ora.ReasoningOK, false},
		{"abort is recorded as none", []bedrocktest.Reply{stage(0.97, 3, "unsafe", withVerdict("ABORT"))}, 0.97, ora.ReasoningOK, true},
		{"unusable later stage goes to a human", []bedrocktest.Reply{stage(0.5, 8, "a", safeOPS), {Text: "garbage"}}, 0.49, ora.ReasoningDegraded, false},
		{"unusable later stage caps high confidence", []bedrocktest.Reply{stage(0.9, 8, "a", safeOPS), {Text: "garbage"}}, 0.49, ora.ReasoningDegraded, false},
		{"degraded (fallback) caps at review", []bedrocktest.Reply{bedrocktest.Throttle(), bedrocktest.Throttle(), bedrocktest.Throttle(), stage(0.97, 3, "x", safeOPS)}, 0.8, ora.ReasoningDegraded, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _, _ := newReasoner(t, testConfig(), tc.replies...)
			d, err := r.Reason(context.Background(), input("sig-1"))
			if err != nil {
				t.Fatalf("Reason: %v", err)
			}
			if err := d.Validate(); err != nil {
				t.Fatalf("decision does not validate: %v", err)
			}
			wantType, wantTier, wantParams := "notify", 2, `{"message":"ack","subject":"PR 7"}`
			if tc.abort {
				// ABORT runs nothing, whoever approves it.
				wantType, wantTier = "none", 1
				wantParams = `{"reason":"ABORT: the model judged it unsafe to proceed; nothing is done (it had proposed notify {\"message\":\"ack\",\"subject\":\"PR 7\"})."}`
			}
			if d.ID != reason.DecisionID("sig-1") || d.SignalID != "sig-1" || d.ActionType != wantType || d.Tier != wantTier || d.AuthorType != ora.AuthorArchitect ||
				len(d.Scope.AllowedOperations) != 1 || d.Scope.AllowedOperations[0] != wantType || string(d.Parameters) != wantParams || d.PacketDigest != "digest-sig-1" {
				t.Errorf("decision = %+v, parameters %s", d, d.Parameters)
			}
			if math.Abs(d.Confidence-tc.wantConf) > 1e-9 {
				t.Errorf("confidence = %v, want %v", d.Confidence, tc.wantConf)
			}
			m := d.Model
			if m == nil || m.Status != tc.status || m.ChainLength == 0 || m.CrystallizationReason == "" || m.Usage.InputTokens+m.Usage.CacheWriteTokens == 0 || m.CostUSD <= 0 || m.EnvelopeDigest == "" || m.MotorVersion == "" {
				t.Errorf("model trace = %+v", m)
			}
		})
	}
}

func TestReasonNeverActsOnBadOutput(t *testing.T) {
	tests := []struct {
		name    string
		replies []bedrocktest.Reply
		code    string
		status  ora.ReasoningStatus
	}{
		{"no tool call", []bedrocktest.Reply{{Text: "sure, do it"}}, ora.EINTERNAL, ora.ReasoningFailed},
		{"invalid JSON", []bedrocktest.Reply{bedrocktest.Tool(reason.ObservationTool, json.RawMessage(`"{not json"`))}, ora.EINTERNAL, ora.ReasoningFailed},
		{"confidence out of range", []bedrocktest.Reply{stage(2, 3, "x", safeOPS)}, ora.EINTERNAL, ora.ReasoningFailed},
		{"tool outside the list", []bedrocktest.Reply{{ToolUses: []bedrocktest.ToolUse{{ToolUseID: "t", Name: "oa.deploy", Input: json.RawMessage(`{}`)}}}}, ora.EFORBIDDEN, ora.ReasoningBlocked},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Bad output comes from a model without strict tool use.
			r, _, _ := newReasoner(t, looseConfig(), tc.replies...)
			d, err := r.Reason(context.Background(), input("sig-1"))
			if ora.ErrorCode(err) != tc.code {
				t.Fatalf("err = %v (code %s), want %s", err, ora.ErrorCode(err), tc.code)
			}
			var re *reason.ResultError
			if !errors.As(err, &re) || re.Outcome.Result.Status != tc.status {
				t.Fatalf("err %T, want *ResultError with status %s", err, tc.status)
			}
			if d.ActionType != "" || d.ID != "" {
				t.Errorf("a decision came back: %+v", d)
			}
		})
	}
}

func TestReasonRejectsBadSignal(t *testing.T) {
	r, _, _ := newReasoner(t, testConfig())
	in := input("sig-1")
	in.Signal.ID = ""
	if _, err := r.Reason(context.Background(), in); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("err = %v, want EINVALID", err)
	}
}

// TestCostPerDecision runs a typical four-stage wave against the fake Bedrock,
// whose simulated usage caches the stable prefix (system prompt, envelope,
// signal, packet), and checks the recorded cost is usage x the default price
// table. The figures it logs are the README's cost per decision.
func TestCostPerDecision(t *testing.T) {
	in := input("sig-cost")
	in.Packet = realisticPacket("sig-cost")
	long := "The signal reports a pull request opened against the deploy pipeline; the packet shows an open commitment to review such changes and no recent failures. Commenting is reversible and scoped. "
	r, srv, spend := newReasoner(t, testConfig(),
		stage(0.55, 8, long, proposal(1)), stage(0.65, 9, long, proposal(2)), stage(0.75, 10, long, proposal(3)), stage(0.85, 11, long, proposal(4)))
	dec, err := r.Reason(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	m := dec.Model
	if m.ChainLength != 4 || len(srv.Requests()) != 4 {
		t.Fatalf("chain length %d, want 4", m.ChainLength)
	}
	if m.Usage.CacheReadTokens == 0 || m.Usage.CacheWriteTokens == 0 {
		t.Errorf("usage %+v: the prefix was not cached", m.Usage)
	}
	want := reason.DefaultPrices()[reason.DefaultModel].Cost(m.Usage)
	if math.Abs(m.CostUSD-want) > 1e-12 {
		t.Errorf("cost = %v, want %v", m.CostUSD, want)
	}
	total, _ := spend.Total(context.Background(), reason.Day(now))
	if math.Abs(total-m.CostUSD) > 1e-12 {
		t.Errorf("spend meter %v, want the decision's cost %v", total, m.CostUSD)
	}
	noCache := reason.DefaultPrices()[reason.DefaultModel].Cost(ora.Usage{InputTokens: m.Usage.InputTokens + m.Usage.CacheReadTokens + m.Usage.CacheWriteTokens, OutputTokens: m.Usage.OutputTokens})
	t.Logf("4-stage decision: usage %+v, cost %.5f USD (without caching %.5f USD)", m.Usage, m.CostUSD, noCache)
}

// realisticPacket is an orientation packet of 60 distinct facts, ~2,600
// tokens in its view.
func realisticPacket(id string) ora.OrientationPacket {
	var facts []ora.Fact
	for i := 0; i < 60; i++ {
		facts = append(facts, realisticFact(i))
	}
	return ora.OrientationPacket{ID: "pkt-" + id, Digest: "digest-" + id, TokenBudget: 150000, Bands: []ora.PacketBand{{BandBudget: ora.BandBudget{Band: ora.BandSituational}, Facts: facts}}}
}

// realisticFact is the i-th fact of realisticPacket, each one different.
func realisticFact(i int) ora.Fact {
	n := fmt.Sprintf(`{"summary":"commitment %d to review the deploy pipeline change before Friday, owner platform team, status open, linked PR %d and incident %d"}`, i, 1200+i, 500+i)
	return ora.Fact{ID: fmt.Sprintf("fact-%02d", i), SourceType: "ledger", Normalized: json.RawMessage(n), Utility: 0.5, EstimatedTokens: 100}
}
