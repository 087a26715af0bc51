package operate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// Every row of the classification policy, in order.
func TestClassifyPolicy(t *testing.T) {
	cases := []struct {
		name  string
		facts operate.Facts
		class string
		tax   string
		trans bool
	}{
		{"budget exceeded", operate.Facts{Error: "States.Timeout", Stage: "Reason"}, "motor", "MOTOR-PERF", false},
		{"budget exceeded", operate.Facts{Error: "InternalError", Cause: "token budget exceeded"}, "motor", "MOTOR-PERF", false},
		{"budget exceeded", operate.Facts{Error: "Sandbox.Timedout", Cause: "Task timed out after 30.00 seconds", Stage: "Act and validate"}, "motor", "MOTOR-PERF", false},
		{"transient", operate.Facts{Error: "TransientError", Stage: "Act", Sources: 3}, "motor", "MOTOR-PERF", true},
		{"outcome unknown: an operator says whether the action ran", operate.Facts{Error: "OutcomeUnknown", Stage: "Act", Sources: 2}, "app", "APP-BUILD", false},
		{"tolerated failure threshold exceeded: the observation sources failed", operate.Facts{Error: "States.ExceedToleratedFailureThreshold", Stage: "Fetch observations", Sources: 2, NewWithMotor: true}, "app", "APP-BUILD", false},
		{"reproduced in >=2 apps under one motor", operate.Facts{Error: "ActionFailed", Stage: "Act", Sources: 2}, "motor", "MOTOR-RULES", false},
		{"began with a new motor version", operate.Facts{Error: "InternalError", Stage: "Reason", Sources: 1, NewWithMotor: true}, "mixed", "MIXED-DRIFT", false},
		{"validator disagrees with the executed work", operate.Facts{Error: "ValidationFailed", Stage: "Validate", Sources: 1}, "mixed", "MIXED-DRIFT", false},
		{"missing field or invalid mapping", operate.Facts{Error: "InvalidInput", Stage: "Plan observations", Sources: 1}, "app", "APP-SPEC", false},
		{"failing integration", operate.Facts{Error: "ActionFailed", Stage: "Act", Sources: 1}, "app", "APP-BUILD", false},
		{"disappears with another profile, integration stage", operate.Facts{Error: "InternalError", Stage: "Act", Sources: 1, OtherProfilePassed: true}, "app", "APP-BUILD", false},
		{"disappears with another profile", operate.Facts{Error: "InternalError", Stage: "Reason", Sources: 1, OtherProfilePassed: true}, "app", "APP-SPEC", false},
		{"anything else: the motor's rules", operate.Facts{Error: "InternalError", Stage: "Reason", Sources: 1}, "motor", "MOTOR-RULES", false},
	}
	rows := map[string]bool{}
	for _, r := range operate.Policy {
		rows[r.Name] = false
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := operate.Classify(tc.facts)
			if got.Classification != tc.class || got.Taxonomy != tc.tax || got.Transient != tc.trans || got.Rule != tc.name {
				t.Errorf("got %+v, want %s/%s transient=%v by rule %q", got, tc.class, tc.tax, tc.trans, tc.name)
			}
		})
		rows[tc.name] = true
	}
	for name, tested := range rows {
		if !tested {
			t.Errorf("policy row %q has no test", name)
		}
	}
}

func TestFailedStage(t *testing.T) {
	cases := []struct {
		name    string
		entered []string
		want    string
	}{
		{"act", []string{"Plan observations", "Fetch observations", "Fetch", "Compile orientation packet", "Reason", "Route on confidence", "Act", "Operate on failure"}, "Act"},
		{"inside validate", []string{"Reason", "Act", "Validate", "Technical validator", "Witness", "Operate on failure"}, "Validate"},
		{"second failure after a resume", []string{"Reason", "Operate on failure", "Pause or fail?", "Wait for resume", "Resume at the failed stage", "Reason", "Route on confidence", "Act", "Operate on failure"}, "Act"},
		{"none", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := operate.FailedStage(tc.entered); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestInferStage(t *testing.T) {
	cases := map[string]string{
		`{"signal_id":"s"}`: "Plan observations",
		`{"plan":{},"packet":{},"decision":{"decision_id":""}}`: "Reason",
		`{"plan":{}}`:             "Fetch observations",
		`{"plan":{},"packet":{}}`: "Reason",
		`{"packet":{},"decision":{"decision_id":"d","band":"high"}}`:                     "Act",
		`{"decision":{"decision_id":"d","band":"medium"}}`:                               "Flag for review",
		`{"decision":{"decision_id":"d","band":"low"}}`:                                  "Escalate to a human",
		`{"decision":{"decision_id":"d","band":"low"},"verdict":{"verdict":"approved"}}`: "Act",
		`{"decision":{"decision_id":"d","band":"low"},"verdict":{"verdict":"rejected"}}`: "Record rejection",
		`{"decision":{"decision_id":"d","band":"high"},"act":{}}`:                        "Validate",
		`{"decision":{"decision_id":"d","band":"high"},"act":{},"validation":[]}`:        "Record outcome",
	}
	for in, want := range cases {
		if got := operate.InferStage(json.RawMessage(in)); got != want {
			t.Errorf("InferStage(%s) = %q, want %q", in, got, want)
		}
	}
}

// fakeResumer records the tokens handed back.
type fakeResumer struct {
	mu   sync.Mutex
	sent map[string][]byte
	err  error
}

func (f *fakeResumer) SendTaskSuccess(_ context.Context, token string, out []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if f.sent == nil {
		f.sent = map[string][]byte{}
	}
	if _, done := f.sent[token]; done {
		return ora.Conflict(nil, "task %s is no longer waiting", token)
	}
	f.sent[token] = out
	return nil
}

// signal writes a signal-received entry for a wave of source.
func signal(t *testing.T, l ora.Ledger, id, source string) {
	t.Helper()
	s := ora.NormalizedSignal{
		ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: source, Provider: "hmac"},
		Timestamp: time.Now().UTC(), NormalizedAt: time.Now().UTC(), DedupKey: id,
		Payload: json.RawMessage(`{}`), RawDigest: ora.Digest([]byte(id)),
	}
	e, err := ora.NewEntry(id, ora.KindSignalReceived, "", s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { c.t = c.t.Add(time.Second); return c.t }

// The operator's loop over both ledgers: pause, dedup, heuristics, resume,
// motor fix, KPIs.
func TestOperator(t *testing.T) {
	for _, st := range acttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			ctx := context.Background()
			l := st.Open(t).Ledger
			clk := &clock{t: time.Now().UTC().Truncate(time.Second)}
			motor := operate.Motor{Version: "1.0.0"}
			res := &fakeResumer{}
			svc := operate.New(l, func(o *operate.Options) {
				o.Now = clk.now
				o.Motor = func(context.Context) (operate.Motor, error) { return motor, nil }
				o.AppVersion = "app-1"
				o.Resumer = res
				o.AutoResumeTransient = true
				o.MaxAutoResumes = 2
			})
			fail := operate.Failure{Error: "InternalError", Cause: `{"errorMessage":"boom","errorType":"InternalError"}`}
			in := func(wave, entered string) operate.Input {
				return operate.Input{SignalID: wave, Wave: json.RawMessage(`{"plan":{},"packet":{}}`), Failure: fail, EnteredAt: entered}
			}

			// One app fails at Reason: paused, motor-rules by default.
			signal(t, l, "w1", "alpha")
			out, err := svc.Operate(ctx, in("w1", "t1"))
			if err != nil {
				t.Fatal(err)
			}
			if out.Action != "pause" || out.ResumeAt != "Reason" || out.Taxonomy != operate.MotorRules || out.IncidentID == "" || out.PauseTimeoutSeconds <= 0 {
				t.Fatalf("first failure: %+v", out)
			}
			again, err := svc.Operate(ctx, in("w1", "t1"))
			if err != nil || again != out {
				t.Errorf("retried Operate: got %+v, %v; want the same outcome %+v", again, err, out)
			}
			inc, err := svc.Incident(ctx, out.IncidentID)
			if err != nil || len(inc.Occurrences) != 1 || inc.Status != "open" {
				t.Fatalf("incident: %+v, %v", inc, err)
			}
			ws, _ := svc.WaveState(ctx, "w1", "RUNNING")
			if ws.State != operate.StatePaused || ws.IncidentID != out.IncidentID || ws.Classification != "motor" {
				t.Errorf("wave state: %+v", ws)
			}
			// The record carries the §8.1 event and the §8.2 plan.
			rec := record(t, l, "w1", out.OperatorDecisionID)
			steps := ""
			for _, s := range rec.ActionPlan {
				steps += s.Step + ":" + s.Target + " "
			}
			if steps != "pause:pipeline apply_patch:motor validate:motor resume:pipeline " || rec.Event.ContextRef["motor_ctx"] != "motor@1.0.0" ||
				rec.Event.ContextRef["app_ctx"] != "app@app-1" || rec.Event.Scope != "motor" || rec.Event.TraceID != "w1" || rec.MotorVersion != "1.0.0" {
				t.Errorf("record: plan %q, event %+v", steps, rec.Event)
			}

			// A second app fails the same way: reproduced in two apps, MOTOR-RULES; same fingerprint, one incident.
			signal(t, l, "w2", "beta")
			out2, err := svc.Operate(ctx, in("w2", "t2"))
			if err != nil {
				t.Fatal(err)
			}
			if out2.IncidentID != out.IncidentID || record(t, l, "w2", out2.OperatorDecisionID).Rule != "reproduced in >=2 apps under one motor" {
				t.Errorf("second app: %+v", out2)
			}
			incs, sum, err := svc.Incidents(ctx)
			if err != nil || len(incs) != 1 || len(incs[0].Occurrences) != 2 || sum.Paused != 2 || sum.Resumed != 0 {
				t.Fatalf("incidents: %+v %+v %v", incs, sum, err)
			}

			// Resume: not before the token is recorded; a motor version not current is refused.
			if _, err := svc.Resume(ctx, "w1", operate.ResumeRequest{By: "op"}); ora.ErrorCode(err) != ora.ECONFLICT {
				t.Errorf("resume before the token: got %v, want a conflict", err)
			}
			if err := svc.Pause(ctx, "w1", out.OperatorDecisionID, "tok-1"); err != nil {
				t.Fatal(err)
			}
			if err := svc.Pause(ctx, "w1", "nope", "tok-x"); ora.ErrorCode(err) != ora.ENOTFOUND {
				t.Errorf("pause of an unknown decision: got %v", err)
			}
			if _, err := svc.Resume(ctx, "w1", operate.ResumeRequest{MotorVersion: "2.0.0", By: "op"}); ora.ErrorCode(err) != ora.ECONFLICT {
				t.Errorf("resume under a motor not current: got %v, want a conflict", err)
			}
			// A motor fix is promoted; the wave resumes under it and the incident links the fix.
			motor = operate.Motor{Version: "1.1.0", Previous: "1.0.0"}
			r, err := svc.Resume(ctx, "w1", operate.ResumeRequest{MotorVersion: "1.1.0", By: "op"})
			if err != nil || r.ResumeAt != "Reason" || r.MotorVersion != "1.1.0" {
				t.Fatalf("resume: %+v, %v", r, err)
			}
			var sent struct {
				ResumeAt     string `json:"resume_at"`
				MotorVersion string `json:"motor_version"`
			}
			_ = json.Unmarshal(res.sent["tok-1"], &sent)
			if sent.ResumeAt != "Reason" || sent.MotorVersion != "1.1.0" {
				t.Errorf("token output: %s", res.sent["tok-1"])
			}
			if _, err := svc.Resume(ctx, "w1", operate.ResumeRequest{By: "op"}); ora.ErrorCode(err) != ora.ECONFLICT {
				t.Errorf("second resume: got %v, want a conflict", err)
			}
			ws, _ = svc.WaveState(ctx, "w1", "RUNNING")
			if ws.State != operate.StateRunning {
				t.Errorf("after resume: %+v", ws)
			}
			if ws, _ = svc.WaveState(ctx, "w1", "SUCCEEDED"); ws.State != operate.StateSuccess {
				t.Errorf("succeeded: %+v", ws)
			}
			inc, _ = svc.Incident(ctx, out.IncidentID)
			if inc.ClosedBy == nil || inc.ClosedBy.MotorVersion != "1.1.0" || inc.Status != "closed" || inc.Resumed != 1 || inc.MTTRSeconds <= 0 {
				t.Errorf("incident after the fix: %+v", inc)
			}

			// Under the new motor a failure never seen before (another stage) began with it: MIXED-DRIFT.
			signal(t, l, "w3", "alpha")
			out3, _ := svc.Operate(ctx, operate.Input{SignalID: "w3", Wave: json.RawMessage(`{"plan":{}}`), Failure: fail, EnteredAt: "t3"})
			if out3.Taxonomy != operate.MixedDrift || out3.ResumeAt != "Fetch observations" {
				t.Errorf("a failure that begins with the new motor: %+v", out3)
			}

			// Transient: retried with a growing backoff, MaxAutoResumes times, then paused.
			signal(t, l, "w4", "alpha")
			tr := operate.Failure{Error: "TransientError", Cause: "throttled"}
			var backoffs []int
			var last operate.Outcome
			for i := range 3 {
				last, err = svc.Operate(ctx, operate.Input{SignalID: "w4", Wave: json.RawMessage(`{"decision":{"band":"high","decision_id":"d4"}}`), Failure: tr, EnteredAt: fmt.Sprint("t4-", i)})
				if err != nil {
					t.Fatal(err)
				}
				backoffs = append(backoffs, last.BackoffSeconds)
			}
			// The wave failed at Act: the last automatic retry waits out the
			// longest lock a crashed run may hold on an action.
			lock := int(operate.ActLockWait.Seconds())
			if last.Action != "pause" || backoffs[0] != 2 || backoffs[1] != lock || backoffs[2] != 0 {
				t.Errorf("transient: backoffs %v, last %+v; want 2, %d, then a pause", backoffs, last, lock)
			}
			_, sum, _ = svc.Incidents(ctx)
			if sum.Resumed != 3 || sum.ResumptionRate <= 0 || sum.MTTRSeconds <= 0 {
				t.Errorf("summary: %+v", sum)
			}
		})
	}
}

// A decision the actor failed cannot run again: the wave fails with a
// verdict, and nothing waits.
func TestOperateFailsAFailedDecision(t *testing.T) {
	ctx := context.Background()
	db := acttest.DB(t)
	acttest.Record(t, db, acttest.Decision("d1", "s1", ora.Scope{AllowedOperations: []string{"notify"}}, ora.Action{Type: "notify"}))
	for _, to := range []ora.DecisionStatus{ora.StatusExecuting, ora.StatusFailed} {
		from := ora.StatusDecided
		if to == ora.StatusFailed {
			from = ora.StatusExecuting
		}
		if _, err := db.TransitionDecision(ctx, "d1", from, to, ""); err != nil {
			t.Fatal(err)
		}
	}
	svc := operate.New(db)
	out, err := svc.Operate(ctx, operate.Input{SignalID: "s1", Wave: json.RawMessage(`{"decision":{"decision_id":"d1","band":"high"}}`),
		Failure: operate.Failure{Error: "ActionFailed", Cause: `{"errorMessage":"POST answered 502"}`}, EnteredAt: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Action != "fail" || out.Taxonomy != operate.AppBuild || out.Cause != "POST answered 502" {
		t.Errorf("got %+v, want fail APP-BUILD", out)
	}
	entries, _ := db.Entries(ctx, "s1")
	verdicts := 0
	for _, e := range entries {
		if e.Kind == ora.KindFinalVerdict {
			verdicts++
		}
	}
	if verdicts != 1 {
		t.Errorf("final verdicts: %d, want 1", verdicts)
	}
	if ws, _ := svc.WaveState(ctx, "s1", "RUNNING"); ws.State != operate.StateFailed {
		t.Errorf("wave state: %+v", ws)
	}
}

func TestOperateNeedsSignal(t *testing.T) {
	_, err := operate.New(acttest.DB(t)).Operate(context.Background(), operate.Input{Failure: operate.Failure{Error: "X"}})
	if got, want := ora.ErrorField(err), "signal_id"; got != want {
		t.Errorf("field: got %q, want %q", got, want)
	}
}

func record(t *testing.T, l ora.Ledger, wave, opID string) operate.Record {
	t.Helper()
	entries, err := l.Entries(context.Background(), wave)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Kind == ora.KindOperatorDecision && e.Qualifier == "op/"+opID {
			var r operate.Record
			if err := json.Unmarshal(e.Body, &r); err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	t.Fatalf("wave %s has no operator decision %s", wave, opID)
	return operate.Record{}
}

// A paused wave nobody resumed ends with a failed verdict, and its decision,
// if executing, fails.
func TestAbandon(t *testing.T) {
	ctx := context.Background()
	db := acttest.DB(t)
	acttest.Record(t, db, acttest.Decision("d1", "s1", ora.Scope{AllowedOperations: []string{"notify"}}, ora.Action{Type: "notify"}))
	if _, err := db.TransitionDecision(ctx, "d1", ora.StatusDecided, ora.StatusExecuting, ""); err != nil {
		t.Fatal(err)
	}
	svc := operate.New(db)
	for range 2 { // safe to repeat
		out, err := svc.Abandon(ctx, "s1", json.RawMessage(`{"decision":{"decision_id":"d1"}}`), operate.Failure{Error: "InternalError", Cause: "x"})
		if err != nil || out.Action != "fail" || !strings.Contains(out.Cause, "not resumed in time") {
			t.Fatalf("abandon: %+v, %v", out, err)
		}
	}
	if got := acttest.Status(t, db, "d1"); got != ora.StatusFailed {
		t.Errorf("decision: %s, want failed", got)
	}
	if _, err := svc.Abandon(ctx, "", nil, operate.Failure{}); ora.ErrorField(err) != "signal_id" {
		t.Errorf("no signal: %v", err)
	}
}

// A failure an Express child reports names its exact stage and carries the
// stage's own error; any other failure is not a child's report.
func TestUnwrapChild(t *testing.T) {
	report := `{"stage":"Flag for review","error":"TransientError","cause":"{\"errorMessage\":\"x\"}","results":{"decision":{"decision_id":"d1"}}}`
	describe, _ := json.Marshal(map[string]string{"ExecutionArn": "arn:aws:states:us-east-1:1:express:w-reason:e:1", "Status": "FAILED", "Error": "TransientError", "Cause": report})
	cases := []struct {
		name      string
		f         operate.Failure
		ok        bool
		stage     string
		innerErr  string
		innerCaus string
	}{
		{"the parent's States.TaskFailed with the child's DescribeExecution", operate.Failure{Error: "States.TaskFailed", Cause: string(describe)}, true, "Flag for review", "TransientError", `{"errorMessage":"x"}`},
		{"the report as the cause itself", operate.Failure{Error: "TransientError", Cause: report}, true, "Flag for review", "TransientError", `{"errorMessage":"x"}`},
		{"a Lambda error", operate.Failure{Error: "InternalError", Cause: `{"errorMessage":"x","errorType":"InternalError"}`}, false, "", "InternalError", ""},
		{"a report naming no stage of the wave", operate.Failure{Error: "States.TaskFailed", Cause: `{"stage":"Nowhere","error":"E"}`}, false, "", "States.TaskFailed", ""},
		{"a child that timed out (no report)", operate.Failure{Error: "States.TaskFailed", Cause: `{"Status":"TIMED_OUT"}`}, false, "", "States.TaskFailed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, inner, ok := operate.UnwrapChild(tc.f)
			if ok != tc.ok || rep.Stage != tc.stage || inner.Error != tc.innerErr {
				t.Fatalf("got %+v %+v %v, want stage %q error %q ok %v", rep, inner, ok, tc.stage, tc.innerErr, tc.ok)
			}
			if ok && inner.Cause != tc.innerCaus {
				t.Errorf("inner cause %q, want %q", inner.Cause, tc.innerCaus)
			}
		})
	}
	// A child Task in the history without a report resumes at the child's first stage.
	for entered, want := range map[string]string{"Orient and reason": "Compile orientation packet", "Act and validate": "Act"} {
		if got := operate.FailedStage([]string{"Plan observations", "Fetch observations", entered, "Operate on failure"}); got != want {
			t.Errorf("FailedStage after %s = %q, want %q", entered, got, want)
		}
	}
}

// A Fetch Map past its tolerated share: APP-BUILD (not the motor's rules),
// and the failed jobs the cause names are carried into the record, the
// event and the incident's occurrence.
func TestOperateToleratedFailure(t *testing.T) {
	ctx := context.Background()
	db := acttest.DB(t)
	svc := operate.New(db)
	note := operate.FailedJobsNote([]operate.FailedJob{{ID: "web.00001", Family: "http"}, {ID: "bucket.00000", Family: "objects"}})
	cases := []struct {
		name     string
		cause    string
		jobs     string
		families string
	}{
		{"the Map's own cause names no job", "The specified tolerated failure threshold was exceeded", "", ""},
		{"a cause carrying a child's error", `{"Error":"InternalError","Cause":"{\"errorMessage\":\"fetch ` + note + `: boom\",\"errorType\":\"InternalError\"}"}`,
			"bucket.00000,web.00001", "http,objects"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wave := fmt.Sprint("tf-", i)
			out, err := svc.Operate(ctx, operate.Input{SignalID: wave, Wave: json.RawMessage(`{"plan":{}}`),
				Failure: operate.Failure{Error: operate.ErrToleratedFailure, Cause: tc.cause}, EnteredAt: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if out.Action != "pause" || out.Classification != "app" || out.Taxonomy != operate.AppBuild || out.ResumeAt != "Fetch observations" {
				t.Fatalf("got %+v, want a pause, app APP-BUILD at Fetch observations", out)
			}
			rec := record(t, db, wave, out.OperatorDecisionID)
			if rec.Rule != "tolerated failure threshold exceeded: the observation sources failed" || rec.Event.Scope != "app" {
				t.Errorf("record: rule %q, scope %q", rec.Rule, rec.Event.Scope)
			}
			if got := rec.Event.Payload["failed_jobs"]; got != tc.jobs {
				t.Errorf("event failed_jobs: got %q, want %q", got, tc.jobs)
			}
			if got := rec.Event.Payload["failed_families"]; got != tc.families {
				t.Errorf("event failed_families: got %q, want %q", got, tc.families)
			}
			inc, err := svc.Incident(ctx, out.IncidentID)
			if err != nil {
				t.Fatal(err)
			}
			var occ *operate.Occurrence
			for i := range inc.Occurrences {
				if inc.Occurrences[i].WaveID == wave {
					occ = &inc.Occurrences[i]
				}
			}
			if occ == nil {
				t.Fatalf("incident %s has no occurrence of %s", inc.ID, wave)
			}
			var ids []string
			for _, j := range occ.FailedJobs {
				ids = append(ids, j.ID+" "+j.Family)
			}
			want := ""
			if tc.jobs != "" {
				want = "bucket.00000 objects,web.00001 http"
			}
			if got := strings.Join(ids, ","); got != want {
				t.Errorf("incident's failed jobs: got %q, want %q", got, want)
			}
		})
	}
}

func TestFailedJobsOf(t *testing.T) {
	many := make([]operate.FailedJob, 60)
	for i := range many {
		many[i] = operate.FailedJob{ID: fmt.Sprintf("r.%05d", i), Family: "ledger"}
	}
	cases := []struct {
		name  string
		cause string
		want  int
		first string
	}{
		{"no note", "The specified tolerated failure threshold was exceeded", 0, ""},
		{"plain text", "fetch " + operate.FailedJobsNote([]operate.FailedJob{{ID: "a.00000", Family: "ledger"}}) + ": boom", 1, "a.00000 ledger"},
		{"a Lambda error", `{"errorMessage":"fetch (failed jobs: b.00002 http, a.00001 objects): x","errorType":"InternalError"}`, 2, "a.00001 objects"},
		{"a malformed entry is skipped", "(failed jobs: Bad Id, c.1 http)", 1, "c.1 http"},
		{"at most 50 named", operate.FailedJobsNote(many), 50, "r.00000 ledger"},
		{"no jobs, no note", operate.FailedJobsNote(nil), 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := operate.FailedJobsOf(tc.cause)
			if len(got) != tc.want {
				t.Fatalf("got %d jobs %+v, want %d", len(got), got, tc.want)
			}
			if tc.want > 0 && got[0].ID+" "+got[0].Family != tc.first {
				t.Errorf("first: got %+v, want %s", got[0], tc.first)
			}
		})
	}
}

// A resume at Fetch observations asks whether the wave's jobs are still
// staged: gone (expired), it re-enters at Plan observations.
func TestResumeAtFetchChecksTheJobs(t *testing.T) {
	cases := []struct {
		name   string
		staged func(context.Context, string) (bool, error)
		want   string
		code   string
	}{
		{"no check configured", nil, "Fetch observations", ""},
		{"jobs staged", func(context.Context, string) (bool, error) { return true, nil }, "Fetch observations", ""},
		{"jobs expired", func(context.Context, string) (bool, error) { return false, nil }, "Plan observations", ""},
		{"the check fails", func(context.Context, string) (bool, error) { return false, ora.Errorf(ora.ETRANSIENT, "disk") }, "", ora.ETRANSIENT},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			res := &fakeResumer{}
			svc := operate.New(acttest.DB(t), func(o *operate.Options) { o.Resumer, o.JobsStaged = res, tc.staged })
			out, err := svc.Operate(ctx, operate.Input{SignalID: "w", Wave: json.RawMessage(`{"plan":{}}`),
				Failure: operate.Failure{Error: operate.ErrToleratedFailure}, EnteredAt: "t"})
			if err != nil || out.ResumeAt != "Fetch observations" {
				t.Fatalf("operate: %+v, %v", out, err)
			}
			if err := svc.Pause(ctx, "w", out.OperatorDecisionID, "tok"); err != nil {
				t.Fatal(err)
			}
			r, err := svc.Resume(ctx, "w", operate.ResumeRequest{By: "tester"})
			if ora.ErrorCode(err) != tc.code || r.ResumeAt != tc.want {
				t.Fatalf("resume: %+v, %v; want at %q, error code %q", r, err, tc.want, tc.code)
			}
			var sent struct {
				ResumeAt string `json:"resume_at"`
			}
			_ = json.Unmarshal(res.sent["tok"], &sent)
			if sent.ResumeAt != tc.want {
				t.Errorf("token output: %s, want resume_at %q", res.sent["tok"], tc.want)
			}
		})
	}
}
