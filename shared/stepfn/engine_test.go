package stepfn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/stepfn"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newEngine returns an engine on a virtual clock starting at epoch.
func newEngine(t *testing.T, opts ...func(*stepfn.Options)) *stepfn.Engine {
	t.Helper()
	all := append([]func(*stepfn.Options){func(o *stepfn.Options) { o.Clock = stepfn.NewVirtualClock(epoch) }}, opts...)
	e := stepfn.NewEngine(all...)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// run creates def, starts it with input and waits for the end.
func run(t *testing.T, e *stepfn.Engine, def, input string) (string, stepfn.Execution) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sm, err := e.CreateStateMachine("sm", []byte(def))
	if err != nil {
		t.Fatalf("CreateStateMachine: %v", err)
	}
	arn, err := e.StartExecution(ctx, sm, "exec-1", []byte(input))
	if err != nil {
		t.Fatalf("StartExecution: %v", err)
	}
	x, err := e.Wait(ctx, arn)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return arn, x
}

func jsonEq(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got %s: not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %s: not JSON: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("got %s, want %s", gb, wb)
	}
}

// TransientError mimics taskerr's named error types.
type TransientError struct{ Message string }

func (e *TransientError) Error() string { return e.Message }

func TestHandlerErrorName(t *testing.T) {
	e := newEngine(t)
	e.RegisterHandler("work", stepfn.LambdaHandler(func(ctx context.Context, in map[string]any) (map[string]any, error) {
		return nil, &TransientError{Message: "try later"}
	}))
	_, x := run(t, e, `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:work","End":true}}}`, `{}`)
	if x.Status != stepfn.StatusFailed || x.Error != "TransientError" {
		t.Fatalf("status, error = %s, %s; want FAILED, TransientError", x.Status, x.Error)
	}
	jsonEq(t, []byte(x.Cause), `{"errorMessage":"try later","errorType":"TransientError"}`)
}

func TestLambdaInvokeWrapsResult(t *testing.T) {
	e := newEngine(t)
	e.RegisterHandler("echo", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) { return p, nil }))
	_, x := run(t, e, `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
		"Parameters":{"FunctionName":"arn:aws:lambda:us-east-1:123456789012:function:echo:$LATEST","Payload":{"v.$":"$.v"}},
		"ResultSelector":{"p.$":"$.Payload","code.$":"$.StatusCode"},"End":true}}}`, `{"v":3}`)
	if x.Status != stepfn.StatusSucceeded {
		t.Fatalf("status = %s (%s: %s), want SUCCEEDED", x.Status, x.Error, x.Cause)
	}
	jsonEq(t, x.Output, `{"p":{"v":3},"code":200}`)
}

// retryDef fails twice with TransientError, then succeeds.
const retryDef = `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:flaky",
	"Retry":[{"ErrorEquals":["TransientError"],"IntervalSeconds":3,"BackoffRate":2,"MaxAttempts":3}],"End":true}}}`

func TestRetryBackoffOnVirtualClock(t *testing.T) {
	e := newEngine(t)
	var mu sync.Mutex
	calls := 0
	e.RegisterHandler("flaky", stepfn.LambdaHandler(func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls <= 2 {
			return "", &TransientError{Message: "again"}
		}
		return "ok", nil
	}))
	arn, x := run(t, e, retryDef, `{}`)
	if x.Status != stepfn.StatusSucceeded {
		t.Fatalf("status = %s, want SUCCEEDED", x.Status)
	}
	h, err := e.GetExecutionHistory(context.Background(), arn)
	if err != nil {
		t.Fatal(err)
	}
	var starts []time.Duration
	for _, ev := range h {
		if ev.Type == "LambdaFunctionStarted" {
			starts = append(starts, ev.Timestamp.Sub(epoch))
		}
	}
	want := []time.Duration{0, 3 * time.Second, 9 * time.Second} // 3 s, then 3*2 s
	if len(starts) != len(want) {
		t.Fatalf("attempts at %v, want %v", starts, want)
	}
	for i := range want {
		if starts[i] != want[i] {
			t.Errorf("attempt %d at +%v, want +%v", i, starts[i], want[i])
		}
	}
	if got := x.StopDate.Sub(epoch); got != 9*time.Second {
		t.Errorf("stop at +%v, want +9s", got)
	}
}

func TestRetryMaxDelayCapsBackoff(t *testing.T) {
	e := newEngine(t)
	e.RegisterHandler("flaky", stepfn.LambdaHandler(func(ctx context.Context) (string, error) {
		return "", &TransientError{Message: "never"}
	}))
	def := strings.Replace(retryDef, `"MaxAttempts":3`, `"MaxAttempts":4,"MaxDelaySeconds":5`, 1)
	_, x := run(t, e, def, `{}`)
	if x.Status != stepfn.StatusFailed || x.Error != "TransientError" {
		t.Fatalf("status, error = %s, %s; want FAILED, TransientError", x.Status, x.Error)
	}
	// Delays 3, 5 (6 capped), 5 (12 capped), 5 (24 capped).
	if got := x.StopDate.Sub(epoch); got != 18*time.Second {
		t.Errorf("stop at +%v, want +18s", got)
	}
}

func TestWaitStatesTakeVirtualTime(t *testing.T) {
	e := newEngine(t)
	_, x := run(t, e, `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":86400,"Next":"P"},
		"P":{"Type":"Wait","SecondsPath":"$.s","End":true}}}`, `{"s":60}`)
	if x.Status != stepfn.StatusSucceeded {
		t.Fatalf("status = %s, want SUCCEEDED", x.Status)
	}
	if got, want := x.StopDate.Sub(x.StartDate), 86460*time.Second; got != want {
		t.Errorf("virtual duration = %v, want %v", got, want)
	}
}

func TestStartExecutionIdempotent(t *testing.T) {
	e := newEngine(t)
	release := make(chan struct{})
	e.RegisterHandler("block", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return []byte(`"done"`), nil
	}))
	ctx := context.Background()
	sm, err := e.CreateStateMachine("sm", []byte(`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:block","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	a1, err := e.StartExecution(ctx, sm, "sig-1", []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	a2, err := e.StartExecution(ctx, sm, "sig-1", []byte(`{ "a" : 1 }`))
	if err != nil || a2 != a1 {
		t.Fatalf("same name and input: got %q, %v; want %q, nil", a2, err, a1)
	}
	if _, err := e.StartExecution(ctx, sm, "sig-1", []byte(`{"a":2}`)); stepfn.ErrorCode(err) != stepfn.CodeExecutionAlreadyExists {
		t.Fatalf("different input: err = %v, want ExecutionAlreadyExists", err)
	}
	close(release)
	if _, err := e.Wait(ctx, a1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.StartExecution(ctx, sm, "sig-1", []byte(`{"a":1}`)); stepfn.ErrorCode(err) != stepfn.CodeExecutionAlreadyExists {
		t.Fatalf("closed execution: err = %v, want ExecutionAlreadyExists", err)
	}
}

func TestStopExecution(t *testing.T) {
	e := newEngine(t)
	ctx := context.Background()
	sm, err := e.CreateStateMachine("sm", []byte(`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
		"Parameters":{"FunctionName":"notify","Payload":{"token.$":"$$.Task.Token"}},"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tokens := make(chan string, 1)
	e.RegisterHandler("notify", tokenCatcher(tokens))
	arn, err := e.StartExecution(ctx, sm, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	token := <-tokens
	if err := e.StopExecution(ctx, arn, "Operator", "stopped by hand"); err != nil {
		t.Fatal(err)
	}
	x, err := e.DescribeExecution(ctx, arn)
	if err != nil {
		t.Fatal(err)
	}
	if x.Status != stepfn.StatusAborted || x.Error != "Operator" || x.Cause != "stopped by hand" {
		t.Errorf("got %s %s %s, want ABORTED Operator stopped by hand", x.Status, x.Error, x.Cause)
	}
	if err := e.SendTaskSuccess(ctx, token, []byte(`{}`)); stepfn.ErrorCode(err) != stepfn.CodeTaskTimedOut {
		t.Errorf("SendTaskSuccess after stop: err = %v, want TaskTimedOut", err)
	}
	h, _ := e.GetExecutionHistory(ctx, arn)
	if last := h[len(h)-1]; last.Type != "ExecutionAborted" {
		t.Errorf("last event = %s, want ExecutionAborted", last.Type)
	}
}

// tokenCatcher is a handler that sends the payload's "token" on ch.
func tokenCatcher(ch chan<- string) stepfn.Handler {
	return stepfn.LambdaHandler(func(ctx context.Context, in struct {
		Token string `json:"token"`
	}) (string, error) {
		ch <- in.Token
		return "sent", nil
	})
}

const callbackDef = `{"StartAt":"Ask","States":{"Ask":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
	"Parameters":{"FunctionName":"notify","Payload":{"token.$":"$$.Task.Token"}},
	"HeartbeatSeconds":60,"TimeoutSeconds":3600,"ResultPath":"$.verdict","End":true}}}`

func TestCallbacks(t *testing.T) {
	tests := []struct {
		name       string
		settle     func(e *stepfn.Engine, token string) error
		wantStatus string
		wantError  string
		wantOutput string
	}{
		{
			name: "success",
			settle: func(e *stepfn.Engine, token string) error {
				if err := e.SendTaskHeartbeat(context.Background(), token); err != nil {
					return err
				}
				return e.SendTaskSuccess(context.Background(), token, []byte(`{"verdict":"approved"}`))
			},
			wantStatus: stepfn.StatusSucceeded,
			wantOutput: `{"in":1,"verdict":{"verdict":"approved"}}`,
		},
		{
			name: "failure",
			settle: func(e *stepfn.Engine, token string) error {
				return e.SendTaskFailure(context.Background(), token, "Rejected", "no")
			},
			wantStatus: stepfn.StatusFailed,
			wantError:  "Rejected",
		},
		{
			name:       "heartbeat timeout",
			settle:     func(e *stepfn.Engine, token string) error { return nil },
			wantStatus: stepfn.StatusFailed,
			wantError:  stepfn.ErrHeartbeatTimeout,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t)
			// The handler settles the token itself, before it returns: on a
			// virtual clock, a caller outside the engine would race the
			// heartbeat timer.
			e.RegisterHandler("notify", stepfn.LambdaHandler(func(ctx context.Context, in struct {
				Token string `json:"token"`
			}) (string, error) {
				return "sent", tt.settle(e, in.Token)
			}))
			_, x := run(t, e, callbackDef, `{"in":1}`)
			if x.Status != tt.wantStatus || x.Error != tt.wantError {
				t.Fatalf("status, error = %s, %s (%s); want %s, %s", x.Status, x.Error, x.Cause, tt.wantStatus, tt.wantError)
			}
			if tt.wantOutput != "" {
				jsonEq(t, x.Output, tt.wantOutput)
			}
			if tt.wantError == stepfn.ErrHeartbeatTimeout {
				if got := x.StopDate.Sub(x.StartDate); got != 60*time.Second {
					t.Errorf("heartbeat timeout after %v, want 60s of virtual time", got)
				}
			}
		})
	}
}

func TestCallbackFromOutside(t *testing.T) {
	e := stepfn.NewEngine() // the real clock: the definition has no timers
	defer e.Close()
	tokens := make(chan string, 1)
	e.RegisterHandler("notify", tokenCatcher(tokens))
	ctx := context.Background()
	sm, err := e.CreateStateMachine("sm", []byte(strings.Replace(callbackDef, `"HeartbeatSeconds":60,"TimeoutSeconds":3600,`, "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	arn, err := e.StartExecution(ctx, sm, "x", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	token := <-tokens
	if err := e.SendTaskSuccess(ctx, token, []byte(`"ok"`)); err != nil {
		t.Fatalf("SendTaskSuccess: %v", err)
	}
	x, err := e.Wait(ctx, arn)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, x.Output, `{"verdict":"ok"}`)
	if err := e.SendTaskSuccess(ctx, token, []byte(`"again"`)); stepfn.ErrorCode(err) != stepfn.CodeTaskTimedOut {
		t.Errorf("second SendTaskSuccess: %v, want TaskTimedOut", err)
	}
}

func TestUnknownTokens(t *testing.T) {
	e := newEngine(t)
	ctx := context.Background()
	if err := e.SendTaskSuccess(ctx, "nope", []byte(`{}`)); stepfn.ErrorCode(err) != stepfn.CodeTaskDoesNotExist {
		t.Errorf("SendTaskSuccess: %v, want TaskDoesNotExist", err)
	}
	if err := e.SendTaskHeartbeat(ctx, "nope"); stepfn.ErrorCode(err) != stepfn.CodeTaskDoesNotExist {
		t.Errorf("SendTaskHeartbeat: %v, want TaskDoesNotExist", err)
	}
	if err := e.SendTaskSuccess(ctx, "nope", []byte(`{`)); stepfn.ErrorCode(err) != stepfn.CodeInvalidOutput {
		t.Errorf("SendTaskSuccess bad JSON: %v, want InvalidOutput", err)
	}
	if _, err := e.DescribeExecution(ctx, "arn:aws:states:us-east-1:123456789012:execution:sm:none"); stepfn.ErrorCode(err) != stepfn.CodeExecutionDoesNotExist {
		t.Errorf("DescribeExecution: %v, want ExecutionDoesNotExist", err)
	}
}

// redriveDef's second branch fails after a Wait, so that on the virtual clock
// the first branch has surely succeeded by then.
const redriveDef = `{"StartAt":"P","States":{
	"P":{"Type":"Parallel","Next":"After","Branches":[
		{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:a","End":true}}},
		{"StartAt":"B1","States":{
			"B1":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:b1","Next":"W"},
			"W":{"Type":"Wait","Seconds":1,"Next":"B2"},
			"B2":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:b2","End":true}}}]},
	"After":{"Type":"Pass","End":true}}}`

func TestRedriveRunsOnlyTheFailedBranch(t *testing.T) {
	e := newEngine(t)
	var mu sync.Mutex
	calls := map[string]int{}
	broken := true
	count := func(name string, fail bool) stepfn.Handler {
		return stepfn.LambdaHandler(func(ctx context.Context) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			calls[name]++
			if fail && broken {
				return "", errors.New("boom")
			}
			return name, nil
		})
	}
	e.RegisterHandler("a", count("a", false))
	e.RegisterHandler("b1", count("b1", false))
	e.RegisterHandler("b2", count("b2", true))
	arn, x := run(t, e, redriveDef, `{}`)
	if x.Status != stepfn.StatusFailed || x.Error != "errorString" {
		t.Fatalf("first run: %s %s, want FAILED errorString", x.Status, x.Error)
	}
	mu.Lock()
	broken = false
	mu.Unlock()
	ctx := context.Background()
	if err := e.RedriveExecution(ctx, arn); err != nil {
		t.Fatalf("RedriveExecution: %v", err)
	}
	x, err := e.Wait(ctx, arn)
	if err != nil {
		t.Fatal(err)
	}
	if x.Status != stepfn.StatusSucceeded || x.RedriveCount != 1 {
		t.Fatalf("after redrive: %s redriveCount %d, want SUCCEEDED 1", x.Status, x.RedriveCount)
	}
	jsonEq(t, x.Output, `["a","b2"]`)
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{"a": 1, "b1": 1, "b2": 2}
	for k, v := range want {
		if calls[k] != v {
			t.Errorf("%s called %d times, want %d", k, calls[k], v)
		}
	}
	if err := e.RedriveExecution(ctx, arn); stepfn.ErrorCode(err) != stepfn.CodeExecutionNotRedrivable {
		t.Errorf("redrive of a succeeded execution: %v, want ExecutionNotRedrivable", err)
	}
	h, _ := e.GetExecutionHistory(ctx, arn)
	found := false
	for _, ev := range h {
		if ev.Type == "ExecutionRedriven" {
			found = ev.ExecutionRedrivenEventDetails.RedriveCount == 1
		}
	}
	if !found {
		t.Errorf("no ExecutionRedriven event with redriveCount 1 in the history")
	}
}

func TestRedriveMapRunsOnlyFailedItems(t *testing.T) {
	e := newEngine(t)
	var mu sync.Mutex
	calls := map[float64]int{}
	broken := true
	e.RegisterHandler("item", stepfn.LambdaHandler(func(ctx context.Context, n float64) (float64, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[n]++
		if n == 2 && broken {
			return 0, errors.New("bad item")
		}
		return n * 10, nil
	}))
	arn, x := run(t, e, `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":1,
		"ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:item","End":true}}},
		"End":true}}}`, `{"items":[1,2,3]}`)
	if x.Status != stepfn.StatusFailed {
		t.Fatalf("first run: %s, want FAILED", x.Status)
	}
	mu.Lock()
	broken = false
	mu.Unlock()
	if err := e.RedriveExecution(context.Background(), arn); err != nil {
		t.Fatal(err)
	}
	x, _ = e.Wait(context.Background(), arn)
	if x.Status != stepfn.StatusSucceeded {
		t.Fatalf("after redrive: %s (%s %s), want SUCCEEDED", x.Status, x.Error, x.Cause)
	}
	jsonEq(t, x.Output, `[10,20,30]`)
	mu.Lock()
	defer mu.Unlock()
	if calls[1] != 1 || calls[2] != 2 {
		t.Errorf("calls = %v; want item 1 once and item 2 twice", calls)
	}
}

func TestExecutionTimeout(t *testing.T) {
	e := newEngine(t)
	_, x := run(t, e, `{"TimeoutSeconds":10,"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":100,"End":true}}}`, `{}`)
	if x.Status != stepfn.StatusTimedOut || x.Error != stepfn.ErrTimeout {
		t.Fatalf("got %s %s, want TIMED_OUT States.Timeout", x.Status, x.Error)
	}
	if got := x.StopDate.Sub(x.StartDate); got != 10*time.Second {
		t.Errorf("timed out after %v, want 10s", got)
	}
}

func TestHistoryShape(t *testing.T) {
	e := newEngine(t)
	e.RegisterHandler("f", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) { return []byte(`{"r":1}`), nil }))
	arn, x := run(t, e, `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:f","Next":"S"},"S":{"Type":"Succeed"}}}`, `{"i":1}`)
	if x.Status != stepfn.StatusSucceeded {
		t.Fatalf("status = %s", x.Status)
	}
	h, err := e.GetExecutionHistory(context.Background(), arn)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ExecutionStarted", "TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted",
		"LambdaFunctionSucceeded", "TaskStateExited", "SucceedStateEntered", "SucceedStateExited", "ExecutionSucceeded"}
	if len(h) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(h), len(want), h)
	}
	for i, ev := range h {
		if ev.Type != want[i] || ev.ID != int64(i+1) || ev.PreviousEventID != int64(i) {
			t.Errorf("event %d = %s id %d prev %d; want %s id %d prev %d", i, ev.Type, ev.ID, ev.PreviousEventID, want[i], i+1, i)
		}
	}
	if d := h[1].StateEnteredEventDetails; d == nil || d.Name != "T" || d.Input != `{"i":1}` {
		t.Errorf("TaskStateEntered details = %+v", d)
	}
	if d := h[4].LambdaFunctionSucceededEventDetails; d == nil || d.Output != `{"r":1}` {
		t.Errorf("LambdaFunctionSucceeded details = %+v", d)
	}
}

func TestResumeOnSharedMemoryStore(t *testing.T) {
	store := stepfn.NewMemoryStore()
	ctx := context.Background()
	e1 := stepfn.NewEngine(func(o *stepfn.Options) { o.Store = store })
	entered := make(chan struct{})
	e1.RegisterHandler("f", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	sm, err := e1.CreateStateMachine("sm", []byte(`{"StartAt":"P","States":{"P":{"Type":"Pass","Result":1,"ResultPath":"$.p","Next":"T"},
		"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:f","ResultPath":"$.t","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	arn, err := e1.StartExecution(ctx, sm, "x", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	if err := e1.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := stepfn.NewEngine(func(o *stepfn.Options) { o.Store = store })
	defer e2.Close()
	e2.RegisterHandler("f", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) { return []byte(`2`), nil }))
	if err := e2.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	x, err := e2.Wait(ctx, arn)
	if err != nil {
		t.Fatal(err)
	}
	if x.Status != stepfn.StatusSucceeded {
		t.Fatalf("status = %s (%s %s), want SUCCEEDED", x.Status, x.Error, x.Cause)
	}
	jsonEq(t, x.Output, `{"p":1,"t":2}`)
}

// TestOutputSizeLimit checks that a state whose output renders to more than
// 256 KiB fails with States.DataLimitExceeded however the output was made
// (the engine bounds sizes from inputs and results instead of rendering
// every output), and that outputs under the limit pass.
func TestOutputSizeLimit(t *testing.T) {
	const kb = 1024
	task := func(fn string) string {
		return `"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:` + fn + `"`
	}
	big := `{"big":"` + strings.Repeat("i", 150*kb) + `"}`
	tests := []struct {
		name, def, input string
		wantErr          string // "" for SUCCEEDED
	}{
		{"result set into a large input", `{"StartAt":"T","States":{"T":{` + task("s150") + `,"ResultPath":"$.r","End":true}}}`, big, "States.DataLimitExceeded"},
		{"result replacing the input", `{"StartAt":"T","States":{"T":{` + task("s150") + `,"Next":"C"},"C":{"Type":"Choice","Choices":[{"Variable":"$.s","IsPresent":false,"Next":"D"}],"Default":"D"},"D":{"Type":"Succeed"}}}`, big, ""},
		{"result discarded", `{"StartAt":"T","States":{"T":{` + task("s150") + `,"ResultPath":null,"End":true}}}`, big, ""},
		{"map of large results", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","ItemProcessor":{"StartAt":"T","States":{"T":{` + task("s100") + `,"End":true}}},"End":true}}}`, `{"items":[1,2,3]}`, "States.DataLimitExceeded"},
		{"map under the limit", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","ItemProcessor":{"StartAt":"T","States":{"T":{` + task("s100") + `,"End":true}}},"ResultPath":"$.r","End":true}}}`, `{"items":[1,2]}`, ""},
		{"parallel of large results", `{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[{"StartAt":"A","States":{"A":{` + task("s150") + `,"End":true}}},{"StartAt":"B","States":{"B":{` + task("s150") + `,"End":true}}}],"End":true}}}`, `{}`, "States.DataLimitExceeded"},
		{"pass copying part of its input", `{"StartAt":"P","States":{"P":{"Type":"Pass","InputPath":"$.big","ResultPath":"$.copy","End":true}}}`, big, "States.DataLimitExceeded"},
		{"pass keeping part of its input", `{"StartAt":"P","States":{"P":{"Type":"Pass","InputPath":"$.big","ResultPath":"$.copy","OutputPath":"$.copy","End":true}}}`, big, ""},
		{"nested result path", `{"StartAt":"T","States":{"T":{` + task("s100") + `,"ResultPath":"$.a.b","Next":"U"},"U":{` + task("s100") + `,"ResultPath":"$.a.c","End":true}}}`, `{"a":null}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t)
			for _, n := range []int{100, 150} {
				s := strings.Repeat("x", n*kb)
				e.RegisterHandler(fmt.Sprintf("s%d", n), stepfn.LambdaHandler(func(ctx context.Context) (map[string]string, error) {
					return map[string]string{"s": s}, nil
				}))
			}
			_, x := run(t, e, tt.def, tt.input)
			if tt.wantErr == "" {
				if x.Status != stepfn.StatusSucceeded {
					t.Fatalf("status = %s (%s: %s), want SUCCEEDED", x.Status, x.Error, x.Cause)
				}
				return
			}
			if x.Status != stepfn.StatusFailed || x.Error != tt.wantErr {
				t.Fatalf("status, error = %s, %s; want FAILED, %s", x.Status, x.Error, tt.wantErr)
			}
		})
	}
}

// TestHistoryReadWhileRunning reads the history of a Map execution over and
// over while its iterations append to it (run it with -race): every read is
// a prefix of the final history, its events numbered 1, 2, ... in order.
func TestHistoryReadWhileRunning(t *testing.T) {
	e := stepfn.NewEngine()
	t.Cleanup(func() { _ = e.Close() })
	e.RegisterHandler("work", stepfn.HandlerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
		return []byte(`{"done":true}`), nil
	}))
	sm, err := e.CreateStateMachine("read", []byte(`{"StartAt":"M","States":{"M":{"Type":"Map","End":true,
		"ItemProcessor":{"StartAt":"W","States":{"W":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:work","End":true}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	items := "[" + strings.TrimSuffix(strings.Repeat("1,", 200), ",") + "]"
	arn, err := e.StartExecution(ctx, sm, "x", []byte(items))
	if err != nil {
		t.Fatal(err)
	}
	var reads [][]stepfn.HistoryEvent
	for {
		h, err := e.GetExecutionHistory(ctx, arn)
		if err != nil {
			t.Fatal(err)
		}
		reads = append(reads, h)
		if x, _ := e.DescribeExecution(ctx, arn); x.Status != stepfn.StatusRunning {
			break
		}
	}
	final, err := e.GetExecutionHistory(ctx, arn)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(final), 3+200*7+3; got != want {
		t.Fatalf("final history has %d events, want %d", got, want)
	}
	for _, h := range reads {
		for i, ev := range h {
			if ev.ID != int64(i+1) || ev.Type != final[i].Type || ev.Timestamp != final[i].Timestamp {
				t.Fatalf("read %d of %d events: event %d is %d %s, the final history's %d %s", len(h), len(final), i, ev.ID, ev.Type, final[i].ID, final[i].Type)
			}
		}
	}
}
