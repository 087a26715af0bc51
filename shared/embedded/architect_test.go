package embedded

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// TestArchitectModeWaitsForAnAuditor: an architect-mode decision (a model's
// notify capped into the low band by the policy, or the intent-only
// OPSBlockGenerator program) is recorded as the architect's and does not
// run: the wave waits for a human with no execution evidence. Approving it
// sends it to the actor without a second reasoning pass: no more model
// calls, Reason entered once, one decision, the action run once.
func TestArchitectModeWaitsForAnAuditor(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	notify := bedrocktest.Tool(reason.ObservationTool, map[string]any{
		"content": "tell the operators", "layers": []string{"SIGNAL"}, "confidence": 0.97,
		"decision": map[string]any{"safety_check_summary": "a notification", "allowed_action": "PROCEED", "action": map[string]any{
			"type": act.TypeNotify, "parameters": map[string]any{"subject": "demo", "message": "status degraded"}, "tier": 1,
			"allowed_operations": []string{act.TypeNotify}, "forbidden_paths": []string{}, "author_type": "auditor"}, "then": []any{}},
	})
	block := bedrocktest.Tool(reason.ObservationTool, map[string]any{
		"content": "restart the worker", "layers": []string{"SIGNAL"}, "confidence": 0.97,
		"decision": map[string]any{"ops_block": []string{"systemctl restart worker"}, "complexity_score": 2, "risk_analysis": "a short outage"},
	})
	tests := []struct {
		name     string
		reply    bedrocktest.Reply
		programs []reason.ProgramRoute
		action   string
	}{
		{"a notify capped into the low band", notify, nil, act.TypeNotify},
		{"an OPS block", block, []reason.ProgramRoute{{Source: "demo", Program: ora.ProgramOPSBlockGenerator}}, act.TypeNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			fake := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply { return tc.reply })
			cfg := testConfig(t, t.TempDir())
			cfg.Reasoner.Kind, cfg.Reasoner.BedrockEndpoint, cfg.Reasoner.Region = "bedrock", fake.URL, "us-east-1"
			cfg.Reasoner.Bedrock.Batch.Window = 0
			cfg.Reasoner.Bedrock.Programs = tc.programs
			// notify permitted, at the default maximum confidence (0.49).
			cfg.Reasoner.Bedrock.Policy.Rules = []reason.PolicyRule{{Name: "demo", Source: "demo", Actions: []string{act.TypeNotify}, MinTier: 1}}
			r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			srv := httptest.NewServer(r.Handler())
			defer srv.Close()
			rec := send(t, r, srv.URL, "architect-"+tc.action, `{"status":"degraded"}`)
			decision := waitIntent(t, r, rec.SignalID)
			d := decisionOf(t, r, rec.SignalID)
			if d.ActionType != tc.action || d.Band() != ora.BandLow || d.AuthorType != ora.AuthorArchitect {
				t.Fatalf("decision %s at %.2f by %s, want %s in the low band by the architect", d.ActionType, d.Confidence, d.AuthorType, tc.action)
			}
			if n := count(t, r, rec.SignalID, ora.KindExecutionEvidence); n != 0 {
				t.Fatalf("%d actions ran before an auditor approved", n)
			}
			if state, err := r.ledger.Decision(ctx, decision); err != nil || state.Status != ora.StatusAwaitingApproval {
				t.Fatalf("decision status %+v, %v; want awaiting approval", state, err)
			}
			calls := len(fake.Requests())
			if _, err := r.verdicts().Settle(ctx, decision, true, "auditor@example.com", "looks right"); err != nil {
				t.Fatalf("approve: %v", err)
			}
			w, err := waves{r}.Wave(ctx, rec.WaveID)
			for deadline := time.Now().Add(30 * time.Second); err == nil && w.Status == "RUNNING" && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
				w, err = waves{r}.Wave(ctx, rec.WaveID)
			}
			if err != nil || w.Status != "SUCCEEDED" {
				t.Fatalf("wave after approval: %+v, %v", w, err)
			}
			if got := len(fake.Requests()); got != calls {
				t.Errorf("%d model calls after the approval, want none (no second reasoning pass)", got-calls)
			}
			if n := count(t, r, rec.SignalID, ora.KindReasonerDecision); n != 1 {
				t.Errorf("%d decisions, want 1", n)
			}
			if n := count(t, r, rec.SignalID, ora.KindExecutionEvidence); n != 1 {
				t.Errorf("%d execution-evidence entries, want 1 (the approved action, once)", n)
			}
			reasons := 0
			hist, _ := r.engine.GetExecutionHistory(ctx, r.executionArn(rec.WaveID))
			for _, ev := range hist {
				if ev.StateEnteredEventDetails != nil && ev.StateEnteredEventDetails.Name == "Reason" {
					reasons++
				}
			}
			for _, name := range r.children.Entered(r.executionArn(rec.WaveID)) {
				if name == "Reason" { // the stages an Express child ran
					reasons++
				}
			}
			if reasons != 1 {
				t.Errorf("Reason entered %d times, want once", reasons)
			}
		})
	}
}
