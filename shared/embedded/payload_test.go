package embedded

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/stepfn"
	"github.com/ora-runtime/ora/statemachines"
)

// maxStateInput bounds every state's input in a wave: far under Step
// Functions' 256 KiB payload quota, whatever the number of failures.
const maxStateInput = 32 << 10

// A wave whose Compile always fails is caught, retried after a backoff and
// resumed by the operator ten times on the real definitions: no state's
// input grows with the failures (each child's failure used to embed the
// child's whole input, previous failures included, until the execution hit
// States.DataLimitExceeded).
func TestPayloadBoundedAcrossResumes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	const resumes = 10
	cfg.Operate.AutoResumeTransient = true
	cfg.Operate.MaxAutoResumes = resumes
	cfg.Faults = []FaultConfig{{State: "Compile orientation packet", Error: "TransientError", Cause: strings.Repeat("the store is away ", 50), Times: 1 << 20}}
	r, err := New(ctx, cfg, func(o *Options) {
		o.Logger = discard()
		o.Clock = stepfn.NewVirtualClock(time.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	rec := send(t, r, srv.URL, "payload-1", `{"confidence":"high"}`)

	// Wait until the operator has taken the wave through every automatic
	// resume and paused it (or failed it).
	arn := r.executionArn(rec.WaveID)
	var hist []stepfn.HistoryEvent
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		hist, err = r.engine.GetExecutionHistory(ctx, arn)
		if err != nil {
			t.Fatal(err)
		}
		if waiting(hist) {
			break
		}
	}
	if n := operated(hist); n <= resumes {
		for _, ev := range hist[max(0, len(hist)-6):] {
			b, _ := json.Marshal(ev)
			t.Logf("%.300s", b)
		}
		t.Fatalf("the operator ran %d times, want more than %d (every resume failed again)", n, resumes)
	}
	largest, name := 0, ""
	for _, ev := range hist {
		if d := ev.StateEnteredEventDetails; d != nil && len(d.Input) > largest {
			largest, name = len(d.Input), d.Name
		}
	}
	t.Logf("%d operator runs; the largest state input is %d bytes (%s)", operated(hist), largest, name)
	if largest > maxStateInput {
		t.Errorf("state %q entered with %d bytes of input after %d failures, want at most %d", name, largest, resumes, maxStateInput)
	}
}

func operated(hist []stepfn.HistoryEvent) int {
	n := 0
	for _, ev := range hist {
		if d := ev.StateEnteredEventDetails; d != nil && d.Name == "Operate on failure" {
			n++
		}
	}
	return n
}

// waiting reports whether the wave's last state entered is the pause, or it ended.
func waiting(hist []stepfn.HistoryEvent) bool {
	for i := len(hist) - 1; i >= 0; i-- {
		ev := hist[i]
		if ev.ExecutionFailedEventDetails != nil || ev.ExecutionSucceededEventDetails != nil {
			return true
		}
		if d := ev.StateEnteredEventDetails; d != nil {
			return d.Name == "Wait for resume" || d.Name == "Wave failed"
		}
	}
	return false
}

// The orientation profile's max_concurrency reaches the Fetch Map: Plan
// returns it and the deployed definition reads it (MaxConcurrencyPath)
// instead of a fixed 128.
func TestProfileConcurrencyReachesTheMap(t *testing.T) {
	var def struct {
		States map[string]map[string]any
	}
	if err := json.Unmarshal(statemachines.Wave, &def); err != nil {
		t.Fatal(err)
	}
	m := def.States["Fetch observations"]
	if m["MaxConcurrencyPath"] != "$.plan.max_concurrency" || m["MaxConcurrency"] != nil {
		t.Fatalf("the Map's concurrency: MaxConcurrency %v, MaxConcurrencyPath %v; want the path $.plan.max_concurrency only", m["MaxConcurrency"], m["MaxConcurrencyPath"])
	}
	ctx := context.Background()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	rec := send(t, r, srv.URL, "concurrency-1", `{"confidence":"high"}`)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		hist, err := r.engine.GetExecutionHistory(ctx, r.executionArn(rec.WaveID))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range hist {
			if d := ev.StateExitedEventDetails; d != nil && d.Name == "Plan observations" {
				var out struct {
					Plan struct {
						MaxConcurrency int `json:"max_concurrency"`
					} `json:"plan"`
				}
				_ = json.Unmarshal([]byte(d.Output), &out)
				if out.Plan.MaxConcurrency != ora.DefaultMaxConcurrency {
					t.Fatalf("Plan returned max_concurrency %d, want the default profile's %d", out.Plan.MaxConcurrency, ora.DefaultMaxConcurrency)
				}
				return
			}
		}
	}
	t.Fatal("Plan observations never exited")
}
