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

// fakeMotors is a motor registry: the current version, the proposed ones
// and which of them the gate fails (with the failing cases).
type fakeMotors struct {
	current  string
	proposed map[string][]string // version -> failing gate cases (none: passes)
	promoted []string
}

func (m *fakeMotors) motor(context.Context) (operate.Motor, error) {
	return operate.Motor{Version: m.current}, nil
}

func (m *fakeMotors) promote(_ context.Context, version, _, _ string) error {
	failing, ok := m.proposed[version]
	switch {
	case !ok:
		return ora.Errorf(ora.ENOTFOUND, "no proposed motor %q", version)
	case len(failing) > 0:
		return ora.Conflict(nil, "motor %s failed the gate (golden replay and contract checks): %s", version, strings.Join(failing, ", "))
	}
	m.promoted = append(m.promoted, version)
	m.current = version
	return nil
}

// failureOf is a failure the classifier files under class.
var failureOf = map[string]operate.Failure{
	operate.ClassApp:   {Error: "InvalidInput", Cause: "missing field issue.title"},
	operate.ClassMotor: {Error: "InternalError", Cause: "the rules left the action's template incomplete"},
	operate.ClassMixed: {Error: "ValidationFailed", Cause: "the technical validator disagrees"},
	"transient":        {Error: "TransientError", Cause: "throttled"},
}

// pausedWave files a failure of class for a new wave and records its task
// token: the wave waits to resume.
func pausedWave(t *testing.T, ctx context.Context, l ora.Ledger, svc *operate.Service, wave, class string) operate.Outcome {
	t.Helper()
	githubIssue(t, l, wave)
	out, err := svc.Operate(ctx, operate.Input{SignalID: wave, Wave: json.RawMessage(`{"plan":{},"packet":{}}`), Failure: failureOf[class], EnteredAt: "t-" + wave})
	if err != nil || out.Action != "pause" {
		t.Fatalf("operate %s: %+v, %v", class, out, err)
	}
	if err := svc.Pause(ctx, wave, out.OperatorDecisionID, "tok-"+wave); err != nil {
		t.Fatal(err)
	}
	return out
}

// titlePatch corrects the empty issue title of the signal pausedWave writes.
var titlePatch = &operate.AppPatch{Kind: operate.PatchInput, Target: "issue.title", Value: json.RawMessage(`"Login fails with SSO"`)}

// Every row of the resume policy (classification x the pieces supplied),
// plus the cases before it (as is, a transient failure, a motor promoted
// since), and bad input: a refused resume writes nothing, a resume records
// each step and hands the stage the patch under the version the row says.
func TestResumePolicy(t *testing.T) {
	type row struct {
		name    string
		class   string
		req     operate.ResumeRequest
		before  string // promote this version before resuming ("" none)
		reclass string // a person reclassifies the incident first ("" none)
		code    string // the error's kind; "" resumes
		errHas  string
		motor   string // the version it resumes under
		steps   string // step:target of the resumed answer
		patched bool   // the token's output carries the patch
	}
	rows := []row{
		{name: "app, nothing", class: "app", motor: "1.0.0", steps: "apply_patch:app validate:pipeline resume:pipeline"},
		{name: "app, a patch", class: "app", req: operate.ResumeRequest{Patch: titlePatch}, motor: "1.0.0", steps: "apply_patch:app validate:pipeline resume:pipeline", patched: true},
		{name: "app, a version", class: "app", req: operate.ResumeRequest{MotorVersion: "1.1.0"}, code: ora.EINVALID, errHas: "the motor version it failed under"},
		{name: "app, a version and a patch", class: "app", req: operate.ResumeRequest{MotorVersion: "1.1.0", Patch: titlePatch}, code: ora.EINVALID, errHas: "leave the motor version out"},
		{name: "motor, nothing", class: "motor", code: ora.EINVALID, errHas: "resumes under a new motor version"},
		{name: "motor, a patch without a version", class: "motor", req: operate.ResumeRequest{Patch: titlePatch}, code: ora.EINVALID, errHas: "a patch for a motor incident needs a motor version"},
		{name: "motor, a version", class: "motor", req: operate.ResumeRequest{MotorVersion: "1.1.0"}, motor: "1.1.0", steps: "promote:motor validate:pipeline resume:pipeline"},
		{name: "motor, a version and a patch", class: "motor", req: operate.ResumeRequest{MotorVersion: "1.1.0", Patch: titlePatch}, code: ora.EINVALID, errHas: "reclassify it as MIXED-DRIFT"},
		{name: "mixed, nothing", class: "mixed", code: ora.EINVALID, errHas: "give the proposed version"},
		{name: "mixed, a patch without a version", class: "mixed", req: operate.ResumeRequest{Patch: titlePatch}, code: ora.EINVALID, errHas: "give the proposed version"},
		{name: "mixed, a version", class: "mixed", req: operate.ResumeRequest{MotorVersion: "1.1.0"}, motor: "1.1.0", steps: "promote:motor apply_patch:app validate:pipeline resume:pipeline"},
		{name: "mixed, a version and a patch", class: "mixed", req: operate.ResumeRequest{MotorVersion: "1.1.0", Patch: titlePatch}, motor: "1.1.0", steps: "promote:motor apply_patch:app validate:pipeline resume:pipeline", patched: true},

		{name: "motor, as is", class: "motor", req: operate.ResumeRequest{AsIs: true}, motor: "1.0.0", steps: "apply_patch:pipeline validate:pipeline resume:pipeline"},
		{name: "as is with a version", class: "motor", req: operate.ResumeRequest{AsIs: true, MotorVersion: "1.1.0"}, code: ora.EINVALID, errHas: "as is takes no motor version"},
		{name: "transient, retries exhausted: as is", class: "transient", motor: "1.0.0", steps: "apply_patch:pipeline validate:pipeline resume:pipeline"},
		{name: "motor, a version promoted since", class: "motor", before: "1.1.0", motor: "1.1.0", steps: "promote:motor validate:pipeline resume:pipeline"},
		{name: "app after a promotion", class: "app", before: "1.1.0", code: ora.ECONFLICT, errHas: "same motor version"},
		{name: "motor, as is after a promotion", class: "motor", before: "1.1.0", req: operate.ResumeRequest{AsIs: true}, motor: "1.1.0", steps: "apply_patch:pipeline validate:pipeline resume:pipeline"},
		{name: "motor, reclassified app by a person: a patch", class: "motor", reclass: operate.AppSpec, req: operate.ResumeRequest{Patch: titlePatch}, motor: "1.0.0", steps: "apply_patch:app validate:pipeline resume:pipeline", patched: true},
		{name: "app, reclassified motor by a person: no version", class: "app", reclass: operate.MotorRules, code: ora.EINVALID, errHas: "classified motor (MOTOR-RULES)"},
		{name: "motor, the version it failed under", class: "motor", req: operate.ResumeRequest{MotorVersion: "1.0.0"}, code: ora.EINVALID, errHas: "the version the wave failed under"},
		{name: "motor, an unknown version", class: "motor", req: operate.ResumeRequest{MotorVersion: "7.0.0"}, code: ora.ENOTFOUND, errHas: `no proposed motor "7.0.0"`},
		{name: "motor, a version the gate fails", class: "motor", req: operate.ResumeRequest{MotorVersion: "1.2.0"}, code: ora.ECONFLICT, errHas: "golden/demo-high, incidents/reason-timeout"},
		{name: "a patch of no kind", class: "app", req: operate.ResumeRequest{Patch: &operate.AppPatch{Target: "github", Value: json.RawMessage(`{}`)}}, code: ora.EINVALID, errHas: "patch.kind"},
		{name: "a mapping that is not an object", class: "app", req: operate.ResumeRequest{Patch: &operate.AppPatch{Kind: "mapping", Target: "github", Value: json.RawMessage(`"title"`)}}, code: ora.EINVALID, errHas: "JSON object"},
		{name: "a patch that is not JSON", class: "app", req: operate.ResumeRequest{Patch: &operate.AppPatch{Kind: "input", Target: "title", Value: json.RawMessage(`{title`)}}, code: ora.EINVALID, errHas: "not JSON"},
		{name: "a patch the app refuses", class: "app", req: operate.ResumeRequest{Patch: &operate.AppPatch{Kind: "spec", Target: "no-such-action", Value: json.RawMessage(`{}`)}}, code: ora.EINVALID, errHas: "no action no-such-action"},
	}
	covered := map[string]bool{}
	for _, st := range acttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			for i, tc := range rows {
				t.Run(tc.name, func(t *testing.T) {
					ctx := context.Background()
					l := st.Open(t).Ledger
					m := &fakeMotors{current: "1.0.0", proposed: map[string][]string{"1.1.0": nil, "1.2.0": {"golden/demo-high", "incidents/reason-timeout"}}}
					res := &fakeResumer{}
					clk := &clock{t: time.Now().UTC().Truncate(time.Second)}
					svc := operate.New(l, func(o *operate.Options) {
						o.Now, o.Motor, o.Promote, o.Resumer, o.AppVersion = clk.now, m.motor, m.promote, res, "0.3.0"
						o.CheckPatch = func(_ context.Context, p operate.AppPatch) error {
							if p.Kind == operate.PatchSpec && p.Target == "no-such-action" {
								return ora.Invalid("patch.target", "no action %s in the app", p.Target)
							}
							return nil
						}
					})
					wave := fmt.Sprintf("w%d", i)
					out := pausedWave(t, ctx, l, svc, wave, tc.class)
					if tc.reclass != "" {
						if _, err := svc.Reclassify(ctx, out.IncidentID, tc.reclass, "olga", "a person knows better"); err != nil {
							t.Fatal(err)
						}
					}
					if tc.before != "" {
						if err := m.promote(ctx, tc.before, "", ""); err != nil {
							t.Fatal(err)
						}
					}
					before, _ := l.Entries(ctx, wave)
					incBefore, _ := l.Entries(ctx, out.IncidentID)
					tc.req.By = "olga"
					r, err := svc.Resume(ctx, wave, tc.req)
					if tc.code != "" {
						if ora.ErrorCode(err) != tc.code || !strings.Contains(err.Error(), tc.errHas) {
							t.Fatalf("got %v, want %s containing %q", err, tc.code, tc.errHas)
						}
						after, _ := l.Entries(ctx, wave)
						incAfter, _ := l.Entries(ctx, out.IncidentID)
						if len(after) != len(before) || len(incAfter) != len(incBefore) || len(res.sent) != 0 {
							t.Errorf("a refused resume wrote: wave %d -> %d entries, incident %d -> %d, tokens sent %d", len(before), len(after), len(incBefore), len(incAfter), len(res.sent))
						}
						if ws, _ := svc.WaveState(ctx, wave, "RUNNING"); ws.State != operate.StatePaused {
							t.Errorf("after a refusal the wave is %s, want PAUSED", ws.State)
						}
						return
					}
					if err != nil {
						t.Fatalf("resume: %v", err)
					}
					var steps []string
					for _, s := range r.Steps {
						steps = append(steps, s.Step+":"+s.Target)
					}
					if got := strings.Join(steps, " "); got != tc.steps || r.MotorVersion != tc.motor {
						t.Errorf("steps %q under %s, want %q under %s (%+v)", got, r.MotorVersion, tc.steps, tc.motor, r.Steps)
					}
					var sent struct {
						MotorVersion string            `json:"motor_version"`
						AppPatch     *operate.AppPatch `json:"app_patch"`
					}
					_ = json.Unmarshal(res.sent["tok-"+wave], &sent)
					if sent.MotorVersion != tc.motor || (sent.AppPatch != nil) != tc.patched {
						t.Errorf("token output %s: want motor %s, patch %v", res.sent["tok-"+wave], tc.motor, tc.patched)
					}
					if tc.patched && (len(sent.AppPatch.Digest) != 64 || sent.AppPatch.Target != "issue.title") {
						t.Errorf("the stage gets the patch with its digest: %+v", sent.AppPatch)
					}
					// The decision record: the resumed entry lists each step with its result.
					rec := resumedRecord(t, l, wave, out.OperatorDecisionID)
					if len(rec.Steps) != len(r.Steps) {
						t.Fatalf("recorded steps %+v, answered %+v", rec.Steps, r.Steps)
					}
					for _, s := range rec.Steps {
						if s.Result == "" {
							t.Errorf("step %s has no result", s.Step)
						}
					}
					entries, _ := l.Entries(ctx, wave)
					if p, ok := operate.AppPatchOf(entries); ok != tc.patched || (ok && p.Digest != sent.AppPatch.Digest) {
						t.Errorf("AppPatchOf: %+v, %v; want the patch handed over: %v", p, ok, tc.patched)
					}
					if tc.req.MotorVersion != "" && (len(m.promoted) != 1 || m.promoted[0] != tc.req.MotorVersion) {
						t.Errorf("promoted %v, want %s through the gate", m.promoted, tc.req.MotorVersion)
					}
				})
				covered[fmt.Sprint(tc.class, tc.req.MotorVersion != "", tc.req.Patch != nil)] = true
			}
		})
	}
	for _, r := range operate.ResumePolicy {
		if !covered[fmt.Sprint(r.Classification, r.Version, r.Patch)] {
			t.Errorf("resume policy row %s version=%v patch=%v has no test", r.Classification, r.Version, r.Patch)
		}
	}
}

// resumedRecord reads the wave's resumed entry of the operator decision.
func resumedRecord(t *testing.T, l ora.Ledger, wave, opID string) struct{ Steps []operate.StepResult } {
	t.Helper()
	entries, err := l.Entries(context.Background(), wave)
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Steps []operate.StepResult }
	for _, e := range entries {
		if e.Qualifier == "resumed/"+opID {
			if err := json.Unmarshal(e.Body, &body); err != nil {
				t.Fatal(err)
			}
			return body
		}
	}
	t.Fatalf("wave %s has no resumed entry for %s", wave, opID)
	return body
}

// counters records the operator's metrics: name and labels -> sum.
type counters map[string]float64

func (c counters) Add(name string, v float64, labels ...string) {
	c[name+"{"+strings.Join(labels, ",")+"}"] += v
}
func (c counters) Observe(name string, v float64, labels ...string) {
	c.Add(name+"_count", 1, labels...)
}

// The KPIs per motor version reach the metrics: incidents first seen (by
// class), pauses, resumes and their time (MTTR), overrides (accuracy).
func TestOperatorKPIMetrics(t *testing.T) {
	ctx := context.Background()
	l := acttest.DB(t)
	c := counters{}
	m := &fakeMotors{current: "1.0.0", proposed: map[string][]string{"1.1.0": nil}}
	svc := operate.New(l, func(o *operate.Options) {
		o.Metrics, o.Motor, o.Promote, o.Resumer = c, m.motor, m.promote, &fakeResumer{}
	})
	out := pausedWave(t, ctx, l, svc, "a", "motor")
	pausedWave(t, ctx, l, svc, "b", "app")
	pausedWave(t, ctx, l, svc, "c", "app") // the same incident as b
	if _, err := svc.Resume(ctx, "a", operate.ResumeRequest{MotorVersion: "1.1.0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Reclassify(ctx, out.IncidentID, operate.AppSpec, "olga", "the payload lacked a field"); err != nil {
		t.Fatal(err)
	}
	want := counters{
		"ora_operator_incidents_total{motor_version,1.0.0,class,motor}":                        1,
		"ora_operator_incidents_total{motor_version,1.0.0,class,app}":                          1,
		"ora_operator_pauses_total{motor_version,1.0.0}":                                       3,
		"ora_operator_resumes_total{motor_version,1.0.0}":                                      1,
		"ora_operator_time_to_resume_seconds_count{motor_version,1.0.0}":                       1,
		"ora_classification_overrides_total{motor_version,1.0.0,from,MOTOR-RULES,to,APP-SPEC}": 1,
	}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, c[k], v, c)
		}
	}
}

// The operator's guide prints ResumePolicy, row for row.
func TestResumePolicyDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operator.md")
	if err != nil {
		t.Fatal(err)
	}
	yes := map[bool]string{true: "yes", false: "no"}
	for _, r := range operate.ResumePolicy {
		what := r.Plan
		if r.Refusal != "" {
			what = "refused: " + r.Refusal
		}
		row := fmt.Sprintf("| %s | %s | %s | %s |", r.Classification, yes[r.Version], yes[r.Patch], what)
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/operator.md lacks the row %q", row)
		}
	}
}
