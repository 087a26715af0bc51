package stepfn_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// A .sync:2 task runs its child with the same tasks file and answers as Step
// Functions does: the child's output as JSON, or States.TaskFailed with the
// child's DescribeExecution (its Error and Cause inside) as the cause.
func TestRunScriptedChildren(t *testing.T) {
	parent := []byte(`{"StartAt":"C","States":{"C":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync:2",
		"Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:kid","Input.$":"$"},
		"ResultSelector":{"out.$":"$.Output"},"End":true}}}`)
	kid := []byte(`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:t",
		"Retry":[{"ErrorEquals":["Flaky"],"IntervalSeconds":30,"MaxAttempts":2}],"End":true}}}`)
	cases := []struct {
		name   string
		script stepfn.TaskScript
		status string
		want   []string
	}{
		{"the child's output is JSON", stepfn.TaskScript{"T": {{Result: json.RawMessage(`{"x":1}`)}}}, "SUCCEEDED", []string{`"out":{"x":1}`}},
		{"the child retries on the shared virtual clock", stepfn.TaskScript{"T": {{Error: "Flaky"}, {Result: json.RawMessage(`{"x":2}`)}}}, "SUCCEEDED", []string{`"out":{"x":2}`}},
		{"a failed child is States.TaskFailed with its DescribeExecution", stepfn.TaskScript{"T": {{Error: "Boom", Cause: "the reason"}}}, "FAILED",
			[]string{"States.TaskFailed", `"Error":"Boom"`, `"Cause":"the reason"`, `"Status":"FAILED"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			out, err := stepfn.RunScriptedChildren(ctx, parent, map[string][]byte{"kid": kid}, []byte(`{}`), tc.script)
			if err != nil {
				t.Fatal(err)
			}
			got := string(out.Output) + out.Error + out.Cause
			if out.Status != tc.status {
				t.Fatalf("status %s (%s), want %s", out.Status, got, tc.status)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%s lacks %s", got, w)
				}
			}
			entered := 0
			for _, ev := range out.History {
				if ev.StateEnteredEventDetails != nil && ev.StateEnteredEventDetails.Name == "T" {
					entered++
				}
			}
			if entered != 1 {
				t.Errorf("the child's T entered %d times in the history, want 1", entered)
			}
		})
	}
}
