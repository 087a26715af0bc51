package handler

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

type fakeActor struct {
	act func(ctx context.Context, signalID, decisionID string) (act.Result, error)
}

func (f fakeActor) Act(ctx context.Context, signalID, decisionID string) (act.Result, error) {
	return f.act(ctx, signalID, decisionID)
}

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

func TestHandle(t *testing.T) {
	cases := []struct {
		name     string
		payload  string
		result   act.Result
		err      error
		wantOut  string
		wantType string
	}{
		{name: "success, unknown fields ignored", payload: `{"signal_id":"s1","decision_id":"d1","decision":{"band":"high"}}`,
			result: act.Result{Outcome: "success", Evidence: []string{"0", "1"}}, wantOut: `{"outcome":"success","evidence":["0","1"]}`},
		{name: "missing decision", payload: `{"signal_id":"s1"}`, wantType: "InvalidInput"},
		{name: "missing signal", payload: `{"decision_id":"d1"}`, wantType: "InvalidInput"},
		{name: "scope violation, wrapped", payload: `{"signal_id":"s1","decision_id":"d1"}`,
			err: fmt.Errorf("act: %w", &taskerr.ScopeViolation{Message: "no"}), wantType: "ScopeViolation"},
		{name: "provenance", payload: `{"signal_id":"s1","decision_id":"d1"}`,
			err: &taskerr.ProvenanceError{Message: "digest"}, wantType: "ProvenanceError"},
		{name: "action failed", payload: `{"signal_id":"s1","decision_id":"d1"}`,
			err: &taskerr.ActionFailed{Message: "502"}, wantType: "ActionFailed"},
		{name: "transient", payload: `{"signal_id":"s1","decision_id":"d1"}`,
			err: fmt.Errorf("act: %w", ora.Transient(nil, "throttled")), wantType: "TransientError"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Handler{Actor: fakeActor{act: func(_ context.Context, s, d string) (act.Result, error) {
				if s != "s1" || d != "d1" {
					t.Errorf("Act(%q, %q), want s1, d1", s, d)
				}
				return tc.result, tc.err
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
