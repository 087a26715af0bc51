package operate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// A person's correction of a classification is kept beside the
// classifier's answer and lowers the classification accuracy of the motor
// version the incident was seen under, and of no other; both ledgers.
func TestReclassifyMovesAccuracy(t *testing.T) {
	for _, st := range acttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			ctx := context.Background()
			l := st.Open(t).Ledger
			clk := &clock{t: time.Now().UTC().Truncate(time.Second)}
			motor := operate.Motor{Version: "1.0.0"}
			svc := operate.New(l, func(o *operate.Options) {
				o.Now = clk.now
				o.Motor = func(context.Context) (operate.Motor, error) { return motor, nil }
			})
			fail := func(wave, errName string) operate.Outcome {
				t.Helper()
				signal(t, l, wave, "alpha")
				out, err := svc.Operate(ctx, operate.Input{SignalID: wave, Wave: json.RawMessage(`{"plan":{},"packet":{}}`),
					Failure: operate.Failure{Error: errName, Cause: `{"errorMessage":"boom"}`}, EnteredAt: "t"})
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			a := fail("w1", "InternalError") // MOTOR-RULES under 1.0.0
			fail("w2", "InvalidInput")       // APP-SPEC under 1.0.0
			motor = operate.Motor{Version: "1.1.0"}
			fail("w3", "ActionFailed") // APP-BUILD under 1.1.0

			_, sum, err := svc.Incidents(ctx)
			if err != nil || sum.ClassificationAccuracy != 1 || sum.ByMotor["1.0.0"].Incidents != 2 || sum.ByMotor["1.1.0"].Incidents != 1 {
				t.Fatalf("before any correction: %+v, %v", sum, err)
			}
			for _, bad := range []struct{ taxonomy, reason, field string }{
				{"WRONG", "x", "taxonomy"},
				{operate.AppSpec, " ", "reason"},
			} {
				if _, err := svc.Reclassify(ctx, a.IncidentID, bad.taxonomy, "ada", bad.reason); ora.ErrorField(err) != bad.field {
					t.Errorf("Reclassify %q %q: %v, want EINVALID %s", bad.taxonomy, bad.reason, err, bad.field)
				}
			}
			if _, err := svc.Reclassify(ctx, "incident-none", operate.AppSpec, "ada", "x"); ora.ErrorCode(err) != ora.ENOTFOUND {
				t.Errorf("Reclassify an unknown incident: %v, want ENOTFOUND", err)
			}
			inc, err := svc.Reclassify(ctx, a.IncidentID, operate.AppSpec, "ada", "the webhook lacked the issue number")
			if err != nil || inc.Override == nil || inc.Override.Classification != operate.ClassApp || inc.Override.By != "ada" || inc.Classification != operate.ClassMotor {
				t.Fatalf("Reclassify: %+v, %v; want the override beside the classifier's motor", inc, err)
			}
			_, sum, _ = svc.Incidents(ctx)
			if sum.Overridden != 1 || sum.ByMotor["1.0.0"].ClassificationAccuracy != 0.5 || sum.ByMotor["1.1.0"].ClassificationAccuracy != 1 {
				t.Errorf("after one correction: %+v", sum)
			}
			if want := 2.0 / 3.0; sum.ClassificationAccuracy < want-1e-9 || sum.ClassificationAccuracy > want+1e-9 {
				t.Errorf("accuracy over all incidents %v, want 2/3", sum.ClassificationAccuracy)
			}
		})
	}
}

// A TransientError at Act (an action whose lock a crashed run holds) is
// retried by the operator, under its defaults, for longer than the longest
// lock, so an automatic retry gets to run the action again under its key
// before the wave pauses for a person.
func TestActRetriesOutlastTheLock(t *testing.T) {
	ctx := context.Background()
	l := acttest.Stores[0].Open(t).Ledger
	svc := operate.New(l, func(o *operate.Options) { o.AutoResumeTransient = true })
	signal(t, l, "w-lock", "alpha")
	total := 0
	for i := range 4 {
		out, err := svc.Operate(ctx, operate.Input{SignalID: "w-lock", Wave: json.RawMessage(`{"decision":{"band":"high","decision_id":"d-lock"}}`),
			Failure: operate.Failure{Error: "TransientError", Cause: "action d-lock/0 is in progress under another run"}, EnteredAt: fmt.Sprint("t-", i)})
		if err != nil {
			t.Fatal(err)
		}
		if out.ResumeAt != "Act" && out.Action != "pause" {
			t.Fatalf("retry %d: %+v, want a retry at Act", i, out)
		}
		total += out.BackoffSeconds
	}
	if lock := operate.ActLockWait.Seconds(); float64(total) <= lock {
		t.Errorf("the operator's retries of Act wait %ds in all, not longer than the longest lock (%.0fs)", total, lock)
	}
}
