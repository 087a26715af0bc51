package operate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// verdict writes a wave's final verdict.
func verdict(t *testing.T, l ora.Ledger, wave, outcome string) {
	t.Helper()
	e, err := ora.NewEntry(wave, ora.KindFinalVerdict, "", operate.Verdict{Outcome: outcome, At: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// An incident resumed with a fix whose wave completed is a learned pattern;
// one resumed as is, or whose wave failed after, is not. A motor carrying the
// pattern classifies the next matching failure by it.
func TestLearnedPatterns(t *testing.T) {
	for _, st := range acttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			ctx := context.Background()
			l := st.Open(t).Ledger
			m := &fakeMotors{current: "1.0.0", proposed: map[string][]string{"1.1.0": nil}}
			var carried []operate.Pattern
			clk := &clock{t: time.Now().UTC().Truncate(time.Second)}
			svc := operate.New(l, func(o *operate.Options) {
				o.Now, o.Promote, o.Resumer = clk.now, m.promote, &fakeResumer{}
				o.Motor = func(context.Context) (operate.Motor, error) {
					return operate.Motor{Version: m.current, Learned: carried}, nil
				}
			})
			// Fixed by an app patch, completed: a pattern.
			pausedWave(t, ctx, l, svc, "fixed", "app")
			if _, err := svc.Resume(ctx, "fixed", operate.ResumeRequest{Patch: titlePatch, By: "olga"}); err != nil {
				t.Fatal(err)
			}
			verdict(t, l, "fixed", "completed")
			// Resumed as is: nothing was fixed.
			pausedWave(t, ctx, l, svc, "as-is", "transient")
			if _, err := svc.Resume(ctx, "as-is", operate.ResumeRequest{By: "olga"}); err != nil {
				t.Fatal(err)
			}
			verdict(t, l, "as-is", "completed")
			// Fixed by a motor version, but the wave failed after: not confirmed.
			pausedWave(t, ctx, l, svc, "failed-after", "mixed")
			if _, err := svc.Resume(ctx, "failed-after", operate.ResumeRequest{MotorVersion: "1.1.0", By: "olga"}); err != nil {
				t.Fatal(err)
			}
			verdict(t, l, "failed-after", "failed")

			ps, err := svc.Patterns(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := operate.PatternID(operate.AppSpec, "Reason", "InvalidInput")
			if len(ps) != 1 || ps[0].ID != want || ps[0].Classification != "app" || ps[0].Wave != "fixed" || ps[0].Confirmed != 1 ||
				!strings.HasPrefix(ps[0].Fix, "app-patch:input@") || ps[0].Motor != "" {
				t.Fatalf("patterns: %+v, want one candidate %s fixed by the input patch", ps, want)
			}
			if _, err := svc.Pattern(ctx, "pattern-none"); ora.ErrorCode(err) != ora.ENOTFOUND {
				t.Errorf("unknown pattern: %v", err)
			}

			// The motor carries a pattern that calls InternalError at Reason an
			// app spec fault: the heuristics' MOTOR-RULES gives way to it.
			lp := operate.Pattern{ID: operate.PatternID(operate.AppSpec, "Reason", "InternalError"), Classification: "app", Taxonomy: operate.AppSpec,
				Stage: "Reason", Error: "InternalError", Fix: "app-patch:input@0123"}
			carried = []operate.Pattern{ps[0], lp}
			pausedWave(t, ctx, l, svc, "next", "app")
			out := pausedWave(t, ctx, l, svc, "matching", "motor")
			if out.Classification != "app" || out.Taxonomy != operate.AppSpec || !strings.Contains(record(t, l, "matching", out.OperatorDecisionID).Rule, "learned pattern "+lp.ID) {
				t.Errorf("a failure the motor learned: %+v, want app/APP-SPEC by the learned pattern", out)
			}
			if ps, _ := svc.Patterns(ctx); len(ps) != 1 || ps[0].Motor != "1.1.0" {
				t.Errorf("after the motor carries it: %+v, want it in motor 1.1.0", ps)
			}
		})
	}
}
