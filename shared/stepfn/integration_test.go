package stepfn_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// TestServiceIntegrations runs service integration tasks against handlers
// registered by resource: the handler receives the task's Parameters and its
// answer is the integration's response (.sync, .sync:2) or the acknowledgement
// of a callback task (.waitForTaskToken), which SendTaskSuccess then settles.
func TestServiceIntegrations(t *testing.T) {
	tests := []struct {
		name         string
		resource     string
		register     []string // resources handlers are registered under; the last registered wins the call
		wantHandler  string   // which registration serves the call
		wantOutput   string
		wantError    string
		wantResource string // resourceType/resource in TaskScheduled
	}{
		{"request response", "arn:aws:states:::sqs:sendMessage", []string{"sqs:sendMessage"}, "sqs:sendMessage",
			`{"from":"sqs:sendMessage","got":{"QueueUrl":"q","MessageBody":{"n":1}}}`, "", "sqs/sendMessage"},
		{"whole ARN registered", "arn:aws:states:::sns:publish", []string{"arn:aws:states:::sns:publish"}, "arn:aws:states:::sns:publish",
			`{"from":"arn:aws:states:::sns:publish","got":{"QueueUrl":"q","MessageBody":{"n":1}}}`, "", "sns/publish"},
		{"sync prefers the pattern's handler", "arn:aws:states:::ecs:runTask.sync", []string{"ecs:runTask", "ecs:runTask.sync"}, "ecs:runTask.sync",
			`{"from":"ecs:runTask.sync","got":{"QueueUrl":"q","MessageBody":{"n":1}}}`, "", "ecs/runTask.sync"},
		{"sync:2 falls back to the action's handler", "arn:aws:states:::states:startExecution.sync:2", []string{"states:startExecution"}, "states:startExecution",
			`{"from":"states:startExecution","got":{"QueueUrl":"q","MessageBody":{"n":1}}}`, "", "states/startExecution.sync:2"},
		{"other partition", "arn:aws-us-gov:states:::dynamodb:putItem", []string{"dynamodb:putItem"}, "dynamodb:putItem",
			`{"from":"dynamodb:putItem","got":{"QueueUrl":"q","MessageBody":{"n":1}}}`, "", "dynamodb/putItem"},
		{"wait for token", "arn:aws:states:::sqs:sendMessage.waitForTaskToken", []string{"sqs:sendMessage"}, "sqs:sendMessage",
			`{"settled":true}`, "", "sqs/sendMessage.waitForTaskToken"},
		{"no handler", "arn:aws:states:::events:putEvents", []string{"sqs:sendMessage"}, "", "", stepfn.ErrTaskFailed, "events/putEvents"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t)
			wait := strings.HasSuffix(tt.resource, ".waitForTaskToken")
			for _, key := range tt.register {
				e.RegisterIntegration(key, stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
					var params map[string]any
					if err := json.Unmarshal(p, &params); err != nil {
						return nil, err
					}
					if wait {
						body := params["MessageBody"].(map[string]any)
						token, _ := body["token"].(string)
						if token == "" {
							t.Errorf("the callback task's Parameters carry no token: %s", p)
						}
						return []byte(`{"MessageId":"m"}`), e.SendTaskSuccess(ctx, token, []byte(`{"settled":true}`))
					}
					return json.Marshal(map[string]any{"from": key, "got": params})
				}))
			}
			body := `{"n.$":"$.n"}`
			if wait {
				body = `{"n.$":"$.n","token.$":"$$.Task.Token"}`
			}
			def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + tt.resource + `","Parameters":{"QueueUrl":"q","MessageBody":` + body + `},"End":true}}}`
			arn, x := run(t, e, def, `{"n":1}`)
			if tt.wantError != "" {
				if x.Status != stepfn.StatusFailed || x.Error != tt.wantError {
					t.Fatalf("status, error = %s, %s; want FAILED, %s", x.Status, x.Error, tt.wantError)
				}
				if !strings.Contains(x.Cause, "events:putEvents") {
					t.Errorf("cause %q does not name the integration", x.Cause)
				}
			} else {
				if x.Status != stepfn.StatusSucceeded {
					t.Fatalf("status = %s (%s: %s), want SUCCEEDED", x.Status, x.Error, x.Cause)
				}
				jsonEq(t, x.Output, tt.wantOutput)
			}
			h, err := e.GetExecutionHistory(context.Background(), arn)
			if err != nil {
				t.Fatal(err)
			}
			var scheduled *stepfn.TaskScheduledDetails
			for _, ev := range h {
				if ev.Type == "TaskScheduled" {
					scheduled = ev.TaskScheduledEventDetails
				}
			}
			if scheduled == nil {
				t.Fatalf("no TaskScheduled event in the history")
			}
			if got := scheduled.ResourceType + "/" + scheduled.Resource; got != tt.wantResource {
				t.Errorf("TaskScheduled resource = %s, want %s", got, tt.wantResource)
			}
		})
	}
}

// TestTasksFileResponses checks the tasks file's mocks of integration
// responses: lambda:invoke takes its whole response from "response" and wraps
// a "result", a plain function ARN refuses "response".
func TestTasksFileResponses(t *testing.T) {
	const invoke = `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"f"},"End":true}}}`
	const plain = `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:f","End":true}}}`
	const sqs = `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage","Parameters":{"QueueUrl":"q","MessageBody":"b"},"End":true}}}`
	tests := []struct {
		name, def, tasks string
		wantOutput       string // "" with wantErr
		wantErr          string
	}{
		{"lambda invoke response as is", invoke, `{"T":[{"response":{"StatusCode":202,"Payload":{"a":1}}}]}`, `{"StatusCode":202,"Payload":{"a":1}}`, ""},
		{"lambda invoke result wrapped", invoke, `{"T":[{"result":{"a":1}}]}`, `{"ExecutedVersion":"$LATEST","Payload":{"a":1},"StatusCode":200,"SdkHttpMetadata":"<<any>>","SdkResponseMetadata":"<<any>>"}`, ""},
		{"lambda invoke response not an object", invoke, `{"T":[{"response":[1]}]}`, "", "must be an object"},
		{"plain function output bare", plain, `{"T":[{"result":{"a":1}}]}`, `{"a":1}`, ""},
		{"plain function refuses response", plain, `{"T":[{"response":{"a":1}}]}`, "", "Lambda function ARN"},
		{"integration result as is", sqs, `{"T":[{"result":{"MessageId":"m"}}]}`, `{"MessageId":"m"}`, ""},
		{"integration response as is", sqs, `{"T":[{"response":{"MessageId":"m"}}]}`, `{"MessageId":"m"}`, ""},
		{"result and response", sqs, `{"T":[{"result":1,"response":2}]}`, "", "exactly one of result, response and error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script, err := stepfn.ParseTaskScript([]byte(tt.tasks))
			if err != nil {
				t.Fatalf("ParseTaskScript: %v", err)
			}
			out, err := stepfn.RunScripted(context.Background(), []byte(tt.def), []byte(`{}`), script)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("RunScripted error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("RunScripted: %v", err)
			}
			if out.Status != stepfn.StatusSucceeded {
				t.Fatalf("status = %s (%s: %s)", out.Status, out.Error, out.Cause)
			}
			var got map[string]any
			if err := json.Unmarshal(out.Output, &got); err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(tt.wantOutput), &want); err != nil {
				t.Fatal(err)
			}
			for k, w := range want {
				if w == "<<any>>" {
					if _, ok := got[k]; !ok {
						t.Errorf("output has no %s", k)
					}
					continue
				}
				wb, _ := json.Marshal(w)
				gb, _ := json.Marshal(got[k])
				if string(wb) != string(gb) {
					t.Errorf("output %s = %s, want %s", k, gb, wb)
				}
			}
			if len(got) != len(want) {
				t.Errorf("output %s has %d keys, want %d", out.Output, len(got), len(want))
			}
		})
	}
}

// TestVariablesSurviveResume stops an engine while a task in a Parallel branch
// runs, with variables assigned in the flow and in the branch, and resumes the
// execution on a second engine: both scopes come back from the checkpoint.
func TestVariablesSurviveResume(t *testing.T) {
	store := stepfn.NewMemoryStore()
	ctx := context.Background()
	e1 := stepfn.NewEngine(func(o *stepfn.Options) { o.Store = store })
	entered := make(chan struct{})
	e1.RegisterHandler("f", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	sm, err := e1.CreateStateMachine("sm", []byte(`{"StartAt":"Init","States":{
		"Init":{"Type":"Pass","Assign":{"outer":"o"},"Next":"Fan"},
		"Fan":{"Type":"Parallel","Branches":[{"StartAt":"B1","States":{
			"B1":{"Type":"Pass","Assign":{"inner":"i"},"Next":"T"},
			"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:f","Assign":{"got.$":"$"},"Next":"B2"},
			"B2":{"Type":"Pass","Parameters":{"outer.$":"$outer","inner.$":"$inner","got.$":"$got"},"End":true}}}],
		 "Next":"Done"},
		"Done":{"Type":"Pass","Parameters":{"branches.$":"$","outer.$":"$outer"},"End":true}}}`))
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
	e2.RegisterHandler("f", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) { return []byte(`7`), nil }))
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
	jsonEq(t, x.Output, `{"branches":[{"outer":"o","inner":"i","got":7}],"outer":"o"}`)
}
