package sfnapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/ora-runtime/ora/shared/sfnapi"
	"github.com/ora-runtime/ora/shared/stepfn"
)

// Definitions from AWS's documentation, shaped as users write them.
const (
	helloPass = `{"Comment":"A Hello World example","StartAt":"Hello","States":{"Hello":{"Type":"Pass","Result":{"greeting":"Hello, World!"},"ResultPath":"$.out","End":true}}}`
	helloTask = `{"StartAt":"Charge","States":{"Charge":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:charge","Next":"Done"},"Done":{"Type":"Succeed"}}}`
	waitLong  = `{"StartAt":"Hold","States":{"Hold":{"Type":"Wait","Seconds":3600,"End":true}}}`
	callback  = `{"StartAt":"Notify","States":{"Notify":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken","Parameters":{"FunctionName":"notify","Payload":{"token.$":"$$.Task.Token","order.$":"$.order"}},"HeartbeatSeconds":600,"End":true}}}`
)

// fixture is an endpoint with its engine, and an SDK client pointed at it.
type fixture struct {
	client *sfn.Client
	srv    *httptest.Server
	engine *stepfn.Engine
}

// newFixture starts the endpoint over a primary engine whose tasks come from
// tasks (a tasks file's content) and handlers, with attached engines.
func newFixture(t *testing.T, tasks string, handlers map[string]stepfn.Handler, attached ...*stepfn.Engine) *fixture {
	t.Helper()
	script, err := stepfn.ParseTaskScript([]byte(tasks))
	if err != nil {
		t.Fatal(err)
	}
	e := stepfn.NewEngine(func(o *stepfn.Options) { o.Tasks = script })
	for name, h := range handlers {
		e.RegisterHandler(name, h)
	}
	api := sfnapi.New(e, func(o *sfnapi.Options) { o.Attached = attached })
	srv := httptest.NewServer(api)
	t.Cleanup(func() {
		srv.Close()
		e.Close()
	})
	return &fixture{client: newClient(srv), srv: srv, engine: e}
}

// newClient is AWS's own Step Functions client pointed at srv with static
// credentials, as a user's test configures it.
func newClient(srv *httptest.Server) *sfn.Client {
	return sfn.New(sfn.Options{
		BaseEndpoint: aws.String(srv.URL),
		HTTPClient:   srv.Client(),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""),
		Retryer:      aws.NopRetryer{},
		// StartSyncExecution prefixes the host with "sync-" (AWS's
		// sync-states endpoint); a local endpoint has one host.
		APIOptions: []func(*middleware.Stack) error{func(s *middleware.Stack) error {
			return s.Initialize.Add(middleware.InitializeMiddlewareFunc("LocalEndpointHost",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					return next.HandleInitialize(smithyhttp.DisableEndpointHostPrefix(ctx, true), in)
				}), middleware.Before)
		}},
	})
}

func (f *fixture) create(t *testing.T, name, def string, typ types.StateMachineType) string {
	t.Helper()
	out, err := f.client.CreateStateMachine(context.Background(), &sfn.CreateStateMachineInput{
		Name: aws.String(name), Definition: aws.String(def), Type: typ,
		RoleArn: aws.String("arn:aws:iam::123456789012:role/service-role/StepFunctions-role"),
	})
	if err != nil {
		t.Fatalf("CreateStateMachine %s: %v", name, err)
	}
	return aws.ToString(out.StateMachineArn)
}

func (f *fixture) start(t *testing.T, smArn, name, input string) string {
	t.Helper()
	out, err := f.client.StartExecution(context.Background(), &sfn.StartExecutionInput{StateMachineArn: aws.String(smArn), Name: aws.String(name), Input: aws.String(input)})
	if err != nil {
		t.Fatalf("StartExecution %s: %v", name, err)
	}
	return aws.ToString(out.ExecutionArn)
}

// settled polls DescribeExecution until the execution is no longer RUNNING.
func (f *fixture) settled(t *testing.T, execArn string) *sfn.DescribeExecutionOutput {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		out, err := f.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(execArn)})
		if err != nil {
			t.Fatalf("DescribeExecution: %v", err)
		}
		if out.Status != types.ExecutionStatusRunning {
			return out
		}
		select {
		case <-ctx.Done():
			t.Fatalf("execution %s still RUNNING", execArn)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// wantCode checks err is the SDK's exception type T.
func wantCode[T error](t *testing.T, err error) {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("error = %v (%T), want %T", err, err, target)
	}
}

func TestStateMachineActions(t *testing.T) {
	f := newFixture(t, `{}`, nil)
	ctx := context.Background()
	arn := f.create(t, "hello", helloPass, types.StateMachineTypeStandard)
	if want := "arn:aws:states:us-east-1:123456789012:stateMachine:hello"; arn != want {
		t.Errorf("stateMachineArn = %s, want %s", arn, want)
	}

	t.Run("create again with the same definition answers the same machine", func(t *testing.T) {
		if again := f.create(t, "hello", helloPass, types.StateMachineTypeStandard); again != arn {
			t.Errorf("arn = %s, want %s", again, arn)
		}
	})
	errCases := []struct {
		name string
		call func() error
		want func(*testing.T, error)
	}{
		{"create a taken name", func() error {
			_, err := f.client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("hello"), Definition: aws.String(helloTask), RoleArn: aws.String("arn:aws:iam::123456789012:role/r")})
			return err
		}, wantCode[*types.StateMachineAlreadyExists]},
		{"create an invalid definition", func() error {
			_, err := f.client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("bad"), Definition: aws.String(`{"StartAt":"Nowhere","States":{"A":{"Type":"Pass","End":true}}}`), RoleArn: aws.String("arn:aws:iam::123456789012:role/r")})
			return err
		}, wantCode[*types.InvalidDefinition]},
		{"create with an unknown type", func() error {
			_, err := f.client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("odd"), Definition: aws.String(helloPass), RoleArn: aws.String("arn:aws:iam::123456789012:role/r"), Type: "BATCH"})
			return err
		}, wantCode[*types.ValidationException]},
		{"describe a malformed ARN", func() error {
			_, err := f.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String("hello")})
			return err
		}, wantCode[*types.InvalidArn]},
		{"describe an unknown machine", func() error {
			_, err := f.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String("arn:aws:states:us-east-1:123456789012:stateMachine:nope")})
			return err
		}, wantCode[*types.StateMachineDoesNotExist]},
		{"update an unknown machine", func() error {
			_, err := f.client.UpdateStateMachine(ctx, &sfn.UpdateStateMachineInput{StateMachineArn: aws.String("arn:aws:states:us-east-1:123456789012:stateMachine:nope"), Definition: aws.String(helloPass)})
			return err
		}, wantCode[*types.StateMachineDoesNotExist]},
		{"update with an invalid definition", func() error {
			_, err := f.client.UpdateStateMachine(ctx, &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(arn), Definition: aws.String(`{"StartAt":"A","States":{}}`)})
			return err
		}, wantCode[*types.InvalidDefinition]},
		{"delete a malformed ARN", func() error {
			_, err := f.client.DeleteStateMachine(ctx, &sfn.DeleteStateMachineInput{StateMachineArn: aws.String("arn:aws:states:hello")})
			return err
		}, wantCode[*types.InvalidArn]},
		{"list with a foreign token", func() error {
			_, err := f.client.ListStateMachines(ctx, &sfn.ListStateMachinesInput{NextToken: aws.String("not-a-token")})
			return err
		}, wantCode[*types.InvalidToken]},
	}
	for _, tt := range errCases {
		t.Run(tt.name, func(t *testing.T) { tt.want(t, tt.call()) })
	}

	t.Run("describe", func(t *testing.T) {
		out, err := f.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(out.Name) != "hello" || aws.ToString(out.Definition) != helloPass || out.Type != types.StateMachineTypeStandard || out.Status != types.StateMachineStatusActive {
			t.Errorf("DescribeStateMachine = %s %s %s %s", aws.ToString(out.Name), out.Type, out.Status, aws.ToString(out.Definition))
		}
		if got := aws.ToString(out.RoleArn); got != "arn:aws:iam::123456789012:role/service-role/StepFunctions-role" {
			t.Errorf("roleArn = %s", got)
		}
		if out.CreationDate == nil || time.Since(*out.CreationDate) > time.Minute {
			t.Errorf("creationDate = %v", out.CreationDate)
		}
	})
	t.Run("update replaces the definition", func(t *testing.T) {
		up, err := f.client.UpdateStateMachine(ctx, &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(arn), Definition: aws.String(helloTask)})
		if err != nil {
			t.Fatal(err)
		}
		if up.UpdateDate == nil || aws.ToString(up.RevisionId) == "" {
			t.Errorf("UpdateStateMachine = %+v", up)
		}
		out, err := f.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		if got := aws.ToString(out.Definition); got != helloTask {
			t.Errorf("definition = %s, want the updated one", got)
		}
	})
	t.Run("list pages through every machine", func(t *testing.T) {
		for i := range 4 {
			f.create(t, fmt.Sprintf("page-%d", i), helloPass, types.StateMachineTypeExpress)
		}
		var names []string
		var pages int
		p := sfn.NewListStateMachinesPaginator(f.client, &sfn.ListStateMachinesInput{MaxResults: 2})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(out.StateMachines) > 2 {
				t.Errorf("page of %d items, want at most 2", len(out.StateMachines))
			}
			for _, sm := range out.StateMachines {
				names = append(names, aws.ToString(sm.Name))
			}
		}
		if want := "hello page-0 page-1 page-2 page-3"; strings.Join(names, " ") != want || pages != 3 {
			t.Errorf("listed %q in %d pages, want %q in 3", strings.Join(names, " "), pages, want)
		}
	})
	t.Run("delete", func(t *testing.T) {
		if _, err := f.client.DeleteStateMachine(ctx, &sfn.DeleteStateMachineInput{StateMachineArn: aws.String(arn)}); err != nil {
			t.Fatal(err)
		}
		_, err := f.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
		wantCode[*types.StateMachineDoesNotExist](t, err)
		if _, err := f.client.DeleteStateMachine(ctx, &sfn.DeleteStateMachineInput{StateMachineArn: aws.String(arn)}); err != nil {
			t.Errorf("deleting again: %v, want success (idempotent)", err)
		}
	})
}

func TestExecutionActions(t *testing.T) {
	f := newFixture(t, `{"Charge": [{"result": {"charged": 42}}]}`, nil)
	ctx := context.Background()
	arn := f.create(t, "orders", helloTask, types.StateMachineTypeStandard)
	input := `{"order":"o-1"}`
	execArn := f.start(t, arn, "order-1", input)

	desc := f.settled(t, execArn)
	if desc.Status != types.ExecutionStatusSucceeded || aws.ToString(desc.Output) != `{"charged":42}` || aws.ToString(desc.Input) != input {
		t.Fatalf("DescribeExecution = %s output %s input %s", desc.Status, aws.ToString(desc.Output), aws.ToString(desc.Input))
	}
	if desc.StartDate == nil || desc.StopDate == nil || desc.StopDate.Before(*desc.StartDate) {
		t.Errorf("dates = %v .. %v", desc.StartDate, desc.StopDate)
	}

	errCases := []struct {
		name string
		call func() error
		want func(*testing.T, error)
	}{
		{"start a finished name with another input", func() error {
			_, err := f.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("order-1"), Input: aws.String(`{"order":"o-2"}`)})
			return err
		}, wantCode[*types.ExecutionAlreadyExists]},
		{"start on an unknown machine", func() error {
			_, err := f.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String("arn:aws:states:us-east-1:123456789012:stateMachine:nope")})
			return err
		}, wantCode[*types.StateMachineDoesNotExist]},
		{"start with input that is not JSON", func() error {
			_, err := f.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Input: aws.String(`{"order":`)})
			return err
		}, wantCode[*types.InvalidExecutionInput]},
		{"start with an invalid name", func() error {
			_, err := f.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("has space")})
			return err
		}, wantCode[*types.InvalidName]},
		{"describe an unknown execution", func() error {
			_, err := f.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String("arn:aws:states:us-east-1:123456789012:execution:orders:nope")})
			return err
		}, wantCode[*types.ExecutionDoesNotExist]},
		{"describe a malformed execution ARN", func() error {
			_, err := f.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String("order-1")})
			return err
		}, wantCode[*types.InvalidArn]},
		{"history of an unknown execution", func() error {
			_, err := f.client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String("arn:aws:states:us-east-1:123456789012:execution:orders:nope")})
			return err
		}, wantCode[*types.ExecutionDoesNotExist]},
		{"list executions of an unknown machine", func() error {
			_, err := f.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String("arn:aws:states:us-east-1:123456789012:stateMachine:nope")})
			return err
		}, wantCode[*types.StateMachineDoesNotExist]},
		{"list executions with maxResults over 1000", func() error {
			_, err := f.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(arn), MaxResults: 1001})
			return err
		}, wantCode[*types.ValidationException]},
		{"stop an unknown execution", func() error {
			_, err := f.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String("arn:aws:states:us-east-1:123456789012:execution:orders:nope")})
			return err
		}, wantCode[*types.ExecutionDoesNotExist]},
		{"redrive a succeeded execution", func() error {
			_, err := f.client.RedriveExecution(ctx, &sfn.RedriveExecutionInput{ExecutionArn: aws.String(execArn)})
			return err
		}, wantCode[*types.ExecutionNotRedrivable]},
		{"sync start of a STANDARD machine", func() error {
			_, err := f.client.StartSyncExecution(ctx, &sfn.StartSyncExecutionInput{StateMachineArn: aws.String(arn)})
			return err
		}, wantCode[*types.StateMachineTypeNotSupported]},
	}
	for _, tt := range errCases {
		t.Run(tt.name, func(t *testing.T) { tt.want(t, tt.call()) })
	}

	t.Run("history in AWS's event shapes, paged and reversed", func(t *testing.T) {
		var all []types.HistoryEvent
		p := sfn.NewGetExecutionHistoryPaginator(f.client, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(execArn), MaxResults: 3})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, out.Events...)
		}
		var kinds []string
		for i, ev := range all {
			kinds = append(kinds, string(ev.Type))
			if ev.Id != int64(i+1) || ev.Timestamp == nil {
				t.Errorf("event %d: id %d timestamp %v", i, ev.Id, ev.Timestamp)
			}
		}
		want := "ExecutionStarted TaskStateEntered LambdaFunctionScheduled LambdaFunctionStarted LambdaFunctionSucceeded TaskStateExited SucceedStateEntered SucceedStateExited ExecutionSucceeded"
		if got := strings.Join(kinds, " "); got != want {
			t.Fatalf("history = %s\nwant      %s", got, want)
		}
		if d := all[0].ExecutionStartedEventDetails; d == nil || aws.ToString(d.Input) != input {
			t.Errorf("ExecutionStarted details = %+v", d)
		}
		if d := all[2].LambdaFunctionScheduledEventDetails; d == nil || aws.ToString(d.Resource) != "arn:aws:lambda:us-east-1:123456789012:function:charge" {
			t.Errorf("LambdaFunctionScheduled details = %+v", d)
		}
		if d := all[4].LambdaFunctionSucceededEventDetails; d == nil || aws.ToString(d.Output) != `{"charged":42}` {
			t.Errorf("LambdaFunctionSucceeded details = %+v", d)
		}
		if d := all[5].StateExitedEventDetails; d == nil || aws.ToString(d.Name) != "Charge" {
			t.Errorf("TaskStateExited details = %+v", d)
		}
		rev, err := f.client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(execArn), ReverseOrder: true, MaxResults: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(rev.Events) != 1 || rev.Events[0].Type != types.HistoryEventTypeExecutionSucceeded || rev.NextToken == nil {
			t.Errorf("reversed first page = %+v", rev)
		}
	})
	t.Run("list executions pages, newest first, and filters by status", func(t *testing.T) {
		for i := range 4 {
			f.settled(t, f.start(t, arn, fmt.Sprintf("order-%d", i+2), input))
		}
		var names []string
		p := sfn.NewListExecutionsPaginator(f.client, &sfn.ListExecutionsInput{StateMachineArn: aws.String(arn), MaxResults: 2})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range out.Executions {
				names = append(names, aws.ToString(x.Name))
				if x.Status != types.ExecutionStatusSucceeded || x.StartDate == nil {
					t.Errorf("item %s: %s %v", aws.ToString(x.Name), x.Status, x.StartDate)
				}
			}
		}
		if len(names) != 5 || names[0] != "order-5" || names[4] != "order-1" {
			t.Errorf("executions = %v, want the five, newest first", names)
		}
		out, err := f.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(arn), StatusFilter: types.ExecutionStatusFailed})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Executions) != 0 {
			t.Errorf("FAILED executions = %d, want 0", len(out.Executions))
		}
	})
}

func TestStopRedriveAndSync(t *testing.T) {
	f := newFixture(t, `{"Charge": [{"error": "CardDeclined", "cause": "insufficient funds"}, {"result": {"charged": 7}}]}`, nil)
	ctx := context.Background()

	t.Run("stop", func(t *testing.T) {
		arn := f.create(t, "hold", waitLong, types.StateMachineTypeStandard)
		execArn := f.start(t, arn, "held", `{"n":1}`)
		// While it runs, the same name and input answer the same execution;
		// another input is ExecutionAlreadyExists.
		if again := f.start(t, arn, "held", `{"n":1}`); again != execArn {
			t.Errorf("StartExecution again = %s, want %s", again, execArn)
		}
		_, err := f.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String("held"), Input: aws.String(`{"n":2}`)})
		wantCode[*types.ExecutionAlreadyExists](t, err)
		running, err := f.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(arn), StatusFilter: types.ExecutionStatusRunning})
		if err != nil || len(running.Executions) != 1 {
			t.Errorf("RUNNING executions = %+v, %v; want the one", running, err)
		}
		out, err := f.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(execArn), Error: aws.String("Operator.Cancelled"), Cause: aws.String("not needed")})
		if err != nil {
			t.Fatal(err)
		}
		if out.StopDate == nil {
			t.Error("stopDate missing")
		}
		d := f.settled(t, execArn)
		if d.Status != types.ExecutionStatusAborted || aws.ToString(d.Error) != "Operator.Cancelled" || aws.ToString(d.Cause) != "not needed" {
			t.Errorf("after stop: %s %s %s", d.Status, aws.ToString(d.Error), aws.ToString(d.Cause))
		}
	})
	t.Run("redrive resumes a failed execution", func(t *testing.T) {
		arn := f.create(t, "charge", helloTask, types.StateMachineTypeStandard)
		execArn := f.start(t, arn, "declined", `{}`)
		if d := f.settled(t, execArn); d.Status != types.ExecutionStatusFailed || aws.ToString(d.Error) != "CardDeclined" {
			t.Fatalf("first run: %s %s", d.Status, aws.ToString(d.Error))
		}
		out, err := f.client.RedriveExecution(ctx, &sfn.RedriveExecutionInput{ExecutionArn: aws.String(execArn)})
		if err != nil {
			t.Fatal(err)
		}
		if out.RedriveDate == nil {
			t.Error("redriveDate missing")
		}
		d := f.settled(t, execArn)
		if d.Status != types.ExecutionStatusSucceeded || aws.ToString(d.Output) != `{"charged":7}` || aws.ToInt32(d.RedriveCount) != 1 {
			t.Errorf("after redrive: %s %s redriveCount %d", d.Status, aws.ToString(d.Output), aws.ToInt32(d.RedriveCount))
		}
	})
	t.Run("sync execution of an EXPRESS machine", func(t *testing.T) {
		arn := f.create(t, "express-hello", helloPass, types.StateMachineTypeExpress)
		out, err := f.client.StartSyncExecution(ctx, &sfn.StartSyncExecutionInput{StateMachineArn: aws.String(arn), Input: aws.String(`{"id":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != types.SyncExecutionStatusSucceeded || aws.ToString(out.Output) != `{"id":1,"out":{"greeting":"Hello, World!"}}` {
			t.Errorf("StartSyncExecution = %s %s", out.Status, aws.ToString(out.Output))
		}
	})
}

// tokenCatcher is a local function standing in for a Lambda function that a
// .waitForTaskToken task calls: it keeps the tokens it receives.
type tokenCatcher struct {
	tokens chan string
}

func (c *tokenCatcher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var p struct {
		Token string `json:"token"`
	}
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &p); err != nil || p.Token == "" {
		http.Error(w, `{"errorType":"BadPayload","errorMessage":"no token"}`, http.StatusBadRequest)
		return
	}
	c.tokens <- p.Token
	_, _ = w.Write([]byte(`{"queued":true}`))
}

func TestTaskTokenActions(t *testing.T) {
	catcher := &tokenCatcher{tokens: make(chan string, 4)}
	fn := httptest.NewServer(catcher)
	defer fn.Close()
	f := newFixture(t, `{}`, map[string]stepfn.Handler{"notify": sfnapi.FunctionURL(fn.URL, fn.Client())})
	ctx := context.Background()
	arn := f.create(t, "callback", callback, types.StateMachineTypeStandard)
	token := func() string {
		select {
		case tok := <-catcher.tokens:
			return tok
		case <-time.After(10 * time.Second):
			t.Fatal("the function received no task token")
			return ""
		}
	}

	t.Run("heartbeat then success", func(t *testing.T) {
		execArn := f.start(t, arn, "approve", `{"order":"o-1"}`)
		tok := token()
		if _, err := f.client.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(tok)}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(tok), Output: aws.String(`{"approved":true}`)}); err != nil {
			t.Fatal(err)
		}
		if d := f.settled(t, execArn); d.Status != types.ExecutionStatusSucceeded || aws.ToString(d.Output) != `{"approved":true}` {
			t.Errorf("after SendTaskSuccess: %s %s", d.Status, aws.ToString(d.Output))
		}
		_, err := f.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(tok), Output: aws.String(`{}`)})
		wantCode[*types.TaskTimedOut](t, err)
		_, err = f.client.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(tok)})
		wantCode[*types.TaskTimedOut](t, err)
	})
	t.Run("failure", func(t *testing.T) {
		execArn := f.start(t, arn, "reject", `{"order":"o-2"}`)
		tok := token()
		_, err := f.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(tok), Output: aws.String(`{"approved":`)})
		wantCode[*types.InvalidOutput](t, err)
		if _, err := f.client.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(tok), Error: aws.String("Rejected"), Cause: aws.String("by a human")}); err != nil {
			t.Fatal(err)
		}
		if d := f.settled(t, execArn); d.Status != types.ExecutionStatusFailed || aws.ToString(d.Error) != "Rejected" || aws.ToString(d.Cause) != "by a human" {
			t.Errorf("after SendTaskFailure: %s %s %s", d.Status, aws.ToString(d.Error), aws.ToString(d.Cause))
		}
	})
	t.Run("unknown tokens", func(t *testing.T) {
		_, err := f.client.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String("no-such-token")})
		wantCode[*types.TaskDoesNotExist](t, err)
		_, err = f.client.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String("no-such-token")})
		wantCode[*types.TaskDoesNotExist](t, err)
		_, err = f.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(""), Output: aws.String(`{}`)})
		wantCode[*types.InvalidToken](t, err)
	})
}

func TestTestStateAndValidate(t *testing.T) {
	f := newFixture(t, `{}`, nil)
	ctx := context.Background()
	t.Run("a Task state with a mocked result, DEBUG", func(t *testing.T) {
		def := `{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"charge","Payload.$":"$"},"ResultSelector":{"charged.$":"$.Payload.charged"},"End":true}`
		out, err := f.client.TestState(ctx, &sfn.TestStateInput{Definition: aws.String(def), Input: aws.String(`{"amount":5}`),
			InspectionLevel: types.InspectionLevelDebug, Mock: &types.MockInput{Result: aws.String(`{"StatusCode":200,"Payload":{"charged":5}}`)}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != types.TestExecutionStatusSucceeded || aws.ToString(out.Output) != `{"charged":5}` {
			t.Errorf("TestState = %s %s", out.Status, aws.ToString(out.Output))
		}
		if out.InspectionData == nil || aws.ToString(out.InspectionData.AfterParameters) != `{"FunctionName":"charge","Payload":{"amount":5}}` {
			t.Errorf("inspectionData = %+v", out.InspectionData)
		}
	})
	t.Run("a Task state whose mocked error a Catcher takes", func(t *testing.T) {
		def := `{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:charge","Catch":[{"ErrorEquals":["CardDeclined"],"Next":"Refuse"}],"End":true}`
		out, err := f.client.TestState(ctx, &sfn.TestStateInput{Definition: aws.String(def), Input: aws.String(`{}`),
			Mock: &types.MockInput{ErrorOutput: &types.MockErrorOutput{Error: aws.String("CardDeclined"), Cause: aws.String("insufficient funds")}}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != types.TestExecutionStatusCaughtError || aws.ToString(out.NextState) != "Refuse" || aws.ToString(out.Error) != "CardDeclined" {
			t.Errorf("TestState = %s next %s error %s", out.Status, aws.ToString(out.NextState), aws.ToString(out.Error))
		}
	})
	t.Run("a Pass state of a machine, by name", func(t *testing.T) {
		out, err := f.client.TestState(ctx, &sfn.TestStateInput{Definition: aws.String(helloPass), StateName: aws.String("Hello"), Input: aws.String(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != types.TestExecutionStatusSucceeded || aws.ToString(out.Output) != `{"out":{"greeting":"Hello, World!"}}` {
			t.Errorf("TestState = %s %s", out.Status, aws.ToString(out.Output))
		}
	})
	testStateErrors := []struct {
		name  string
		in    *sfn.TestStateInput
		check func(*testing.T, error)
	}{
		{"an invalid state", &sfn.TestStateInput{Definition: aws.String(`{"Type":"Nope"}`), Input: aws.String(`{}`)}, wantCode[*types.InvalidDefinition]},
		{"an unknown state name", &sfn.TestStateInput{Definition: aws.String(helloPass), StateName: aws.String("Nope"), Input: aws.String(`{}`)}, wantCode[*types.InvalidDefinition]},
		{"input that is not JSON", &sfn.TestStateInput{Definition: aws.String(helloPass), Input: aws.String(`{"a":`)}, wantCode[*types.InvalidExecutionInput]},
		{"a Task state without a mock", &sfn.TestStateInput{Definition: aws.String(helloTask), StateName: aws.String("Charge"), Input: aws.String(`{}`)}, wantCode[*types.ValidationException]},
	}
	for _, tt := range testStateErrors {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.client.TestState(ctx, tt.in)
			tt.check(t, err)
		})
	}
	tests := []struct {
		name, def  string
		result     types.ValidateStateMachineDefinitionResultCode
		diagnostic bool
	}{
		{"valid", helloPass, types.ValidateStateMachineDefinitionResultCodeOk, false},
		{"duplicate state names", `{"StartAt":"F","States":{"F":{"Type":"Parallel","End":true,"Branches":[{"StartAt":"S","States":{"S":{"Type":"Pass","End":true}}},{"StartAt":"S","States":{"S":{"Type":"Pass","End":true}}}]}}}`, types.ValidateStateMachineDefinitionResultCodeFail, true},
		{"not JSON", `{"StartAt":`, types.ValidateStateMachineDefinitionResultCodeFail, true},
	}
	for _, tt := range tests {
		t.Run("validate "+tt.name, func(t *testing.T) {
			out, err := f.client.ValidateStateMachineDefinition(ctx, &sfn.ValidateStateMachineDefinitionInput{Definition: aws.String(tt.def)})
			if err != nil {
				t.Fatal(err)
			}
			if out.Result != tt.result || (len(out.Diagnostics) > 0) != tt.diagnostic {
				t.Errorf("result = %s, diagnostics %+v", out.Result, out.Diagnostics)
			}
			for _, d := range out.Diagnostics {
				if d.Severity != types.ValidateStateMachineDefinitionSeverityError || aws.ToString(d.Message) == "" {
					t.Errorf("diagnostic = %+v", d)
				}
			}
		})
	}
}

// TestAttachedEngine: ora's own state machines (an attached engine) are
// listed and run through the API, and refuse changes.
func TestAttachedEngine(t *testing.T) {
	ora := stepfn.NewEngine(func(o *stepfn.Options) { o.Region, o.Account = "local", "000000000000" })
	defer ora.Close()
	ora.RegisterHandler("plan", stepfn.HandlerFunc(func(context.Context, []byte) ([]byte, error) { return []byte(`{"jobs":1}`), nil }))
	waveArn, err := ora.CreateStateMachine("ora-wave", []byte(`{"StartAt":"Plan","States":{"Plan":{"Type":"Task","Resource":"arn:aws:lambda:local:000000000000:function:plan","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	wave, err := ora.StartExecution(context.Background(), waveArn, "signal-1", []byte(`{"signal_id":"signal-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, `{}`, nil, ora)
	ctx := context.Background()
	if d := f.settled(t, wave); d.Status != types.ExecutionStatusSucceeded || aws.ToString(d.Output) != `{"jobs":1}` {
		t.Errorf("the wave: %s %s", d.Status, aws.ToString(d.Output))
	}
	list, err := f.client.ListStateMachines(ctx, &sfn.ListStateMachinesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.StateMachines) != 1 || aws.ToString(list.StateMachines[0].StateMachineArn) != waveArn {
		t.Errorf("ListStateMachines = %+v, want the wave", list.StateMachines)
	}
	execs, err := f.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(waveArn)})
	if err != nil {
		t.Fatal(err)
	}
	if len(execs.Executions) != 1 || aws.ToString(execs.Executions[0].ExecutionArn) != wave {
		t.Errorf("ListExecutions = %+v, want the wave", execs.Executions)
	}
	hist, err := f.client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(wave)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(hist.Events); n == 0 || hist.Events[n-1].Type != types.HistoryEventTypeExecutionSucceeded {
		t.Errorf("history of the wave = %d events", n)
	}
	again := f.start(t, waveArn, "signal-2", `{"signal_id":"signal-2"}`)
	if d := f.settled(t, again); d.Status != types.ExecutionStatusSucceeded {
		t.Errorf("a wave started through the API: %s", d.Status)
	}
	_, err = f.client.DeleteStateMachine(ctx, &sfn.DeleteStateMachineInput{StateMachineArn: aws.String(waveArn)})
	wantCode[*types.ValidationException](t, err)
	_, err = f.client.UpdateStateMachine(ctx, &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(waveArn), Definition: aws.String(helloPass)})
	wantCode[*types.ValidationException](t, err)
	_, err = f.client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("ora-wave"), Definition: aws.String(helloPass), RoleArn: aws.String("arn:aws:iam::123456789012:role/r")})
	wantCode[*types.StateMachineAlreadyExists](t, err)
}

func TestActions(t *testing.T) {
	want := "CreateStateMachine DeleteStateMachine DescribeExecution DescribeStateMachine GetExecutionHistory ListExecutions ListStateMachines " +
		"RedriveExecution SendTaskFailure SendTaskHeartbeat SendTaskSuccess StartExecution StartSyncExecution StopExecution TestState " +
		"UpdateStateMachine ValidateStateMachineDefinition"
	got := sfnapi.Actions()
	sort.Strings(got)
	if strings.Join(got, " ") != want {
		t.Errorf("Actions() = %s\nwant        %s", strings.Join(got, " "), want)
	}
}

// TestProtocol checks the wire rules the SDKs do not exercise: signatures
// from other machines, unknown actions, GET.
func TestProtocol(t *testing.T) {
	api := sfnapi.New(stepfn.NewEngine())
	tests := []struct {
		name, method, remote, target, auth string
		status                             int
		code                               string
	}{
		{"loopback, unsigned", http.MethodPost, "127.0.0.1:50000", "AWSStepFunctions.ListStateMachines", "", http.StatusOK, ""},
		{"IPv6 loopback, unsigned", http.MethodPost, "[::1]:50000", "AWSStepFunctions.ListStateMachines", "", http.StatusOK, ""},
		{"remote, unsigned", http.MethodPost, "192.0.2.10:50000", "AWSStepFunctions.ListStateMachines", "", http.StatusForbidden, "MissingAuthenticationTokenException"},
		{"remote, signed", http.MethodPost, "192.0.2.10:50000", "AWSStepFunctions.ListStateMachines", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261126/us-east-1/states/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=abc", http.StatusOK, ""},
		{"unknown action", http.MethodPost, "127.0.0.1:50000", "AWSStepFunctions.CreateActivity", "", http.StatusBadRequest, "UnknownOperationException"},
		{"other service", http.MethodPost, "127.0.0.1:50000", "DynamoDB_20120810.ListTables", "", http.StatusBadRequest, "UnknownOperationException"},
		{"GET", http.MethodGet, "127.0.0.1:50000", "AWSStepFunctions.ListStateMachines", "", http.StatusMethodNotAllowed, "UnknownOperationException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "/", strings.NewReader(`{}`))
			r.RemoteAddr = tt.remote
			r.Header.Set("X-Amz-Target", tt.target)
			r.Header.Set("Content-Type", "application/x-amz-json-1.0")
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			w := httptest.NewRecorder()
			api.ServeHTTP(w, r)
			if w.Code != tt.status || w.Header().Get("X-Amzn-ErrorType") != tt.code {
				t.Errorf("status %d, error type %q, want %d %q: %s", w.Code, w.Header().Get("X-Amzn-ErrorType"), tt.status, tt.code, w.Body.String())
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/x-amz-json-1.0" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
}
