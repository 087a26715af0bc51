package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/stepfn"
)

func TestExecutionStoreContract(t *testing.T) {
	ctx := context.Background()
	s := NewExecutionStore(openDB(t))
	rec := stepfn.ExecutionRecord{
		Execution: stepfn.Execution{ExecutionArn: "arn:x", StateMachineArn: "arn:sm", Name: "x", Status: stepfn.StatusRunning,
			Input: json.RawMessage(`{"a":1}`), StartDate: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		Definition: []byte(`{"StartAt":"A"}`),
		Checkpoint: []byte(`{"state":"A"}`),
	}
	ev := func(id int64, typ string) stepfn.HistoryEvent {
		return stepfn.HistoryEvent{Type: typ, ID: id, PreviousEventID: id - 1, Timestamp: rec.StartDate}
	}
	if err := s.CreateExecution(ctx, rec, []stepfn.HistoryEvent{ev(1, "ExecutionStarted")}); err != nil {
		t.Fatalf("CreateExecution: %v", err)
	}
	if err := s.CreateExecution(ctx, rec, nil); !errors.Is(err, stepfn.ErrExists) {
		t.Fatalf("second CreateExecution: %v, want ErrExists", err)
	}
	running, err := s.RunningExecutions(ctx)
	if err != nil || len(running) != 1 || string(running[0].Checkpoint) != `{"state":"A"}` {
		t.Fatalf("RunningExecutions = %+v, %v; want the one record", running, err)
	}
	rec.Status = stepfn.StatusSucceeded
	rec.Output = json.RawMessage(`{"b":2}`)
	if err := s.SaveExecution(ctx, rec, []stepfn.HistoryEvent{ev(2, "ExecutionSucceeded")}); err != nil {
		t.Fatalf("SaveExecution: %v", err)
	}
	got, err := s.GetExecution(ctx, "arn:x")
	if err != nil || got.Status != stepfn.StatusSucceeded || string(got.Output) != `{"b":2}` || !got.StartDate.Equal(rec.StartDate) {
		t.Fatalf("GetExecution = %+v, %v", got.Execution, err)
	}
	h, err := s.History(ctx, "arn:x")
	if err != nil || len(h) != 2 || h[0].Type != "ExecutionStarted" || h[1].ID != 2 {
		t.Fatalf("History = %+v, %v; want 2 events in order", h, err)
	}
	if running, _ := s.RunningExecutions(ctx); len(running) != 0 {
		t.Errorf("RunningExecutions after success = %d records, want 0", len(running))
	}
	missing := rec
	missing.ExecutionArn = "arn:none"
	if err := s.SaveExecution(ctx, missing, nil); !errors.Is(err, stepfn.ErrNotFound) {
		t.Errorf("SaveExecution unknown: %v, want ErrNotFound", err)
	}
	if _, err := s.GetExecution(ctx, "arn:none"); !errors.Is(err, stepfn.ErrNotFound) {
		t.Errorf("GetExecution unknown: %v, want ErrNotFound", err)
	}
	if _, err := s.History(ctx, "arn:none"); !errors.Is(err, stepfn.ErrNotFound) {
		t.Errorf("History unknown: %v, want ErrNotFound", err)
	}
}

const durableDef = `{"StartAt":"First","States":{
	"First":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:first","ResultPath":"$.first","Next":"Slow"},
	"Slow":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:slow","ResultPath":"$.slow","Next":"Approve"},
	"Approve":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
		"Parameters":{"FunctionName":"notify","Payload":{"token.$":"$$.Task.Token"}},"ResultPath":"$.verdict","End":true}}}`

// TestExecutionsSurviveRestart runs an execution into a task, closes the
// engine and the database mid-task, reopens both, resumes, then closes them
// again while the execution waits for a task token, and settles the token on a
// third engine.
func TestExecutionsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ora.db")
	open := func() (*DB, *stepfn.Engine) {
		t.Helper()
		db, err := Open(ctx, path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		e := stepfn.NewEngine(func(o *stepfn.Options) { o.Store = NewExecutionStore(db) })
		return db, e
	}
	blocked := make(chan struct{}, 1)
	var mu sync.Mutex
	calls := map[string]int{}
	count := func(name string) {
		mu.Lock()
		calls[name]++
		mu.Unlock()
	}
	register := func(e *stepfn.Engine, slowBlocks bool, tokens chan<- string) {
		e.RegisterHandler("first", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
			count("first")
			return []byte(`"one"`), nil
		}))
		entered := make(chan struct{}, 1)
		e.RegisterHandler("slow", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
			count("slow")
			if slowBlocks {
				entered <- struct{}{}
				<-ctx.Done() // the engine closes under it
				return nil, ctx.Err()
			}
			return []byte(`"two"`), nil
		}))
		e.RegisterHandler("notify", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
			count("notify")
			var in struct{ Token string }
			if err := json.Unmarshal(p, &in); err != nil {
				return nil, err
			}
			tokens <- in.Token
			return []byte(`{}`), nil
		}))
		if slowBlocks {
			go func() { <-entered; blocked <- struct{}{} }()
		}
	}

	// Run 1: the execution reaches Slow and the process "exits".
	db, e := open()
	tokens := make(chan string, 1)
	register(e, true, tokens)
	sm, err := e.CreateStateMachine("wave", []byte(durableDef))
	if err != nil {
		t.Fatal(err)
	}
	arn, err := e.StartExecution(ctx, sm, "sig-1", []byte(`{"signal_id":"sig-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	<-blocked
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// Run 2: resume; Slow runs again and the execution waits for a token.
	db, e = open()
	register(e, false, tokens)
	if x, err := e.DescribeExecution(ctx, arn); err != nil || x.Status != stepfn.StatusRunning {
		t.Fatalf("after restart: %+v, %v; want RUNNING", x, err)
	}
	if err := e.Resume(ctx); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	token := <-tokens
	waitForEvent(t, e, arn, "TaskSubmitted") // the invocation is recorded: a restart will not repeat it
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// Run 3: the task still waits for the same token after another restart.
	db, e = open()
	defer db.Close()
	register(e, false, tokens)
	if err := e.Resume(ctx); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := e.SendTaskSuccess(ctx, token, []byte(`{"verdict":"approved"}`))
		if err == nil {
			break
		}
		// Resume starts executions asynchronously: the token is registered
		// once the task is waiting again.
		if stepfn.ErrorCode(err) != stepfn.CodeTaskDoesNotExist || time.Now().After(deadline) {
			t.Fatalf("SendTaskSuccess: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	x, err := e.Wait(ctx, arn)
	if err != nil {
		t.Fatal(err)
	}
	if x.Status != stepfn.StatusSucceeded {
		t.Fatalf("status = %s (%s: %s), want SUCCEEDED", x.Status, x.Error, x.Cause)
	}
	var out map[string]any
	if err := json.Unmarshal(x.Output, &out); err != nil {
		t.Fatal(err)
	}
	if out["first"] != "one" || out["slow"] != "two" || out["verdict"].(map[string]any)["verdict"] != "approved" {
		t.Errorf("output = %s", x.Output)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["first"] != 1 || calls["slow"] != 2 || calls["notify"] != 1 {
		t.Errorf("calls = %v; want first 1, slow 2 (re-run after the restart), notify 1 (the token survives)", calls)
	}
	h, err := e.GetExecutionHistory(ctx, arn)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range h {
		if ev.ID != int64(i+1) {
			t.Fatalf("event %d has id %d: ids must stay consecutive across restarts", i, ev.ID)
		}
	}
	if h[len(h)-1].Type != "ExecutionSucceeded" {
		t.Errorf("last event %s, want ExecutionSucceeded", h[len(h)-1].Type)
	}
}

// waitForEvent polls the history until an event of type typ appears.
func waitForEvent(t *testing.T, e *stepfn.Engine, arn, typ string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		h, err := e.GetExecutionHistory(context.Background(), arn)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range h {
			if ev.Type == typ {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %s event within 10s", typ)
}

func TestParallelAndMapOnExecutionStore(t *testing.T) {
	ctx := context.Background()
	e := stepfn.NewEngine(func(o *stepfn.Options) { o.Store = NewExecutionStore(openDB(t)) })
	defer e.Close()
	e.RegisterHandler("double", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
		var n float64
		if err := json.Unmarshal(p, &n); err != nil {
			return nil, err
		}
		return json.Marshal(n * 2)
	}))
	sm, err := e.CreateStateMachine("fan", []byte(`{"StartAt":"P","States":{
		"P":{"Type":"Parallel","ResultPath":"$.p","Next":"M","Branches":[
			{"StartAt":"A","States":{"A":{"Type":"Pass","Result":"a","End":true}}},
			{"StartAt":"B","States":{"B":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:double","InputPath":"$.n","End":true}}}]},
		"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":2,"ResultPath":"$.m",
			"ItemProcessor":{"StartAt":"D","States":{"D":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:double","End":true}}},
			"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	arn, err := e.StartExecution(ctx, sm, "fan-1", []byte(`{"n":4,"items":[1,2,3,4,5]}`))
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.Wait(ctx, arn)
	if err != nil {
		t.Fatal(err)
	}
	if x.Status != stepfn.StatusSucceeded {
		t.Fatalf("status = %s (%s %s)", x.Status, x.Error, x.Cause)
	}
	var got map[string]any
	if err := json.Unmarshal(x.Output, &got); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal([]any{got["p"], got["m"]})
	if want := `[["a",8],[2,4,6,8,10]]`; string(gb) != want {
		t.Errorf("p, m = %s, want %s", gb, want)
	}
	h, err := e.GetExecutionHistory(ctx, arn)
	if err != nil {
		t.Fatal(err)
	}
	iterations := 0
	for _, ev := range h {
		if ev.Type == "MapIterationSucceeded" {
			iterations++
		}
	}
	if iterations != 5 {
		t.Errorf("%d MapIterationSucceeded events in the stored history, want 5", iterations)
	}
}
