package embedded

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// TestStepFunctionsAPI: with the API mounted, AWS's client lists ora's own
// state machines, finds a wave started by a webhook among the wave's
// executions with its history, and runs a user's state machine whose task
// comes from a tasks file.
func TestStepFunctionsAPI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	rt, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	script, err := stepfn.ParseTaskScript([]byte(`{"Greet": [{"result": {"greeting": "hello"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	handler, stop := rt.StepFunctionsAPI(script, nil)
	defer stop()
	api := httptest.NewServer(handler)
	defer api.Close()
	web := httptest.NewServer(rt.Handler())
	defer web.Close()
	c := sfn.New(sfn.Options{BaseEndpoint: aws.String(api.URL), HTTPClient: api.Client(), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")})

	rec := send(t, rt, web.URL, "sfn-api-1", `{"confidence":"high"}`)

	list, err := c.ListStateMachines(ctx, &sfn.ListStateMachinesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sm := range list.StateMachines {
		names = append(names, aws.ToString(sm.Name))
	}
	if len(names) == 0 || names[0] != stateMachine {
		t.Fatalf("state machines = %v, want %s first", names, stateMachine)
	}
	var wave *types.ExecutionListItem
	for deadline := time.Now().Add(30 * time.Second); wave == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		out, err := c.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(rt.smArn)})
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range out.Executions {
			if strings.HasSuffix(aws.ToString(x.ExecutionArn), ":"+rec.SignalID) && x.Status != types.ExecutionStatusRunning {
				wave = &out.Executions[i]
			}
		}
	}
	if wave == nil {
		t.Fatalf("the wave of signal %s is not among the executions of %s", rec.SignalID, rt.smArn)
	}
	hist, err := c.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: wave.ExecutionArn, MaxResults: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var plan bool
	for _, ev := range hist.Events {
		if d := ev.StateEnteredEventDetails; d != nil && aws.ToString(d.Name) == "Plan observations" {
			plan = true
		}
	}
	if !plan || hist.Events[0].Type != types.HistoryEventTypeExecutionStarted {
		t.Errorf("the wave's history (%d events) does not start with ExecutionStarted and enter Plan observations", len(hist.Events))
	}

	sm, err := c.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("greeter"), RoleArn: aws.String("arn:aws:iam::123456789012:role/r"),
		Definition: aws.String(`{"StartAt":"Greet","States":{"Greet":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:greet","End":true}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	start, err := c.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: sm.StateMachineArn, Name: aws.String("first")})
	if err != nil {
		t.Fatal(err)
	}
	var d *sfn.DescribeExecutionOutput
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if d, err = c.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: start.ExecutionArn}); err != nil || d.Status != types.ExecutionStatusRunning {
			break
		}
	}
	if err != nil || d.Status != types.ExecutionStatusSucceeded || aws.ToString(d.Output) != `{"greeting":"hello"}` {
		t.Errorf("the user's execution: %v %+v", err, d)
	}
}
