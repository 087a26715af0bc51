package sfnapi_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/ora-runtime/ora/shared/sfnapi"
	"github.com/ora-runtime/ora/shared/stepfn"
)

// RedriveExecution answers each error AWS documents for it, as the SDK
// decodes them: ExecutionDoesNotExist, ExecutionNotRedrivable (a RUNNING
// execution), ExecutionLimitExceeded (the engine runs its most executions);
// once one stops, the failed execution is redriven.
func TestRedriveErrors(t *testing.T) {
	script, err := stepfn.ParseTaskScript([]byte(`{"Charge": [{"error": "CardDeclined", "cause": "insufficient funds"}, {"result": {"charged": 7}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	e := stepfn.NewEngine(func(o *stepfn.Options) { o.Tasks, o.MaxRunning = script, 1 })
	srv := httptest.NewServer(sfnapi.New(e))
	t.Cleanup(func() {
		srv.Close()
		e.Close()
	})
	f := &fixture{client: newClient(srv), srv: srv, engine: e}
	ctx := context.Background()

	declined := f.start(t, f.create(t, "charge", helloTask, types.StateMachineTypeStandard), "declined", `{}`)
	if d := f.settled(t, declined); d.Status != types.ExecutionStatusFailed {
		t.Fatalf("first run: %s", d.Status)
	}
	hold := f.create(t, "hold", waitLong, types.StateMachineTypeStandard)
	held := f.start(t, hold, "held", `{}`)
	redrive := func(arn string) error {
		_, err := f.client.RedriveExecution(ctx, &sfn.RedriveExecutionInput{ExecutionArn: aws.String(arn)})
		return err
	}
	cases := []struct {
		name string
		call func() error
		want func(*testing.T, error)
	}{
		{"an unknown execution", func() error { return redrive("arn:aws:states:us-east-1:123456789012:execution:charge:nope") }, wantCode[*types.ExecutionDoesNotExist]},
		{"a running execution", func() error { return redrive(held) }, wantCode[*types.ExecutionNotRedrivable]},
		{"at the running-execution limit", func() error { return redrive(declined) }, wantCode[*types.ExecutionLimitExceeded]},
		{"a start at the limit", func() error {
			_, err := f.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(hold), Name: aws.String("second")})
			return err
		}, wantCode[*types.ExecutionLimitExceeded]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.want(t, tc.call()) })
	}
	if _, err := f.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(held)}); err != nil {
		t.Fatal(err)
	}
	f.settled(t, held)
	if err := redrive(declined); err != nil {
		t.Fatalf("redrive below the limit: %v", err)
	}
	if d := f.settled(t, declined); d.Status != types.ExecutionStatusSucceeded || aws.ToInt32(d.RedriveCount) != 1 {
		t.Errorf("after the redrive: %s, redriveCount %d", d.Status, aws.ToInt32(d.RedriveCount))
	}
}
