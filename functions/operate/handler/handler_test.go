package handler

import (
	"context"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// errorType is the name Step Functions sees for err.
func errorType(err error) string {
	if err == nil {
		return ""
	}
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

type fakeOperator struct {
	operate func(ctx context.Context, signalID, decisionID string, f operate.Failure) (operate.Outcome, error)
}

func (f fakeOperator) Operate(ctx context.Context, signalID, decisionID string, fl operate.Failure) (operate.Outcome, error) {
	return f.operate(ctx, signalID, decisionID, fl)
}

func TestHandle(t *testing.T) {
	cases := []struct {
		name, payload string
		err           error
		wantOut       string
		wantType      string
	}{
		{name: "caught error", payload: `{"signal_id":"s1","decision_id":"d1","decision":{"tier":1},"failure":{"Error":"ActionFailed","Cause":"{\"errorMessage\":\"502\"}"}}`,
			wantOut: `{"error":"ActionFailed","cause":"502"}`},
		{name: "missing signal", payload: `{"failure":{"Error":"X"}}`, wantType: "InvalidInput"},
		{name: "transient", payload: `{"signal_id":"s1","decision_id":"d1","failure":{"Error":"X"}}`, err: ora.Transient(nil, "x"), wantType: "TransientError"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Handler{Operator: fakeOperator{operate: func(_ context.Context, s, d string, f operate.Failure) (operate.Outcome, error) {
				if tc.err != nil {
					return operate.Outcome{}, tc.err
				}
				if f.Error != "ActionFailed" || f.Cause != `{"errorMessage":"502"}` {
					t.Errorf("failure: got %+v", f)
				}
				return operate.Outcome{Error: f.Error, Cause: "502"}, nil
			}}}
			out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), []byte(tc.payload))
			if got := errorType(err); got != tc.wantType {
				t.Fatalf("error type: got %q (%v), want %q", got, err, tc.wantType)
			}
			if tc.wantOut != "" && string(out) != tc.wantOut {
				t.Errorf("output: got %s, want %s", out, tc.wantOut)
			}
		})
	}
}
