package operate_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

func TestClassify(t *testing.T) {
	cases := []struct{ name, class, tax string }{
		{"ScopeViolation", "app", "APP-SPEC"},
		{"ProvenanceError", "app", "APP-SPEC"},
		{"ActionFailed", "app", "APP-BUILD"},
		{"OutcomeUnknown", "mixed", "MIXED-UNKNOWN-OUTCOME"},
		{"ValidationFailed", "mixed", "MIXED-DRIFT"},
		{"States.Timeout", "motor", "MOTOR-PERF"},
		{"InternalError", "motor", "MOTOR-RULES"},
		{"States.Runtime", "motor", "MOTOR-RULES"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			class, tax := operate.Classify(tc.name)
			if class != tc.class || tax != tc.tax {
				t.Errorf("got %s/%s, want %s/%s", class, tax, tc.class, tc.tax)
			}
		})
	}
}

func TestOperate(t *testing.T) {
	cases := []struct {
		name       string
		status     []ora.DecisionStatus // transitions from decided before the failure
		wantStatus ora.DecisionStatus
	}{
		{"executing decision fails", []ora.DecisionStatus{ora.StatusExecuting}, ora.StatusFailed},
		{"already failed stays failed", []ora.DecisionStatus{ora.StatusExecuting, ora.StatusFailed}, ora.StatusFailed},
		{"decided is left alone", nil, ora.StatusDecided},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := acttest.DB(t)
			acttest.Record(t, db, acttest.Decision("d1", "s1", ora.Scope{AllowedOperations: []string{"notify"}}, ora.Action{Type: "notify"}))
			from := ora.StatusDecided
			for _, to := range tc.status {
				if _, err := db.TransitionDecision(ctx, "d1", from, to, ""); err != nil {
					t.Fatal(err)
				}
				from = to
			}
			svc := operate.New(db)
			f := operate.Failure{Error: "ActionFailed", Cause: `{"errorMessage":"http.request: POST answered 502","errorType":"ActionFailed"}`}
			for run := range 2 { // a retry is harmless
				out, err := svc.Operate(ctx, "s1", "d1", f)
				if err != nil {
					t.Fatalf("Operate #%d: %v", run, err)
				}
				if out.Error != "ActionFailed" || out.Cause != "http.request: POST answered 502" {
					t.Errorf("Operate #%d: got %+v, want the error and its message", run, out)
				}
			}
			if got := acttest.Status(t, db, "d1"); got != tc.wantStatus {
				t.Errorf("status: got %s, want %s", got, tc.wantStatus)
			}
			entries, err := db.Entries(ctx, "s1")
			if err != nil {
				t.Fatal(err)
			}
			var rec operate.Record
			var v operate.Verdict
			n := 0
			for _, e := range entries {
				switch e.Kind {
				case ora.KindOperatorDecision:
					n++
					_ = json.Unmarshal(e.Body, &rec)
				case ora.KindFinalVerdict:
					n++
					_ = json.Unmarshal(e.Body, &v)
				}
			}
			if n != 2 {
				t.Fatalf("operator-decision and final-verdict entries: got %d, want 2", n)
			}
			if rec.Classification != "app" || len(rec.ActionPlan) != 1 || rec.ActionPlan[0].Step != "fail" || rec.DecisionID == "" {
				t.Errorf("record: got %+v, want app with plan [fail]", rec)
			}
			if v.Outcome != "failed" || v.Error != "ActionFailed" {
				t.Errorf("final verdict: got %+v, want failed ActionFailed", v)
			}
		})
	}
}

// An action whose outcome cannot be known is never recorded as failed: the
// verdict is unknown, the plan asks the operator, the decision stays unknown.
func TestOperateOutcomeUnknownAsksTheOperator(t *testing.T) {
	ctx := context.Background()
	db := acttest.DB(t)
	acttest.Record(t, db, acttest.Decision("d1", "s1", ora.Scope{AllowedOperations: []string{"notify"}}, ora.Action{Type: "notify"}))
	for _, st := range [][2]ora.DecisionStatus{{ora.StatusDecided, ora.StatusExecuting}, {ora.StatusExecuting, ora.StatusUnknown}} {
		if _, err := db.TransitionDecision(ctx, "d1", st[0], st[1], ""); err != nil {
			t.Fatal(err)
		}
	}
	f := operate.Failure{Error: "OutcomeUnknown", Cause: `{"errorMessage":"outcome unknown: no answer","errorType":"OutcomeUnknown"}`}
	if _, err := operate.New(db).Operate(ctx, "s1", "d1", f); err != nil {
		t.Fatal(err)
	}
	if got := acttest.Status(t, db, "d1"); got != ora.StatusUnknown {
		t.Errorf("status %s, want unknown", got)
	}
	entries, _ := db.Entries(ctx, "s1")
	for _, e := range entries {
		switch e.Kind {
		case ora.KindOperatorDecision:
			var rec operate.Record
			_ = json.Unmarshal(e.Body, &rec)
			if len(rec.ActionPlan) != 1 || rec.ActionPlan[0] != (operate.Step{Step: "ask", Target: "operator"}) {
				t.Errorf("plan %+v, want [ask operator]", rec.ActionPlan)
			}
		case ora.KindFinalVerdict:
			var v operate.Verdict
			_ = json.Unmarshal(e.Body, &v)
			if v.Outcome != "unknown" {
				t.Errorf("verdict %+v, want unknown", v)
			}
		}
	}
}

func TestOperateNeedsSignal(t *testing.T) {
	_, err := operate.New(acttest.DB(t)).Operate(context.Background(), "", "d1", operate.Failure{Error: "X"})
	if got, want := ora.ErrorField(err), "signal_id"; got != want {
		t.Errorf("field: got %q, want %q", got, want)
	}
}
