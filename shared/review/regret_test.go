package review_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/review"
)

type regretMetrics struct{ adds map[string]float64 }

func (m *regretMetrics) Add(name string, d float64, labels ...string) {
	m.adds[name+fmt.Sprint(labels)] += d
}
func (m *regretMetrics) Observe(string, float64, ...string) {}

// Record writes a regret for a wave a validator failed or a human rejected
// (orient's feedback, counted in decision_regret_total once however often
// Record runs), and none for a passed wave or a timed-out escalation.
func TestRecordRegret(t *testing.T) {
	tests := []struct {
		name       string
		outcome    string
		verdict    string
		validators []ora.Verdict
		escalate   bool
		wantSource string // "" for no regret
	}{
		{name: "a validator failed", outcome: review.OutcomeCompleted, verdict: `[{}]`, validators: []ora.Verdict{ora.Pass, ora.Fail}, wantSource: "validator"},
		{name: "every validator passed", outcome: review.OutcomeCompleted, verdict: `[{}]`, validators: []ora.Verdict{ora.Pass, ora.Pass}},
		{name: "a human rejected", outcome: review.OutcomeRejected, escalate: true, verdict: `{"verdict":"rejected","by":"ada","reason":"wrong repo"}`, wantSource: "human"},
		{name: "nobody answered in time", outcome: review.OutcomeRejected, escalate: true, verdict: `{"Error":"States.Timeout","Cause":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, 0.3)
			m := &regretMetrics{adds: map[string]float64{}}
			profiles := orient.NewProfiles(f.db, func(o *orient.Options) { o.Metrics = m })
			svc := review.New(f.db, func(o *review.Options) { o.Regret = profiles.RecordRegret })
			if tt.escalate {
				if _, err := f.svc.Escalate(ctx, "s1", "d1", "tok"); err != nil {
					t.Fatal(err)
				}
			}
			for i, v := range tt.validators {
				name := []ora.Validator{ora.ValidatorTechnical, ora.ValidatorSafety}[i]
				e, _ := ora.NewEntry("s1", ora.KindValidatorResult, string(name), ora.ValidatorResult{Validator: name, Verdict: v, Summary: "s", DecisionID: "d1"})
				if _, err := f.db.Append(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 { // a retried Record counts once
				if _, err := svc.Record(ctx, "s1", "d1", tt.outcome, json.RawMessage(tt.verdict)); err != nil {
					t.Fatal(err)
				}
			}
			fb, err := profiles.Feedback(ctx, "s1")
			if err != nil {
				t.Fatal(err)
			}
			var regrets []ora.Feedback
			for _, x := range fb {
				if x.DecisionRegret {
					regrets = append(regrets, x)
				}
			}
			want := 0
			if tt.wantSource != "" {
				want = 1
			}
			if len(regrets) != want || m.adds[orient.MetricDecisionRegret+"[]"] != float64(want) {
				t.Fatalf("regrets %+v, decision_regret_total %v; want %d", regrets, m.adds, want)
			}
			if want == 1 && (regrets[0].Source != tt.wantSource || regrets[0].OperatorFeedback == "") {
				t.Errorf("regret %+v, want source %s with a reason", regrets[0], tt.wantSource)
			}
			if tt.wantSource == "validator" && fmt.Sprint(regrets[0].MissedSignalFlags) != "[safety]" {
				t.Errorf("regret flags %v, want the failing validator [safety]", regrets[0].MissedSignalFlags)
			}
		})
	}
}
