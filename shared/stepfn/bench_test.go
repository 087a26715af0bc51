package stepfn

import (
	"context"
	"fmt"
	"testing"
)

// tenStates is the benchmark definition: ten states in all (Pass, Choice,
// Task, a Parallel of three branches holding two Tasks and a Pass, a Map over
// ten items with one Task each, Succeed), every Task an in-process Go handler.
const tenStates = `{
  "StartAt": "Prepare",
  "States": {
    "Prepare": {"Type": "Pass", "Parameters": {"signal_id.$": "$.signal_id", "skip": false}, "Next": "Route"},
    "Route": {"Type": "Choice", "Choices": [{"Variable": "$.skip", "BooleanEquals": true, "Next": "Done"}], "Default": "Plan"},
    "Plan": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:plan", "ResultPath": "$.plan", "Next": "Fan"},
    "Fan": {"Type": "Parallel", "ResultSelector": {"a.$": "$[0]", "b.$": "$[1]", "c.$": "$[2]"}, "ResultPath": "$.fan", "Next": "ForEach",
      "Branches": [
        {"StartAt": "BranchA", "States": {"BranchA": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:branch-a", "End": true}}},
        {"StartAt": "BranchB", "States": {"BranchB": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:branch-b", "End": true}}},
        {"StartAt": "BranchC", "States": {"BranchC": {"Type": "Pass", "Result": {"branch": "c"}, "End": true}}}]},
    "ForEach": {"Type": "Map", "ItemsPath": "$.plan.items", "ItemSelector": {"signal_id.$": "$.signal_id", "item.$": "$$.Map.Item.Value"},
      "ItemProcessor": {"StartAt": "Work", "States": {"Work": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "End": true}}},
      "ResultPath": "$.work", "Next": "Done"},
    "Done": {"Type": "Succeed"}
  }
}`

func BenchmarkExecution10States(b *testing.B) {
	e := NewEngine()
	type planOut struct {
		Items []int `json:"items"`
	}
	e.RegisterHandler("plan", LambdaHandler(func(ctx context.Context) (planOut, error) {
		return planOut{Items: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, nil
	}))
	type branchOut struct {
		Branch string `json:"branch"`
	}
	e.RegisterHandler("branch-a", LambdaHandler(func(ctx context.Context) (branchOut, error) { return branchOut{"a"}, nil }))
	e.RegisterHandler("branch-b", LambdaHandler(func(ctx context.Context) (branchOut, error) { return branchOut{"b"}, nil }))
	e.RegisterHandler("work", LambdaHandler(func(ctx context.Context, in struct {
		SignalID string `json:"signal_id"`
		Item     int    `json:"item"`
	}) (map[string]bool, error) {
		return map[string]bool{"done": true}, nil
	}))
	arn, err := e.CreateStateMachine("bench", []byte(tenStates))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x, err := e.StartExecution(ctx, arn, fmt.Sprintf("bench-%d", i), []byte(`{"signal_id":"sig-1"}`))
		if err != nil {
			b.Fatal(err)
		}
		got, err := e.Wait(ctx, x)
		if err != nil || got.Status != StatusSucceeded {
			b.Fatalf("execution: %+v, %v", got, err)
		}
	}
}

// BenchmarkExecution10StatesRawHandlers runs the same definition with
// HandlerFunc handlers that return fixed JSON: the engine's own cost, without
// aws-lambda-go's reflection and encoding/json in the handlers.
func BenchmarkExecution10StatesRawHandlers(b *testing.B) {
	e := NewEngine()
	fixed := func(out string) Handler {
		return HandlerFunc(func(ctx context.Context, payload []byte) ([]byte, error) { return []byte(out), nil })
	}
	e.RegisterHandler("plan", fixed(`{"items":[0,1,2,3,4,5,6,7,8,9]}`))
	e.RegisterHandler("branch-a", fixed(`{"branch":"a"}`))
	e.RegisterHandler("branch-b", fixed(`{"branch":"b"}`))
	e.RegisterHandler("work", fixed(`{"done":true}`))
	arn, err := e.CreateStateMachine("bench", []byte(tenStates))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x, err := e.StartExecution(ctx, arn, fmt.Sprintf("bench-%d", i), []byte(`{"signal_id":"sig-1"}`))
		if err != nil {
			b.Fatal(err)
		}
		got, err := e.Wait(ctx, x)
		if err != nil || got.Status != StatusSucceeded {
			b.Fatalf("execution: %+v, %v", got, err)
		}
	}
}
