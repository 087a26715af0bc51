package motor_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/rules"
)

// The recorder exports decided waves (signal, packet, decision, verdict and
// the versions they ran under) from either store; an undecided wave is left
// out, an escalated one is recorded as such, one decided under an
// operator's input patch is exported with the signal as the decision read
// it, and a replay under the recording motor changes nothing.
func TestRecorder(t *testing.T) {
	set, err := rules.Parse(defaultrules.Default)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range acttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			ctx := context.Background()
			l := st.Open(t).Ledger
			now := time.Now().UTC()
			wave := func(id, confidence string, decide, escalate bool, patch *ora.AppPatch) {
				t.Helper()
				payload := `{"confidence":"` + confidence + `"}`
				sig := ora.NormalizedSignal{ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: "demo", Provider: "hmac"},
					Timestamp: now, NormalizedAt: now, Payload: json.RawMessage(payload), DedupKey: "d-" + id, RawDigest: ora.Digest([]byte(payload))}
				e, _ := ora.NewEntry(id, ora.KindSignalReceived, "", sig)
				if _, err := l.Append(ctx, e); err != nil {
					t.Fatal(err)
				}
				if !decide {
					return
				}
				if _, err := orient.NewCompiler(l).Compile(ctx, id); err != nil {
					t.Fatal(err)
				}
				in, err := orient.Input(ctx, l, id)
				if err != nil {
					t.Fatal(err)
				}
				if patch != nil {
					if in.Signal.Payload, err = patch.ApplyInput(in.Signal.Payload); err != nil {
						t.Fatal(err)
					}
				}
				d, err := rules.New(set).Reason(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				d.MotorVersion, d.AppVersion, d.AppPatch = set.Version(), "1.0.0+abc", patch
				if _, err := l.RecordDecision(ctx, d); err != nil {
					t.Fatal(err)
				}
				if escalate {
					ai, _ := ora.NewEntry(id, ora.KindArchitectIntent, d.ID+"/intent", map[string]string{"decision_id": d.ID})
					ai.AuthorType = ora.AuthorArchitect
					if _, err := l.Append(ctx, ai); err != nil {
						t.Fatal(err)
					}
				}
			}
			wave("r-high", "high", true, false, nil)
			wave("r-low", "low", true, true, nil)
			wave("r-undecided", "high", false, false, nil)
			wave("r-patched", "low", true, false, &ora.AppPatch{Kind: ora.PatchInput, Target: "confidence", Value: json.RawMessage(`"high"`), Digest: "3f2a"})

			rc := motor.Recorder{Ledger: l}
			got, err := rc.Waves(ctx, now.Add(-time.Hour), "", 0)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]motor.Recorded{}
			for _, w := range got {
				byName[w.Name] = w
			}
			if len(got) != 3 || byName["r-high"].Expect != (motor.Expect{Action: "notify", Band: "high", Verdict: "completed"}) ||
				byName["r-patched"].Expect != (motor.Expect{Action: "notify", Band: "high", Verdict: "completed"}) ||
				byName["r-low"].Expect != (motor.Expect{Action: "commitment.open", Band: "low", Verdict: "escalated"}) {
				t.Fatalf("recorded: %+v", got)
			}
			if w := byName["r-high"]; w.MotorVersion != set.Version() || w.AppVersion != "1.0.0+abc" || w.Packet.Digest == "" || w.Signal.ID != "r-high" {
				t.Errorf("r-high: motor %q app %q packet %q signal %q", w.MotorVersion, w.AppVersion, w.Packet.Digest, w.Signal.ID)
			}
			one, err := rc.Waves(ctx, time.Time{}, "r-low", 0)
			if err != nil || len(one) != 1 || one[0].Name != "r-low" {
				t.Errorf("one wave: %+v, %v", one, err)
			}
			if _, err := rc.Waves(ctx, time.Time{}, "r-undecided", 0); ora.ErrorCode(err) != ora.ENOTFOUND {
				t.Errorf("an undecided wave: %v, want ENOTFOUND", err)
			}
			var golden []motor.GoldenWave
			for _, w := range got {
				golden = append(golden, w.GoldenWave)
			}
			rep, err := motor.Replay(ctx, motor.Bundle{Version: set.Version(), Rules: string(defaultrules.Default)}, golden)
			if err != nil || len(rep.Failing) != 0 {
				t.Errorf("replay under the recording motor: %+v, %v", rep, err)
			}
		})
	}
}
