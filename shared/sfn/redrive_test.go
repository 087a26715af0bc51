package sfn_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sfn"
)

// RedriveExecution's documented answers, as the SDK decodes them.
func TestRedrive(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		wantCode string
		wantMsg  string
	}{
		{name: "redriven", status: 200, body: `{"redriveDate":1795323600.5}`},
		{name: "running", status: 400, body: `{"__type":"com.amazonaws.swf.service.v2.model#ExecutionNotRedrivable","message":"Execution is RUNNING and cannot be redriven"}`,
			wantCode: ora.ECONFLICT, wantMsg: "wave sig_1 cannot be redriven: Execution is RUNNING and cannot be redriven"},
		{name: "no execution", status: 400, body: mustError("ExecutionDoesNotExist"), wantCode: ora.ENOTFOUND, wantMsg: "wave sig_1 has no execution"},
		{name: "execution limit", status: 400, body: mustError("ExecutionLimitExceeded"), wantCode: ora.ETRANSIENT},
		{name: "throttled", status: 400, body: mustError("ThrottlingException"), wantCode: ora.ETRANSIENT},
		{name: "invalid arn", status: 400, body: mustError("InvalidArn"), wantCode: ora.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSFN{reply: func(call) (int, string) { return tt.status, tt.body }}
			srv := httptest.NewServer(f)
			defer srv.Close()
			api := awssfn.New(awssfn.Options{
				Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
				BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
			})
			r, err := sfn.NewRedriver(api, machineARN)
			if err != nil {
				t.Fatal(err)
			}
			err = r.Redrive(context.Background(), "sig_1")
			if got := ora.ErrorCode(err); got != tt.wantCode {
				t.Fatalf("error code = %q (%v), want %q", got, err, tt.wantCode)
			}
			if !strings.Contains(ora.ErrorMessage(err), tt.wantMsg) {
				t.Errorf("message %q, want it to contain %q", ora.ErrorMessage(err), tt.wantMsg)
			}
			if len(f.calls) != 1 || f.calls[0].Target != "RedriveExecution" ||
				f.calls[0].Body["executionArn"] != "arn:aws:states:us-east-1:123456789012:execution:ora:sig_1" {
				t.Errorf("calls %+v, want one RedriveExecution of sig_1", f.calls)
			}
		})
	}
	if _, err := sfn.NewRedriver(nil, "arn:aws:lambda:us-east-1:123456789012:function:x"); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("a function ARN: got %v, want EINVALID", err)
	}
}
