package stepfn_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// storeOnly is a Store that cannot list executions (as a durable store
// without ExecutionArns).
type storeOnly struct{ stepfn.Store }

func TestListExecutions(t *testing.T) {
	tests := []struct {
		name  string
		store stepfn.Store
	}{
		{"a store that lists", stepfn.NewMemoryStore()},
		{"a store that does not", storeOnly{stepfn.NewMemoryStore()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			e := stepfn.NewEngine(func(o *stepfn.Options) { o.Store = tt.store })
			defer e.Close()
			a, err := e.CreateStateMachine("a", []byte(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`))
			if err != nil {
				t.Fatal(err)
			}
			b, err := e.CreateStateMachine("b", []byte(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				arn, err := e.StartExecution(ctx, a, fmt.Sprintf("run-%d", i), nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.Wait(ctx, arn); err != nil {
					t.Fatal(err)
				}
			}
			got, err := e.ListExecutions(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 3 || got[0].Name != "run-2" || got[2].Name != "run-0" || got[0].Status != stepfn.StatusSucceeded {
				t.Errorf("ListExecutions(a) = %+v, want run-2, run-1, run-0", got)
			}
			if got, err := e.ListExecutions(ctx, b); err != nil || len(got) != 0 {
				t.Errorf("ListExecutions(b) = %+v, %v; want none", got, err)
			}
		})
	}
}

func TestStateMachineRegistry(t *testing.T) {
	e := stepfn.NewEngine()
	defer e.Close()
	def1 := []byte(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`)
	def2 := []byte(`{"StartAt":"Q","States":{"Q":{"Type":"Succeed"}}}`)
	arn, err := e.CreateStateMachine("m", def1)
	if err != nil {
		t.Fatal(err)
	}
	first, err := e.DescribeStateMachine(arn)
	if err != nil || string(first.Definition) != string(def1) || first.Revision != 0 || !first.UpdateDate.IsZero() || first.CreationDate.IsZero() {
		t.Fatalf("DescribeStateMachine = %+v, %v", first, err)
	}
	if _, err := e.CreateStateMachine("m", def2); err != nil {
		t.Fatal(err)
	}
	second, err := e.DescribeStateMachine(arn)
	if err != nil || string(second.Definition) != string(def2) || second.Revision != 1 || second.UpdateDate.IsZero() || !second.CreationDate.Equal(first.CreationDate) {
		t.Errorf("after replacing the definition: %+v, %v", second, err)
	}
	if _, err := e.CreateStateMachine("l", def1); err != nil {
		t.Fatal(err)
	}
	if list := e.ListStateMachines(); len(list) != 2 || list[0].Name != "l" || list[1].Name != "m" {
		t.Errorf("ListStateMachines = %+v, want l, m", list)
	}
	if err := e.DeleteStateMachine(arn); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DescribeStateMachine(arn); stepfn.ErrorCode(err) != stepfn.CodeStateMachineDoesNotExist {
		t.Errorf("after delete: %v, want StateMachineDoesNotExist", err)
	}
	if err := e.DeleteStateMachine(arn); stepfn.ErrorCode(err) != stepfn.CodeStateMachineDoesNotExist {
		t.Errorf("deleting again: %v, want StateMachineDoesNotExist", err)
	}
}

// TestOptionsTasks: a tasks file answers the states it names, counting items
// per execution; other states go to the registered handlers.
func TestOptionsTasks(t *testing.T) {
	ctx := context.Background()
	script, err := stepfn.ParseTaskScript([]byte(`{"Scripted": [{"result": "first"}, {"result": "second"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	e := stepfn.NewEngine(func(o *stepfn.Options) { o.Tasks = script })
	defer e.Close()
	e.RegisterHandler("real", stepfn.HandlerFunc(func(context.Context, []byte) ([]byte, error) { return []byte(`"from the handler"`), nil }))
	arn, err := e.CreateStateMachine("m", []byte(`{"StartAt":"Scripted","States":{
		"Scripted":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:scripted","ResultPath":"$.a","Next":"Real"},
		"Real":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:real","ResultPath":"$.b","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		x, err := e.StartExecution(ctx, arn, fmt.Sprintf("run-%d", i), nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Wait(ctx, x)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"a":"first","b":"from the handler"}`; string(got.Output) != want {
			t.Errorf("execution %d output = %s, want %s", i, got.Output, want)
		}
	}
}
