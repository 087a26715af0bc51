package stepfn

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// A states:startExecution.sync:2 task's history links the child it started,
// as Step Functions' does: TaskSubmitted, between TaskStarted and the
// task's end, carries the child's ExecutionArn (the one the task's result or
// failure cause names too). A Lambda task has no TaskSubmitted.
func TestStartExecutionSyncLinksTheChild(t *testing.T) {
	parent := []byte(`{"StartAt":"Run child","States":{"Run child":{"Type":"Task",
		"Resource":"arn:aws:states:::states:startExecution.sync:2",
		"Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:kid","Input.$":"$"},"End":true}}}`)
	kid := []byte(`{"StartAt":"Work","States":{"Work":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:work","End":true}}}`)
	tests := []struct {
		name   string
		work   ScriptItem
		status string
		end    string // the parent task's last event
	}{
		{"the child succeeds", ScriptItem{Result: json.RawMessage(`{"done":true}`)}, StatusSucceeded, "TaskSucceeded"},
		{"the child fails", ScriptItem{Error: "Boom", Cause: "it broke"}, StatusFailed, "TaskFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := RunScriptedChildren(context.Background(), parent, map[string][]byte{"kid": kid}, []byte(`{"n":1}`), TaskScript{"Work": {tt.work}})
			if err != nil || out.Status != tt.status {
				t.Fatalf("run: %+v, %v; want %s", out, err, tt.status)
			}
			var seq []string
			var submitted, ended string
			for _, ev := range out.History {
				switch {
				case ev.TaskSubmittedEventDetails != nil:
					submitted = ev.TaskSubmittedEventDetails.Output
					if ev.TaskSubmittedEventDetails.ResourceType != "states" || ev.TaskSubmittedEventDetails.Resource != "startExecution.sync:2" {
						t.Errorf("TaskSubmitted names %s %s", ev.TaskSubmittedEventDetails.ResourceType, ev.TaskSubmittedEventDetails.Resource)
					}
				case ev.TaskSucceededEventDetails != nil:
					ended = ev.TaskSucceededEventDetails.Output
				case ev.TaskFailedEventDetails != nil:
					ended = ev.TaskFailedEventDetails.Cause
				}
				if strings.HasPrefix(ev.Type, "Task") && !strings.HasPrefix(ev.Type, "TaskState") {
					seq = append(seq, ev.Type)
				}
			}
			if want := "TaskScheduled TaskStarted TaskSubmitted " + tt.end; strings.Join(seq, " ") != want {
				t.Errorf("the parent task's events %v, want %s", seq, want)
			}
			var link, result struct {
				ExecutionArn string
				StartDate    int64
			}
			if err := json.Unmarshal([]byte(submitted), &link); err != nil || !strings.Contains(link.ExecutionArn, ":execution:kid:") || link.StartDate == 0 {
				t.Fatalf("TaskSubmitted output %q (%v), want the child's ExecutionArn and StartDate", submitted, err)
			}
			if err := json.Unmarshal([]byte(ended), &result); err != nil || result.ExecutionArn != link.ExecutionArn {
				t.Errorf("%s names %q, TaskSubmitted %q", tt.end, result.ExecutionArn, link.ExecutionArn)
			}
		})
	}
}

// TaskSubmitted does nothing outside a .sync startExecution task's handler:
// no task, or a Lambda task, has no submitter.
func TestTaskSubmittedElsewhere(t *testing.T) {
	for _, ctx := range []context.Context{
		context.Background(),
		withTaskInfo(context.Background(), call{exec: "arn:x", state: "Plan"}),
	} {
		if s, _ := ctx.Value(submitterKey{}).(*submitter); s != nil {
			t.Errorf("a submitter %+v outside a .sync task", s)
		}
		TaskSubmitted(ctx, []byte(`{"ExecutionArn":"x"}`)) // must not panic
	}
}
