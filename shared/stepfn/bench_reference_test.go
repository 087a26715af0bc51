package stepfn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// benchDefinition has ten states: a Pass, a Choice, a Task, a Parallel of three branches (two Tasks and a
// Pass), a Map over the ten items the first Task returns (one Task per item), and a Succeed.
const benchDefinition = `{
  "StartAt": "Prepare",
  "States": {
    "Prepare": {"Type": "Pass", "Parameters": {"signal_id.$": "$.signal_id", "skip": false}, "Next": "Route"},
    "Route": {"Type": "Choice", "Choices": [{"Variable": "$.skip", "BooleanEquals": true, "Next": "Done"}], "Default": "Plan"},
    "Plan": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:plan", "ResultPath": "$.plan", "Next": "Fan"},
    "Fan": {
      "Type": "Parallel",
      "ResultSelector": {"a.$": "$[0]", "b.$": "$[1]", "c.$": "$[2]"},
      "ResultPath": "$.fan",
      "Next": "ForEach",
      "Branches": [
        {"StartAt": "BranchA", "States": {"BranchA": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:branch-a", "End": true}}},
        {"StartAt": "BranchB", "States": {"BranchB": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:branch-b", "End": true}}},
        {"StartAt": "BranchC", "States": {"BranchC": {"Type": "Pass", "Result": {"branch": "c"}, "End": true}}}
      ]
    },
    "ForEach": {
      "Type": "Map",
      "ItemsPath": "$.plan.items",
      "ItemSelector": {"signal_id.$": "$.signal_id", "item.$": "$$.Map.Item.Value"},
      "ItemProcessor": {"StartAt": "Work", "States": {"Work": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "End": true}}},
      "ResultPath": "$.work",
      "Next": "Done"
    },
    "Done": {"Type": "Succeed"}
  }
}`

const benchInput = `{"signal_id": "sig-1"}`

// benchResults are what the handlers return, keyed by Task state name for the reference harness.
var benchResults = map[string]json.RawMessage{
	"Plan":    json.RawMessage(`{"items":[0,1,2,3,4,5,6,7,8,9]}`),
	"BranchA": json.RawMessage(`{"branch":"a"}`),
	"BranchB": json.RawMessage(`{"branch":"b"}`),
	"Work":    json.RawMessage(`{"done":true}`),
}

// referenceRuns is how many executions the reference runs (after one warm-up) to measure its time.
const referenceRuns = 200

type benchReference struct {
	nsPerOp float64
	output  json.RawMessage
	err     error
}

var (
	benchReferenceOnce sync.Once
	benchReferenceRes  benchReference
)

// measureReference runs the benchmark definition referenceRuns times in one Node process and returns the
// time per execution.
func measureReference() benchReference {
	benchReferenceOnce.Do(func() {
		tasks := map[string][]map[string]json.RawMessage{}
		for state, result := range benchResults {
			tasks[state] = []map[string]json.RawMessage{{"result": result}}
		}
		req := map[string]any{
			"mode":       "bench",
			"definition": json.RawMessage(benchDefinition),
			"input":      json.RawMessage(benchInput),
			"tasks":      tasks,
			"n":          referenceRuns,
		}
		var resp struct {
			NsPerOp float64         `json:"ns_per_op"`
			Output  json.RawMessage `json:"output"`
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		err := runReference(ctx, req, &resp)
		benchReferenceRes = benchReference{nsPerOp: resp.NsPerOp, output: resp.Output, err: err}
	})
	return benchReferenceRes
}

// benchEngine builds an engine with in-process Go handlers (aws-lambda-go's lambda.NewHandler, as a deployed
// function decodes its event) for the benchmark definition.
func benchEngine(b *testing.B) (*stepfn.Engine, string) {
	b.Helper()
	e := stepfn.NewEngine()
	type planOut struct {
		Items []int `json:"items"`
	}
	e.RegisterHandler("plan", stepfn.LambdaHandler(func(ctx context.Context, in struct {
		SignalID string `json:"signal_id"`
	}) (planOut, error) {
		return planOut{Items: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, nil
	}))
	type branchOut struct {
		Branch string `json:"branch"`
	}
	e.RegisterHandler("branch-a", stepfn.LambdaHandler(func(ctx context.Context) (branchOut, error) { return branchOut{Branch: "a"}, nil }))
	e.RegisterHandler("branch-b", stepfn.LambdaHandler(func(ctx context.Context) (branchOut, error) { return branchOut{Branch: "b"}, nil }))
	type workOut struct {
		Done bool `json:"done"`
	}
	e.RegisterHandler("work", stepfn.LambdaHandler(func(ctx context.Context, in struct {
		SignalID string `json:"signal_id"`
		Item     int    `json:"item"`
	}) (workOut, error) {
		return workOut{Done: true}, nil
	}))
	arn, err := e.CreateStateMachine("bench", []byte(benchDefinition))
	if err != nil {
		b.Fatalf("CreateStateMachine: %v", err)
	}
	return e, arn
}

// BenchmarkExecutionVsReference runs the ten-state definition through ora's engine (ns/op, allocs/op) and,
// in the same run, through aws-local-stepfunctions in one Node process (ref-ns/op, after one warm-up run), and
// reports the ratio ref/ora-x: how many times faster ora is per execution.
//
// ora runs at the garbage collector's target `ora dev` sets (GOGC=200,
// embedded.GCPercent) unless GOGC is set: the engine as ora dev runs it.
func BenchmarkExecutionVsReference(b *testing.B) {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(200))
	}
	ctx := context.Background()
	e, arn := benchEngine(b)
	var last json.RawMessage
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		execArn, err := e.StartExecution(ctx, arn, fmt.Sprintf("bench-%d", i), []byte(benchInput))
		if err != nil {
			b.Fatalf("StartExecution: %v", err)
		}
		exec, err := e.Wait(ctx, execArn)
		if err != nil {
			b.Fatalf("Wait: %v", err)
		}
		if exec.Status != stepfn.StatusSucceeded {
			b.Fatalf("execution status = %s, want SUCCEEDED (%s: %s)", exec.Status, exec.Error, exec.Cause)
		}
		last = exec.Output
	}
	oraNs := float64(time.Since(start).Nanoseconds()) / float64(b.N)
	b.StopTimer()

	ref := measureReference()
	var missing *referenceMissingError
	switch {
	case errors.As(ref.err, &missing):
		if os.Getenv("CI") == "true" {
			b.Fatalf("reference: %v (CI installs it with make deps)", ref.err)
		}
		b.Logf("reference not measured: %v (run make deps)", ref.err)
		return
	case ref.err != nil:
		b.Fatalf("reference: %v", ref.err)
	}
	if msg := compareResult(okResult(string(ref.output)), okResult(string(last))); msg != "" {
		b.Fatalf("ora and the reference disagree on the benchmark's output: %s", msg)
	}
	b.ReportMetric(ref.nsPerOp, "ref-ns/op")
	b.ReportMetric(ref.nsPerOp/oraNs, "ref/ora-x")
}
