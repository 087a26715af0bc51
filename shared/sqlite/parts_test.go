package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// partsDef maps items through an iteration holding a Parallel state: the
// checkpoint has parts two levels deep ("2" and "2/1").
const partsDef = `{"StartAt":"M","States":{
	"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":1,"End":true,
		"ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[
			{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}},
			{"StartAt":"W","States":{"W":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:work","End":true}}}]}}}}}}`

// TestCheckpointPartsResumeAndRedrive stops a Map mid-way (the process
// "exits" while iteration 3 runs), checks what the store holds, resumes it,
// then fails an iteration and redrives: iterations that succeeded never run
// again, and the stored root checkpoint never holds the iterations.
func TestCheckpointPartsResumeAndRedrive(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ora.db")
	var mu sync.Mutex
	calls := map[float64]int{}
	// mode per run: "block" blocks item 3 until the engine closes, "fail"
	// fails item 4, "" succeeds.
	open := func(mode string, blocked chan<- struct{}) (*DB, *stepfn.Engine) {
		t.Helper()
		db, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		e := stepfn.NewEngine(func(o *stepfn.Options) {
			o.Store = NewExecutionStore(db)
			o.Logger = slog.New(slog.NewTextHandler(tlog{t}, nil))
		})
		e.RegisterHandler("work", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
			var n float64
			if err := json.Unmarshal(p, &n); err != nil {
				return nil, err
			}
			mu.Lock()
			calls[n]++
			mu.Unlock()
			switch {
			case mode == "block" && n == 3:
				blocked <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			case mode == "fail" && n == 4:
				return nil, fmt.Errorf("item 4 fails")
			}
			return json.Marshal(n * 10)
		}))
		if _, err := e.CreateStateMachine("parts", []byte(partsDef)); err != nil {
			t.Fatal(err)
		}
		return db, e
	}
	checkStored := func(db *DB, arn string) {
		t.Helper()
		var cp string
		if err := db.r.QueryRowContext(ctx, `SELECT checkpoint FROM stepfn_executions WHERE arn = ?`, arn).Scan(&cp); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(cp, `"children"`) || !strings.Contains(cp, `"parts":6`) {
			t.Errorf("root checkpoint %s: want the 6 iterations counted as parts, not included", cp)
		}
		if strings.Contains(cp, `"items"`) {
			t.Errorf("root checkpoint %s: want the Map's input kept as a part, not rewritten with every event", cp)
		}
		var n int
		if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM stepfn_checkpoint_parts WHERE arn = ? AND key NOT LIKE '%/%' AND key != 'input'`, arn).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 6 {
			t.Errorf("%d iteration parts stored, want 6", n)
		}
	}

	// Run 1: iterations 1 and 2 succeed; 3 is running when the engine closes.
	blocked := make(chan struct{}, 1)
	db, e := open("block", blocked)
	sm := "arn:aws:states:us-east-1:123456789012:stateMachine:parts"
	arn, err := e.StartExecution(ctx, sm, "p-1", []byte(`{"items":[1,2,3,4,5,6]}`))
	if err != nil {
		t.Fatal(err)
	}
	<-blocked
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	checkStored(db, arn)
	db.Close()

	// Run 2: resume; item 4 fails, and the execution with it.
	db, e = open("fail", nil)
	if err := e.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	x, err := e.Wait(ctx, arn)
	if err != nil {
		t.Fatal(err)
	}
	if x.Status != stepfn.StatusFailed {
		t.Fatalf("after resume: %s (%s %s), want FAILED at item 4", x.Status, x.Error, x.Cause)
	}
	checkStored(db, arn)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// Run 3: redrive; only what did not succeed runs again.
	db, e = open("", nil)
	defer db.Close()
	defer e.Close()
	if err := e.RedriveExecution(ctx, arn); err != nil {
		t.Fatal(err)
	}
	if x, err = e.Wait(ctx, arn); err != nil {
		t.Fatal(err)
	}
	if x.Status != stepfn.StatusSucceeded {
		t.Fatalf("after redrive: %s (%s %s)", x.Status, x.Error, x.Cause)
	}
	var out []json.RawMessage
	if err := json.Unmarshal(x.Output, &out); err != nil || len(out) != 6 {
		t.Fatalf("output %s: %v", x.Output, err)
	}
	for i, o := range out {
		if want := fmt.Sprintf(`[%d,%d]`, i+1, (i+1)*10); strings.ReplaceAll(string(o), " ", "") != want {
			t.Errorf("iteration %d output %s, want %s", i, o, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 6 {
		t.Errorf("calls = %v, want items 1-6", calls)
	}
	for n, c := range calls {
		// One at a time: 3 blocked, then resumed; 4 failed, then redriven;
		// the others once.
		want := 1
		if n == 3 || n == 4 {
			want = 2
		}
		if c != want {
			t.Errorf("item %v ran %d times, want %d", n, c, want)
		}
	}
	var parts int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM stepfn_checkpoint_parts WHERE arn = ?`, arn).Scan(&parts); err != nil {
		t.Fatal(err)
	}
	if parts != 0 {
		t.Errorf("%d checkpoint parts left after SUCCEEDED, want 0", parts)
	}
}

// tlog writes the engine's log into the test's.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) { l.t.Log(strings.TrimSpace(string(p))); return len(p), nil }

// TestEventsSavedBeforeInvoke checks that events saved in a batch are all in
// the store when a task's handler runs: the engine writes the events that
// need no write of their own (states entered and exited, a task scheduled)
// with the next one that does, and a task's start is one.
func TestEventsSavedBeforeInvoke(t *testing.T) {
	ctx := context.Background()
	e := stepfn.NewEngine(func(o *stepfn.Options) { o.Store = NewExecutionStore(openDB(t)) })
	defer e.Close()
	arn := "arn:aws:states:us-east-1:123456789012:execution:batch:b-1"
	var seen [][]string
	e.RegisterHandler("look", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
		h, err := e.GetExecutionHistory(ctx, arn)
		if err != nil {
			return nil, err
		}
		var types []string
		for i, ev := range h {
			if ev.ID != int64(i+1) {
				return nil, fmt.Errorf("event %d has id %d", i, ev.ID)
			}
			types = append(types, ev.Type)
		}
		seen = append(seen, types)
		return []byte(`{}`), nil
	}))
	sm, err := e.CreateStateMachine("batch", []byte(`{"StartAt":"P","States":{
		"P":{"Type":"Pass","Next":"T1"},
		"T1":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:look","Next":"T2"},
		"T2":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:look","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.StartExecution(ctx, sm, "b-1", nil); err != nil {
		t.Fatal(err)
	}
	if x, err := e.Wait(ctx, arn); err != nil || x.Status != stepfn.StatusSucceeded {
		t.Fatalf("%+v %v", x, err)
	}
	want := [][]string{
		{"ExecutionStarted", "PassStateEntered", "PassStateExited", "TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted"},
		{"ExecutionStarted", "PassStateEntered", "PassStateExited", "TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted",
			"LambdaFunctionSucceeded", "TaskStateExited", "TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted"},
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("history seen by the handlers:\n%v\nwant\n%v", seen, want)
	}
	h, err := e.GetExecutionHistory(ctx, arn)
	if err != nil || len(h) != 14 || h[13].Type != "ExecutionSucceeded" {
		t.Errorf("final history: %d events, %v", len(h), err)
	}
}
