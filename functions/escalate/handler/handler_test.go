package handler

import (
	"context"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/review"
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

type fakeEscalator struct {
	escalate func(ctx context.Context, signalID, decisionID, token string) (review.EscalateResult, error)
}

func (f fakeEscalator) Escalate(ctx context.Context, signalID, decisionID, token string) (review.EscalateResult, error) {
	return f.escalate(ctx, signalID, decisionID, token)
}

func TestHandle(t *testing.T) {
	cases := []struct {
		name, payload string
		err           error
		wantType      string
	}{
		{name: "waits", payload: `{"signal_id":"s1","decision_id":"d1","task_token":"AQCEAAAAKgAAAA"}`},
		{name: "missing token", payload: `{"signal_id":"s1","decision_id":"d1"}`, wantType: "InvalidInput"},
		{name: "missing decision", payload: `{"signal_id":"s1","task_token":"t"}`, wantType: "InvalidInput"},
		{name: "already settled", payload: `{"signal_id":"s1","decision_id":"d1","task_token":"t"}`, err: ora.Conflict(nil, "approved"), wantType: "Conflict"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var gotToken string
			h := Handler{Escalator: fakeEscalator{escalate: func(_ context.Context, s, d, tok string) (review.EscalateResult, error) {
				gotToken = tok
				return review.EscalateResult{Status: ora.StatusAwaitingApproval}, tc.err
			}}}
			out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), []byte(tc.payload))
			if got := errorType(err); got != tc.wantType {
				t.Fatalf("error type: got %q (%v), want %q", got, err, tc.wantType)
			}
			if tc.wantType == "" && (gotToken != "AQCEAAAAKgAAAA" || string(out) != `{"status":"awaiting-approval"}`) {
				t.Errorf("got token %q output %s, want the payload's token and awaiting-approval", gotToken, out)
			}
		})
	}
}
