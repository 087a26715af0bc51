package sfn_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sfn"
)

const machineARN = "arn:aws:states:us-east-1:123456789012:stateMachine:ora"

// call is one request the fake service received.
type call struct {
	Target string
	Body   map[string]any
}

// fakeSFN is an httptest server speaking the Step Functions JSON 1.0 protocol.
// reply decides the answer to each call: a status and a JSON body.
type fakeSFN struct {
	mu    sync.Mutex
	calls []call
	reply func(c call) (int, string)
}

func (f *fakeSFN) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := call{Target: strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AWSStepFunctions.")}
	_ = json.Unmarshal(raw, &c.Body)
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	status, body := f.reply(c)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func newClient(t *testing.T, f *fakeSFN) *sfn.Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	api := awssfn.New(awssfn.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		BaseEndpoint:     aws.String(srv.URL),
		RetryMaxAttempts: 1,
	})
	return sfn.New(api, machineARN)
}

func apiError(typ string) (int, string) {
	return http.StatusBadRequest, `{"__type":"com.amazonaws.swf.service.v2.model#` + typ + `","message":"` + typ + ` happened"}`
}

func TestStartWave(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		wantCode string // "" means success
	}{
		{name: "started", status: 200, body: `{"executionArn":"arn:aws:states:us-east-1:123456789012:execution:ora:sig_1","startDate":1795323600.5}`},
		{name: "already exists is not an error", status: 400, body: mustError("ExecutionAlreadyExists")},
		{name: "invalid name", status: 400, body: mustError("InvalidName"), wantCode: ora.EINVALID},
		{name: "invalid input", status: 400, body: mustError("InvalidExecutionInput"), wantCode: ora.EINVALID},
		{name: "no state machine", status: 400, body: mustError("StateMachineDoesNotExist"), wantCode: ora.ENOTFOUND},
		{name: "execution limit", status: 400, body: mustError("ExecutionLimitExceeded"), wantCode: ora.ETRANSIENT},
		{name: "throttled", status: 400, body: mustError("ThrottlingException"), wantCode: ora.ETRANSIENT},
		{name: "server error", status: 500, body: `{"__type":"InternalFailure","message":"boom"}`, wantCode: ora.ETRANSIENT},
		{name: "unknown error", status: 400, body: mustError("SomethingNew"), wantCode: ora.EINTERNAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSFN{reply: func(call) (int, string) { return tt.status, tt.body }}
			err := newClient(t, f).StartWave(context.Background(), "sig_0123", []byte(`{"signal_id":"sig_0123","escalation_timeout_seconds":86400}`))
			if got := ora.ErrorCode(err); got != tt.wantCode {
				t.Fatalf("error code = %q (%v), want %q", got, err, tt.wantCode)
			}
			if len(f.calls) != 1 {
				t.Fatalf("calls = %d, want 1", len(f.calls))
			}
			c := f.calls[0]
			if c.Target != "StartExecution" {
				t.Errorf("target = %q, want StartExecution", c.Target)
			}
			if c.Body["name"] != "sig_0123" || c.Body["stateMachineArn"] != machineARN {
				t.Errorf("request = %v, want name sig_0123 on %s", c.Body, machineARN)
			}
			if c.Body["input"] != `{"signal_id":"sig_0123","escalation_timeout_seconds":86400}` {
				t.Errorf("input = %v", c.Body["input"])
			}
		})
	}
}

func TestWaveExists(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		want     bool
		wantCode string
	}{
		{name: "exists", status: 200, body: `{"executionArn":"arn:aws:states:us-east-1:123456789012:execution:ora:sig_1","status":"SUCCEEDED","startDate":1795323600.5}`, want: true},
		{name: "does not exist", status: 400, body: mustError("ExecutionDoesNotExist")},
		{name: "throttled", status: 400, body: mustError("ThrottlingException"), wantCode: ora.ETRANSIENT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSFN{reply: func(call) (int, string) { return tt.status, tt.body }}
			got, err := newClient(t, f).WaveExists(context.Background(), "sig_1")
			if got != tt.want || ora.ErrorCode(err) != tt.wantCode {
				t.Fatalf("WaveExists = %v, %v; want %v, code %q", got, err, tt.want, tt.wantCode)
			}
			if len(f.calls) != 1 || f.calls[0].Target != "DescribeExecution" ||
				f.calls[0].Body["executionArn"] != "arn:aws:states:us-east-1:123456789012:execution:ora:sig_1" {
				t.Errorf("calls %+v, want one DescribeExecution of sig_1", f.calls)
			}
		})
	}
}

func mustError(typ string) string {
	_, body := apiError(typ)
	return body
}

func TestSendTask(t *testing.T) {
	tests := []struct {
		name     string
		reply    string // "" means 200 {}
		wantCode string
	}{
		{name: "ok"},
		{name: "task gone", reply: "TaskDoesNotExist", wantCode: ora.ENOTFOUND},
		{name: "timed out", reply: "TaskTimedOut", wantCode: ora.ECONFLICT},
		{name: "bad token", reply: "InvalidToken", wantCode: ora.EINVALID},
		{name: "bad output", reply: "InvalidOutput", wantCode: ora.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSFN{reply: func(call) (int, string) {
				if tt.reply == "" {
					return 200, `{}`
				}
				return apiError(tt.reply)
			}}
			c := newClient(t, f)
			errSuccess := c.SendTaskSuccess(context.Background(), "tok-1", []byte(`{"verdict":"approved"}`))
			errFailure := c.SendTaskFailure(context.Background(), "tok-1", "Rejected", "no")
			for _, err := range []error{errSuccess, errFailure} {
				if got := ora.ErrorCode(err); got != tt.wantCode {
					t.Errorf("error code = %q (%v), want %q", got, err, tt.wantCode)
				}
			}
			if len(f.calls) != 2 {
				t.Fatalf("calls = %d, want 2", len(f.calls))
			}
			if got := f.calls[0]; got.Target != "SendTaskSuccess" || got.Body["taskToken"] != "tok-1" || got.Body["output"] != `{"verdict":"approved"}` {
				t.Errorf("success call = %+v", got)
			}
			if got := f.calls[1]; got.Target != "SendTaskFailure" || got.Body["error"] != "Rejected" || got.Body["cause"] != "no" {
				t.Errorf("failure call = %+v", got)
			}
		})
	}
}
