package stepfn

import (
	"context"
	"testing"
	"time"
)

// TestWorkersEndWithTheEngine runs a Map so that the pool holds idle workers,
// closes the engine and wants every worker, and the trimmer, gone.
func TestWorkersEndWithTheEngine(t *testing.T) {
	e := NewEngine()
	e.RegisterHandler("work", HandlerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
		return []byte(`{"done":true}`), nil
	}))
	arn, err := e.CreateStateMachine("pool", []byte(`{"StartAt":"M","States":{"M":{"Type":"Map","End":true,
		"ItemProcessor":{"StartAt":"W","States":{"W":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:work","End":true}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	execArn, err := e.StartExecution(ctx, arn, "x", []byte(`[1,2,3,4,5]`))
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.Wait(ctx, execArn)
	if err != nil || x.Status != StatusSucceeded {
		t.Fatalf("Wait: %v %s %s", err, x.Status, x.Cause)
	}
	if n := e.workers.Load(); n == 0 {
		t.Fatal("no worker is left idle after the execution")
	}
	if !e.trimming.Load() {
		t.Fatal("the pool has workers but no trimmer")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.workers.Load() > 0 || e.trimming.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("after Close: %d workers, trimmer running %v; want none", e.workers.Load(), e.trimming.Load())
		}
		time.Sleep(time.Millisecond)
	}
}
