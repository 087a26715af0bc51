package embedded

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/stepfn"
)

// failing wraps a task handler: while on is set, each call fails with the
// Lambda error typ, after running the handler when after is set (its work
// done, its answer lost).
type failing struct {
	inner stepfn.Handler
	on    *atomic.Bool
	typ   string
	after bool
}

func (h failing) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if !h.on.Load() {
		return h.inner.Invoke(ctx, payload)
	}
	if h.after {
		if _, err := h.inner.Invoke(ctx, payload); err != nil {
			return nil, err
		}
	}
	return nil, messages.InvokeResponse_Error{Type: h.typ, Message: "injected " + h.typ}
}

// waitStatus polls the wave until its execution's status is not RUNNING.
func waitStatus(t *testing.T, r *Runtime, waveID string) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		w, err := waves{r}.Wave(context.Background(), waveID)
		if err == nil && w.Status != stepfn.StatusRunning {
			return w.Status
		}
	}
	t.Fatalf("wave %s still running", waveID)
	return ""
}

// A wave fails at Act after its action ran, and the operator itself fails
// on that failure: the execution ends FAILED at "Operate on failure", with
// no verdict. A redrive runs the operator again, which retries the
// transient failure at Act; Act finds the action's evidence and does not run
// it again, and the wave completes. A redrive of a wave that succeeded or
// that has a failed verdict is refused, naming why (a running one: the CLI's
// test).
func TestRedriveCompletesAFailedWave(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, t.TempDir())
	cfg.Operate.AutoResumeTransient = true
	actions := &actionLog{count: map[string]int{}}
	r, err := New(ctx, cfg, func(o *Options) {
		o.Logger = slog.New(actions)
		o.Clock = stepfn.NewVirtualClock(time.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hs, err := r.taskHandlers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	down.Store(true)
	r.registerHandler("act", failing{inner: hs["act"], on: &down, typ: "TransientError", after: true})
	r.registerHandler("operate", failing{inner: hs["operate"], on: &down, typ: "InternalError"})
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()

	rec := send(t, r, srv.URL, "redrive-1", `{"confidence":"high"}`)
	if st := waitStatus(t, r, rec.WaveID); st != stepfn.StatusFailed {
		t.Fatalf("wave: %s, want FAILED", st)
	}
	arn := r.executionArn(rec.WaveID)
	hist, _ := r.engine.GetExecutionHistory(ctx, arn)
	if last := lastEntered(hist); last != "Operate on failure" {
		t.Fatalf("the wave failed at %q, want Operate on failure", last)
	}
	if n := count(t, r, rec.SignalID, ora.KindFinalVerdict); n != 0 {
		t.Fatalf("final verdicts before the redrive: %d, want 0", n)
	}
	if n := actions.runs(rec.SignalID); n != 1 {
		t.Fatalf("the action ran %d times before the redrive, want 1", n)
	}

	down.Store(false)
	got, err := r.ops.Redrive(ctx, rec.WaveID, "tester")
	if err != nil || got.Redrive != 1 || got.By != "tester" {
		t.Fatalf("redrive: %+v, %v", got, err)
	}
	if st := waitStatus(t, r, rec.WaveID); st != stepfn.StatusSucceeded {
		w, _ := waves{r}.Wave(ctx, rec.WaveID)
		t.Fatalf("after the redrive: %s (%s %s), want SUCCEEDED", st, w.Error, w.Cause)
	}
	if n := actions.runs(rec.SignalID); n != 1 {
		t.Errorf("the action ran %d times, want 1 (the redrive did not repeat it)", n)
	}
	if n := count(t, r, rec.SignalID, ora.KindExecutionEvidence); n != 1 {
		t.Errorf("execution-evidence entries: %d, want 1", n)
	}
	entries, _ := r.ledger.Entries(ctx, rec.SignalID)
	for _, e := range entries {
		if e.Kind == ora.KindFinalVerdict {
			var v operate.Verdict
			_ = json.Unmarshal(e.Body, &v)
			if v.Outcome != "completed" {
				t.Errorf("final verdict %q, want completed", v.Outcome)
			}
		}
	}
	// The history shows the redrive: the operator entered again (the state
	// that failed), the wave resumed at Act; Plan ran once.
	hist, _ = r.engine.GetExecutionHistory(ctx, arn)
	entered, redriven, linked := map[string]int{}, 0, map[string]int{}
	for _, ev := range hist {
		if ev.StateEnteredEventDetails != nil {
			entered[ev.StateEnteredEventDetails.Name]++
		}
		if ev.Type == "ExecutionRedriven" {
			redriven++
		}
		// Each child's execution is linked from the parent's history (the
		// Express children's own histories are not kept, as on AWS).
		if d := ev.TaskSubmittedEventDetails; d != nil && d.Resource == "startExecution.sync:2" {
			var link struct{ ExecutionArn string }
			_ = json.Unmarshal([]byte(d.Output), &link)
			for _, ch := range []string{"reason", "act"} {
				if strings.Contains(link.ExecutionArn, ":execution:"+stateMachine+"-"+ch+":") {
					linked[ch]++
				}
			}
		}
	}
	if linked["reason"] != 1 || linked["act"] != 2 {
		t.Errorf("children linked from the parent's history: %v, want reason 1, act 2", linked)
	}
	if redriven != 1 || entered["Plan observations"] != 1 || entered["Act and validate"] != 2 || entered["Operate on failure"] != 2 {
		t.Errorf("history: %d ExecutionRedriven, entered %v", redriven, entered)
	}

	refusals := []struct {
		name, body, want string
	}{
		{"succeeded", "", "already has its final verdict (completed)"},
		{"failed verdict", `{"confidence":"fail"}`, "already has its final verdict (failed"},
	}
	for i, tc := range refusals {
		t.Run("refused when "+tc.name, func(t *testing.T) {
			wave := rec.WaveID
			if tc.body != "" {
				wave = send(t, r, srv.URL, "redrive-refused-"+string(rune('a'+i)), tc.body).WaveID
				waitStatus(t, r, wave)
			}
			_, err := r.ops.Redrive(ctx, wave, "tester")
			if ora.ErrorCode(err) != ora.ECONFLICT || !strings.Contains(ora.ErrorMessage(err), tc.want) {
				t.Errorf("got %v, want a conflict saying %q", err, tc.want)
			}
		})
	}
	if _, err := r.ops.Redrive(ctx, "no-such-wave", "tester"); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("an unknown wave: got %v, want ENOTFOUND", err)
	}
}

// lastEntered is the last state the history entered.
func lastEntered(hist []stepfn.HistoryEvent) string {
	last := ""
	for _, ev := range hist {
		if ev.StateEnteredEventDetails != nil {
			last = ev.StateEnteredEventDetails.Name
		}
	}
	return last
}

// A wave stopped while it waits for a human ends ABORTED at the escalation,
// with no verdict; redriven, it waits for the human again, and the approval
// completes it.
func TestRedriveAStoppedWave(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, t.TempDir())
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	rec := send(t, r, srv.URL, "redrive-stop", `{"confidence":"low"}`)
	decision := waitIntent(t, r, rec.SignalID)
	arn := r.executionArn(rec.WaveID)
	if err := r.engine.StopExecution(ctx, arn, "Operator.Stopped", "stopped to test a redrive"); err != nil {
		t.Fatal(err)
	}
	if st := waitStatus(t, r, rec.WaveID); st != stepfn.StatusAborted {
		t.Fatalf("stopped wave: %s, want ABORTED", st)
	}
	if _, err := r.ops.Redrive(ctx, rec.WaveID, "tester"); err != nil {
		t.Fatalf("redrive: %v", err)
	}
	// The escalation runs again and waits on a new token.
	for deadline := time.Now().Add(10 * time.Second); tokenTasks(r, rec.WaveID) != 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the escalation was submitted %d times, want 2", tokenTasks(r, rec.WaveID))
		}
	}
	if _, err := r.verdicts().Settle(ctx, decision, true, "tester", "after a redrive"); err != nil {
		t.Fatalf("approve after the redrive: %v", err)
	}
	if st := waitStatus(t, r, rec.WaveID); st != stepfn.StatusSucceeded {
		w, _ := waves{r}.Wave(ctx, rec.WaveID)
		t.Fatalf("after the approval: %s (%s %s), want SUCCEEDED", st, w.Error, w.Cause)
	}
	if n := count(t, r, rec.SignalID, ora.KindExecutionEvidence); n != 1 {
		t.Errorf("execution-evidence entries: %d, want 1", n)
	}
}
