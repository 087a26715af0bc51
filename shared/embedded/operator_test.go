package embedded

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// send posts a signed demo webhook and returns its receipt.
func send(t *testing.T, r *Runtime, srvURL, key, body string) observe.Receipt {
	t.Helper()
	src, _ := r.cfg.Source("demo")
	h, _ := observe.SignDelivery(src, []byte(body), time.Now(), key)
	req, _ := http.NewRequest(http.MethodPost, srvURL+"/webhooks/demo", strings.NewReader(body))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook: %v %v", resp, err)
	}
	defer resp.Body.Close()
	var rec observe.Receipt
	_ = json.NewDecoder(resp.Body).Decode(&rec)
	return rec
}

// waitOperator polls the wave until its operator state is one of want.
func waitOperator(t *testing.T, r *Runtime, waveID string, want ...string) operate.OperatorState {
	t.Helper()
	var last operate.OperatorState
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		w, err := waves{r}.Wave(context.Background(), waveID)
		if err != nil {
			t.Fatal(err)
		}
		last = *w.Operator
		for _, s := range want {
			if last.State == s {
				return last
			}
		}
	}
	if hist, err := r.engine.GetExecutionHistory(context.Background(), r.executionArn(waveID)); err == nil {
		for _, ev := range hist[max(0, len(hist)-4):] {
			b, _ := json.Marshal(ev)
			t.Logf("last events: %.400s", b)
		}
	}
	t.Fatalf("wave %s: operator state %+v, want one of %v", waveID, last, want)
	return last
}

func count(t *testing.T, r *Runtime, signalID string, kind ora.EntryKind) int {
	t.Helper()
	entries, err := r.ledger.Entries(context.Background(), signalID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// A fault injected once at a stage pauses the wave with a classified
// incident; resuming it completes the wave from that stage, and the action
// runs exactly once.
func TestFaultPausesAndResumeCompletes(t *testing.T) {
	cases := []struct {
		state, stage string
	}{
		{"Act", "Act"},
		{"Reason", "Reason"},
		{"Fetch", "Fetch observations"},
		{"Technical validator", "Validate"},
	}
	for _, tc := range cases {
		t.Run(tc.state, func(t *testing.T) {
			ctx := context.Background()
			cfg := testConfig(t, t.TempDir())
			cfg.Faults = []FaultConfig{{State: tc.state, Error: "InternalError", Cause: "drill", Times: 1}}
			r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			srv := httptest.NewServer(r.Handler())
			defer srv.Close()
			rec := send(t, r, srv.URL, "fault-"+tc.state, `{"confidence":"high"}`)

			st := waitOperator(t, r, rec.WaveID, operate.StatePaused)
			if st.Stage != tc.stage || st.IncidentID == "" || st.Taxonomy == "" {
				t.Fatalf("paused: got %+v, want stage %q with an incident", st, tc.stage)
			}
			inc, err := r.ops.Incident(ctx, st.IncidentID)
			if err != nil || len(inc.Occurrences) != 1 || inc.Status != "open" || inc.Fingerprint.Stage != tc.stage {
				t.Fatalf("incident: %+v, %v", inc, err)
			}
			// The pause token is recorded asynchronously; resume retries until it is.
			var res operate.Resumed
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				res, err = r.ops.Resume(ctx, rec.WaveID, operate.ResumeRequest{AsIs: true, By: "tester"})
				if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "pausing") {
					break
				}
			}
			if err != nil || res.ResumeAt != tc.stage {
				t.Fatalf("resume: %+v, %v", res, err)
			}
			if _, err := r.ops.Resume(ctx, rec.WaveID, operate.ResumeRequest{AsIs: true, By: "tester"}); ora.ErrorCode(err) != ora.ECONFLICT {
				t.Errorf("second resume: got %v, want a conflict", err)
			}
			st = waitOperator(t, r, rec.WaveID, operate.StateSuccess, operate.StateFailed)
			if st.State != operate.StateSuccess {
				w, _ := waves{r}.Wave(ctx, rec.WaveID)
				t.Fatalf("after resume: %+v (%s %s)", st, w.Error, w.Cause)
			}
			if n := count(t, r, rec.SignalID, ora.KindExecutionEvidence); n != 1 {
				t.Errorf("execution-evidence entries: %d, want 1 (the action ran once)", n)
			}
			// Finished stages ran once; the failed stage ran twice (the fault, then the resume).
			entered := map[string]int{}
			hist, _ := r.engine.GetExecutionHistory(ctx, r.executionArn(rec.WaveID))
			for _, ev := range hist {
				if ev.StateEnteredEventDetails != nil {
					entered[ev.StateEnteredEventDetails.Name]++
				}
			}
			for _, name := range r.children.Entered(r.executionArn(rec.WaveID)) {
				entered[name]++ // the stages the Express children ran
			}
			// A small fan-out runs in the reason child's inline Map; a
			// resume at Fetch observations runs the Distributed Map.
			entered["Fetch observations"] += entered["Fetch each job"]
			for _, stage := range []string{"Plan observations", "Fetch observations", "Compile orientation packet", "Reason", "Act", "Validate"} {
				want := 1
				if stage == tc.stage {
					want = 2
				}
				if entered[stage] != want {
					t.Errorf("%s entered %d times, want %d", stage, entered[stage], want)
				}
			}
			inc, _ = r.ops.Incident(ctx, st.IncidentID)
			if inc.Resumed != 1 || inc.Status != "resolved" {
				t.Errorf("incident after resume: %+v", inc)
			}
		})
	}
}

// A paused wave survives a restart of ora dev: the next runtime resumes it.
func TestPausedWaveSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, t.TempDir())
	cfg.Faults = []FaultConfig{{State: "Act", Error: "InternalError", Times: 1}}
	first, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(first.Handler())
	rec := send(t, first, srv.URL, "restart-paused", `{"confidence":"high"}`)
	waitOperator(t, first, rec.WaveID, operate.StatePaused)
	// The token is recorded once the wave waits.
	for deadline := time.Now().Add(10 * time.Second); count(t, first, rec.SignalID, ora.KindOperatorDecision) < 2 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	srv.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.Faults = nil
	second, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if st := waitOperator(t, second, rec.WaveID, operate.StatePaused); st.Stage != "Act" {
		t.Fatalf("after the restart: %+v", st)
	}
	if _, err := second.ops.Resume(ctx, rec.WaveID, operate.ResumeRequest{AsIs: true, By: "tester"}); err != nil {
		t.Fatalf("resume after the restart: %v", err)
	}
	if st := waitOperator(t, second, rec.WaveID, operate.StateSuccess, operate.StateFailed); st.State != operate.StateSuccess {
		t.Fatalf("after resume: %+v", st)
	}
	if n := count(t, second, rec.SignalID, ora.KindExecutionEvidence); n != 1 {
		t.Errorf("execution-evidence: %d, want 1", n)
	}
}

// Every decision records the motor version and the app version it ran
// under; the app version is app_version with the app context's digest, which
// a secret does not change and a source's settings do.
func TestDecisionsRecordTheVersions(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, t.TempDir())
	cfg.AppVersion = "2.1.0"
	want, err := cfg.AppVersionOf()
	if err != nil || !strings.HasPrefix(want, "2.1.0+") {
		t.Fatalf("app version %q, %v", want, err)
	}
	secret := cfg
	secret.Sources = append([]observe.SourceConfig(nil), cfg.Sources...)
	secret.Sources[0].Secret = "another secret"
	setting := cfg
	setting.Sources = append([]observe.SourceConfig(nil), cfg.Sources...)
	setting.Sources[0].Header = "X-Other-Signature"
	if v, _ := secret.AppVersionOf(); v != want {
		t.Errorf("a secret changed the app version: %s -> %s", want, v)
	}
	if v, _ := setting.AppVersionOf(); v == want {
		t.Errorf("a source's setting left the app version at %s", v)
	}
	bad := cfg
	bad.AppVersion = "2.1"
	if err := bad.complete(); ora.ErrorField(err) != "app_version" {
		t.Errorf("app_version 2.1: %v, want EINVALID app_version", err)
	}

	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	rec := send(t, r, srv.URL, "versions", `{"confidence":"high"}`)
	waitOperator(t, r, rec.WaveID, operate.StateSuccess)
	motorNow, _, _, err := r.motors.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := r.ledger.Entries(ctx, rec.SignalID)
	found := false
	for _, e := range entries {
		if e.Kind != ora.KindReasonerDecision {
			continue
		}
		found = true
		var d ora.ReasonerDecision
		_ = json.Unmarshal(e.Body, &d)
		if d.AppVersion != want || d.MotorVersion != motorNow.Version || d.MotorVersion == "" {
			t.Errorf("decision: app %q motor %q; want app %q motor %q", d.AppVersion, d.MotorVersion, want, motorNow.Version)
		}
	}
	if !found {
		t.Fatal("no decision recorded")
	}
}

// A wave paused at Fetch past the jobs' retention finds its jobs file gone
// (the jobs bucket's lifecycle on AWS): the resume re-enters at Plan, which
// keeps the pinned profile version (a newer version exists by then) and
// writes the jobs again, and the wave completes.
func TestResumeAtFetchAfterTheJobsExpired(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, t.TempDir())
	cfg.Faults = []FaultConfig{{State: "Fetch", Error: "InternalError", Cause: "drill", Times: 1}}
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	rec := send(t, r, srv.URL, "expired-jobs", `{"confidence":"high"}`)
	if st := waitOperator(t, r, rec.WaveID, operate.StatePaused); st.Stage != "Fetch observations" {
		t.Fatalf("paused: %+v, want at Fetch observations", st)
	}
	profiles := orient.NewProfiles(r.ledger)
	pin, err := profiles.PinOf(ctx, rec.SignalID)
	if err != nil {
		t.Fatal(err)
	}
	// Meanwhile the profile moved on: a re-plan that pinned afresh would take v+1.
	cur, err := profiles.Current(ctx, pin.ProfileID)
	if err != nil {
		t.Fatal(err)
	}
	next := cur
	next.Version, next.UpdatedAt = cur.Version+1, time.Time{}
	next.UpdatedBy = "a later change"
	if _, err := profiles.Put(ctx, next); err != nil {
		t.Fatal(err)
	}
	// Eight days later the jobs file has expired.
	jobs := r.jobs()
	if staged, err := jobs.Staged(ctx, rec.SignalID); err != nil || !staged {
		t.Fatalf("before the expiry: staged %v, %v", staged, err)
	}
	if n, err := jobs.Expire(JobsRetention, time.Now().Add(8*24*time.Hour)); err != nil || n < 1 {
		t.Fatalf("expire: %d, %v", n, err)
	}
	if staged, err := jobs.Staged(ctx, rec.SignalID); err != nil || staged {
		t.Fatalf("after the expiry: staged %v, %v", staged, err)
	}

	var res operate.Resumed
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		res, err = r.ops.Resume(ctx, rec.WaveID, operate.ResumeRequest{AsIs: true, By: "tester"})
		if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "pausing") {
			break
		}
	}
	if err != nil || res.ResumeAt != "Plan observations" {
		t.Fatalf("resume: %+v, %v; want it at Plan observations", res, err)
	}
	if st := waitOperator(t, r, rec.WaveID, operate.StateSuccess, operate.StateFailed); st.State != operate.StateSuccess {
		w, _ := waves{r}.Wave(ctx, rec.WaveID)
		t.Fatalf("after resume: %+v (%s %s)", st, w.Error, w.Cause)
	}
	if staged, err := jobs.Staged(ctx, rec.SignalID); err != nil || !staged {
		t.Errorf("after the resume: staged %v, %v; want Plan to have written the jobs again", staged, err)
	}
	again, err := profiles.PinOf(ctx, rec.SignalID)
	if err != nil || again != pin {
		t.Errorf("pin after the resume: %+v, %v; want %+v", again, err, pin)
	}
	entries, err := r.ledger.Entries(ctx, rec.SignalID)
	if err != nil {
		t.Fatal(err)
	}
	packets, checked := 0, false
	for _, e := range entries {
		switch {
		case e.Kind == ora.KindOrientationPacket:
			packets++
			var p ora.OrientationPacket
			if err := json.Unmarshal(e.Body, &p); err != nil {
				t.Fatal(err)
			}
			if p.ProfileVersion != pin.ProfileVersion {
				t.Errorf("packet compiled under profile version %d, want the pinned %d (current is %d)", p.ProfileVersion, pin.ProfileVersion, next.Version)
			}
		case e.Kind == ora.KindOperatorDecision && strings.HasPrefix(e.Qualifier, "validating/"):
			checked = strings.Contains(string(e.Body), "jobs:expired")
		}
	}
	if packets != 1 || !checked {
		t.Errorf("packets %d (want 1); VALIDATING records the expired jobs: %v", packets, checked)
	}
	if n := count(t, r, rec.SignalID, ora.KindExecutionEvidence); n != 1 {
		t.Errorf("execution-evidence entries: %d, want 1", n)
	}
}

// A wave whose Reason fails on a malformed signal field pauses (APP-SPEC);
// resumed with an input patch, Reason reads the patched field: the signal
// said "low" (a human would decide), the patch says "high", and the wave
// completes without a human under the same motor version. The decision
// records the patch it was made under; the signal entry is unchanged.
func TestInputPatchReachesReason(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, t.TempDir())
	cfg.Faults = []FaultConfig{{State: "Reason", Error: "InvalidInput", Cause: "field confidence: \"low\" is not what the sender meant", Times: 1}}
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	rec := send(t, r, srv.URL, "input-patch", `{"confidence":"low"}`)
	st := waitOperator(t, r, rec.WaveID, operate.StatePaused)
	if st.Stage != "Reason" || st.Taxonomy != operate.AppSpec {
		t.Fatalf("paused: %+v, want APP-SPEC at Reason", st)
	}
	patch := &operate.AppPatch{Kind: operate.PatchInput, Target: "confidence", Value: json.RawMessage(`"high"`)}
	// PAUSED is reported once the operator's decision is written; the task
	// token follows it, and until then a resume answers that the wave is
	// still pausing.
	resume := func(req operate.ResumeRequest) (operate.Resumed, error) {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			res, err := r.ops.Resume(ctx, rec.WaveID, req)
			if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "pausing") {
				return res, err
			}
		}
	}
	if _, err := resume(operate.ResumeRequest{Patch: &operate.AppPatch{Kind: operate.PatchInput, Target: "severity", Value: json.RawMessage(`"high"`)}, By: "tester"}); ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), "patch.target") {
		t.Fatalf("a patch of a field the signal lacks: got %v, want EINVALID naming patch.target", err)
	}
	res, err := resume(operate.ResumeRequest{Patch: patch, By: "tester"})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if st := waitOperator(t, r, rec.WaveID, operate.StateSuccess, operate.StateFailed); st.State != operate.StateSuccess {
		t.Fatalf("after the resume: %+v", st)
	}
	entries, err := r.ledger.Entries(ctx, rec.SignalID)
	if err != nil {
		t.Fatal(err)
	}
	checked, _ := patch.Check()
	var decided, signalled bool
	for _, e := range entries {
		switch e.Kind {
		case ora.KindReasonerDecision:
			var d ora.ReasonerDecision
			if err := json.Unmarshal(e.Body, &d); err != nil {
				t.Fatal(err)
			}
			decided = true
			if d.Band() != ora.BandHigh || d.AppPatch == nil || d.AppPatch.Digest != checked.Digest || d.MotorVersion != res.MotorVersion {
				t.Errorf("decision: band %s, patch %+v, motor %s; want high, the patch %s, motor %s", d.Band(), d.AppPatch, d.MotorVersion, checked.Digest, res.MotorVersion)
			}
		case ora.KindSignalReceived:
			signalled = strings.Contains(string(e.Body), `"low"`)
		}
	}
	if !decided || !signalled {
		t.Errorf("decided %v; signal entry unchanged %v", decided, signalled)
	}
	if n := count(t, r, rec.SignalID, ora.KindExecutionEvidence); n != 1 {
		t.Errorf("execution-evidence: %d, want 1", n)
	}
}
