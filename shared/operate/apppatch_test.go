package operate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// githubIssue writes a signal whose payload has an empty issue title: the
// malformed field an input patch corrects.
func githubIssue(t *testing.T, l ora.Ledger, id string) {
	t.Helper()
	s := ora.NormalizedSignal{
		ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: "github", Provider: "hmac"},
		Timestamp: time.Now().UTC(), NormalizedAt: time.Now().UTC(), DedupKey: id,
		Payload:   json.RawMessage(`{"action":"opened","issue":{"number":7,"title":""}}`),
		RawDigest: ora.Digest([]byte(id)),
	}
	e, err := ora.NewEntry(id, ora.KindSignalReceived, "", s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// A resume checks that its app patch can take effect at the stage the wave
// resumes at, before anything is written: an input patch names a field of
// the signal's payload and resumes at Reason or before it; a spec patch is
// refused. The patch handed over is the one the stage receives.
func TestResumeAppPatchAppliesAtTheFailedStage(t *testing.T) {
	title := &operate.AppPatch{Kind: operate.PatchInput, Target: "issue.title", Value: json.RawMessage(`"Login fails with SSO"`)}
	rows := []struct {
		name   string
		wave   string // the execution's state at the Catch: says the failed stage
		patch  *operate.AppPatch
		code   string
		errHas string
	}{
		{name: "an input patch at Reason", wave: `{"plan":{},"packet":{}}`, patch: title},
		{name: "an input patch at Compile", wave: `{"plan":{}}`, patch: title},
		{name: "an input patch naming no field of the signal", wave: `{"plan":{},"packet":{}}`,
			patch: &operate.AppPatch{Kind: operate.PatchInput, Target: "issue.body", Value: json.RawMessage(`"x"`)}, code: ora.EINVALID, errHas: "patch.target: the signal's payload has no field issue.body"},
		{name: "an input patch through a field that is no object", wave: `{"plan":{},"packet":{}}`,
			patch: &operate.AppPatch{Kind: operate.PatchInput, Target: "action.name", Value: json.RawMessage(`"x"`)}, code: ora.EINVALID, errHas: "patch.target: action is not an object"},
		{name: "an input patch after the decision", wave: `{"plan":{},"packet":{},"decision":{"decision_id":"d1","band":"medium"}}`, patch: title, code: ora.EINVALID, errHas: "patch.kind: the wave resumes at Flag for review: an input patch changes the signal the wave decides on"},
		{name: "a mapping patch", wave: `{"plan":{}}`,
			patch: &operate.AppPatch{Kind: operate.PatchMapping, Target: "github", Value: json.RawMessage(`{"title":"$.issue.title"}`)}, code: ora.EINVALID, errHas: "patch.kind: the wave resumes at Fetch observations: no stage applies a mapping patch"},
		{name: "a spec patch", wave: `{"plan":{},"packet":{}}`,
			patch: &operate.AppPatch{Kind: operate.PatchSpec, Target: "http.request", Value: json.RawMessage(`{"url":"https://hooks.example.com/fixed"}`)}, code: ora.EINVALID, errHas: "patch.kind: the wave resumes at Reason: no stage applies a spec patch"},
	}
	for _, st := range acttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			for _, tc := range rows {
				t.Run(tc.name, func(t *testing.T) {
					ctx := context.Background()
					l := st.Open(t).Ledger
					res := &fakeResumer{}
					m := &fakeMotors{current: "1.0.0"}
					svc := operate.New(l, func(o *operate.Options) {
						o.Now, o.Motor, o.Resumer = (&clock{t: time.Now().UTC()}).now, m.motor, res
					})
					wave := "w-" + strings.ReplaceAll(tc.name, " ", "-")
					githubIssue(t, l, wave)
					out, err := svc.Operate(ctx, operate.Input{SignalID: wave, Wave: json.RawMessage(tc.wave), Failure: failureOf[operate.ClassApp], EnteredAt: "t1"})
					if err != nil || out.Action != "pause" {
						t.Fatalf("operate: %+v, %v", out, err)
					}
					if err := svc.Pause(ctx, wave, out.OperatorDecisionID, "tok"); err != nil {
						t.Fatal(err)
					}
					before, _ := l.Entries(ctx, wave)
					_, err = svc.Resume(ctx, wave, operate.ResumeRequest{Patch: tc.patch})
					if tc.code != "" {
						if ora.ErrorCode(err) != tc.code || !strings.Contains(err.Error(), tc.errHas) {
							t.Fatalf("got %v, want %s containing %q", err, tc.code, tc.errHas)
						}
						if after, _ := l.Entries(ctx, wave); len(after) != len(before) || len(res.sent) != 0 {
							t.Errorf("a refused patch wrote %d entries, sent %d tokens", len(after)-len(before), len(res.sent))
						}
						return
					}
					if err != nil {
						t.Fatalf("resume: %v", err)
					}
					var sent struct {
						AppPatch *ora.AppPatch `json:"app_patch"`
					}
					if err := json.Unmarshal(res.sent["tok"], &sent); err != nil || sent.AppPatch == nil {
						t.Fatalf("token output %s: no app_patch (%v)", res.sent["tok"], err)
					}
					if sent.AppPatch.Target != "issue.title" || string(sent.AppPatch.Value) != `"Login fails with SSO"` || len(sent.AppPatch.Digest) != 64 {
						t.Errorf("handed %+v, want the input patch with its digest", sent.AppPatch)
					}
				})
			}
		})
	}
}

// The patch a wave was resumed with stays in force: an automatic retry of a
// later transient failure hands it back (the state machine's operation is
// replaced by the operator's answer), and so does a later resume as is.
func TestAppPatchStaysInForce(t *testing.T) {
	for _, st := range acttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			ctx := context.Background()
			l := st.Open(t).Ledger
			res := &fakeResumer{}
			m := &fakeMotors{current: "1.0.0"}
			svc := operate.New(l, func(o *operate.Options) {
				o.Now, o.Motor, o.Resumer, o.AutoResumeTransient = (&clock{t: time.Now().UTC()}).now, m.motor, res, true
			})
			githubIssue(t, l, "w1")
			out, err := svc.Operate(ctx, operate.Input{SignalID: "w1", Wave: json.RawMessage(`{"plan":{},"packet":{}}`), Failure: failureOf[operate.ClassApp], EnteredAt: "t1"})
			if err != nil || out.Action != "pause" {
				t.Fatalf("operate: %+v, %v", out, err)
			}
			if err := svc.Pause(ctx, "w1", out.OperatorDecisionID, "tok1"); err != nil {
				t.Fatal(err)
			}
			r, err := svc.Resume(ctx, "w1", operate.ResumeRequest{Patch: &operate.AppPatch{Kind: operate.PatchInput, Target: "issue.title", Value: json.RawMessage(`"Login fails"`)}})
			if err != nil {
				t.Fatal(err)
			}
			var op struct {
				AppPatch *ora.AppPatch `json:"app_patch"`
			}
			_ = json.Unmarshal(res.sent["tok1"], &op)
			if op.AppPatch == nil {
				t.Fatalf("resume handed no patch: %s", res.sent["tok1"])
			}
			if !strings.Contains(r.Steps[0].Result, "Reason reads the signal with it") {
				t.Errorf("apply_patch result %q does not say which stage applies it", r.Steps[0].Result)
			}
			resumed, _ := json.Marshal(map[string]any{"plan": map[string]any{}, "packet": map[string]any{}, "operation": map[string]any{"app_patch": op.AppPatch}})

			retry, err := svc.Operate(ctx, operate.Input{SignalID: "w1", Wave: resumed, Failure: failureOf["transient"], EnteredAt: "t2"})
			if err != nil || retry.Action != "retry" {
				t.Fatalf("operate: %+v, %v", retry, err)
			}
			if retry.AppPatch == nil || retry.AppPatch.Digest != op.AppPatch.Digest {
				t.Errorf("an automatic retry hands %+v, want the patch in force %s", retry.AppPatch, op.AppPatch.Digest)
			}

			again, err := svc.Operate(ctx, operate.Input{SignalID: "w1", Wave: resumed, Failure: operate.Failure{Error: "NotFound", Cause: "no such issue"}, EnteredAt: "t3"})
			if err != nil || again.Action != "pause" {
				t.Fatalf("operate: %+v, %v", again, err)
			}
			if err := svc.Pause(ctx, "w1", again.OperatorDecisionID, "tok2"); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Resume(ctx, "w1", operate.ResumeRequest{AsIs: true}); err != nil {
				t.Fatal(err)
			}
			var op2 struct {
				AppPatch *ora.AppPatch `json:"app_patch"`
			}
			_ = json.Unmarshal(res.sent["tok2"], &op2)
			if op2.AppPatch == nil || op2.AppPatch.Digest != op.AppPatch.Digest {
				t.Errorf("a resume as is hands %s, want the patch in force %s", res.sent["tok2"], op.AppPatch.Digest)
			}
		})
	}
}

// Every row of PatchPolicy, at every stage a wave resumes at: each kind of
// patch (input, mapping, spec) for a wave that failed at each stage, before
// its decision and after it. A patch is either handed to the stage that runs
// again (and recorded with its sha256) or refused with nothing written: none
// is accepted and then ignored.
func TestPatchPolicy(t *testing.T) {
	patches := map[string]*operate.AppPatch{
		operate.PatchInput:   {Kind: operate.PatchInput, Target: "issue.title", Value: json.RawMessage(`"Login fails with SSO"`)},
		operate.PatchMapping: {Kind: operate.PatchMapping, Target: "github", Value: json.RawMessage(`{"title":"$.issue.title"}`)},
		operate.PatchSpec:    {Kind: operate.PatchSpec, Target: "http.request", Value: json.RawMessage(`{"url":"https://hooks.example.com/fixed"}`)},
	}
	before := map[string]bool{"Plan observations": true, "Fetch observations": true, "Compile orientation packet": true, "Reason": true}
	type row struct {
		kind, stage string
		errHas      string // "" : accepted and handed over
	}
	var rows []row
	for _, stage := range operate.Stages {
		rows = append(rows,
			row{operate.PatchMapping, stage, "no stage applies a mapping patch"},
			row{operate.PatchSpec, stage, "no stage applies a spec patch"})
		if before[stage] {
			rows = append(rows, row{operate.PatchInput, stage, ""})
		} else {
			rows = append(rows, row{operate.PatchInput, stage, "the wave resumes after its decision"})
		}
	}
	covered := map[string]bool{}
	for _, st := range acttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			for i, tc := range rows {
				t.Run(tc.kind+" at "+tc.stage, func(t *testing.T) {
					ctx := context.Background()
					l := st.Open(t).Ledger
					res := &fakeResumer{}
					m := &fakeMotors{current: "1.0.0"}
					svc := operate.New(l, func(o *operate.Options) {
						o.Now, o.Motor, o.Resumer = (&clock{t: time.Now().UTC()}).now, m.motor, res
						o.FailedStage = func(context.Context, string) (string, error) { return tc.stage, nil }
					})
					wave := fmt.Sprintf("w%d", i)
					githubIssue(t, l, wave)
					out, err := svc.Operate(ctx, operate.Input{SignalID: wave, ExecutionID: "exec-" + wave, Wave: json.RawMessage(`{}`), Failure: failureOf[operate.ClassApp], EnteredAt: "t1"})
					if err != nil || out.Action != "pause" {
						t.Fatalf("operate: %+v, %v", out, err)
					}
					if out.Classification != operate.ClassApp {
						if _, err := svc.Reclassify(ctx, out.IncidentID, operate.AppSpec, "olga", "the payload's field"); err != nil {
							t.Fatal(err)
						}
					}
					if err := svc.Pause(ctx, wave, out.OperatorDecisionID, "tok"); err != nil {
						t.Fatal(err)
					}
					entries, _ := l.Entries(ctx, wave)
					r, err := svc.Resume(ctx, wave, operate.ResumeRequest{Patch: patches[tc.kind], By: "olga"})
					if tc.errHas != "" {
						if ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), "patch.kind: the wave resumes at "+tc.stage) || !strings.Contains(err.Error(), tc.errHas) {
							t.Fatalf("got %v, want EINVALID naming patch.kind and %s: %q", err, tc.stage, tc.errHas)
						}
						if after, _ := l.Entries(ctx, wave); len(after) != len(entries) || len(res.sent) != 0 {
							t.Errorf("a refused patch wrote %d entries, sent %d tokens", len(after)-len(entries), len(res.sent))
						}
						return
					}
					if err != nil {
						t.Fatalf("resume: %v", err)
					}
					var sent struct {
						ResumeAt string        `json:"resume_at"`
						AppPatch *ora.AppPatch `json:"app_patch"`
					}
					if err := json.Unmarshal(res.sent["tok"], &sent); err != nil || sent.AppPatch == nil || sent.ResumeAt != tc.stage {
						t.Fatalf("token output %s: want app_patch, resume_at %s (%v)", res.sent["tok"], tc.stage, err)
					}
					if sent.AppPatch.Digest != sent.AppPatch.Sum() {
						t.Errorf("handed patch digest %s, its sha256 %s", sent.AppPatch.Digest, sent.AppPatch.Sum())
					}
					if got := r.Steps[0].Result; r.Steps[0].Step != "apply_patch" || !strings.Contains(got, sent.AppPatch.Digest) || !strings.Contains(got, "Reason reads the signal with it") {
						t.Errorf("apply_patch step %+v does not record the patch's sha256 and who applies it", r.Steps[0])
					}
					after, _ := l.Entries(ctx, wave)
					if p, ok := operate.AppPatchOf(after); !ok || p.Digest != sent.AppPatch.Digest {
						t.Errorf("the ledger records %+v (%v), want the patch handed over", p, ok)
					}
				})
				covered[fmt.Sprint(tc.kind, before[tc.stage])] = true
			}
		})
	}
	for _, r := range operate.PatchPolicy {
		if !covered[fmt.Sprint(r.Kind, r.BeforeDecision)] {
			t.Errorf("patch policy row %s before-decision=%v has no test", r.Kind, r.BeforeDecision)
		}
	}
}

// The operator's guide prints PatchPolicy, row for row.
func TestPatchPolicyDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operator.md")
	if err != nil {
		t.Fatal(err)
	}
	when := map[bool]string{true: "before", false: "after"}
	for _, r := range operate.PatchPolicy {
		what := r.Applied
		if r.Refusal != "" {
			what = "refused: " + r.Refusal
		}
		row := fmt.Sprintf("| `%s` | %s | %s |", r.Kind, when[r.BeforeDecision], what)
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/operator.md lacks the row %q", row)
		}
	}
}
