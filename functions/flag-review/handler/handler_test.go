package handler

import (
	"context"
	"fmt"
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

type fakeReviewer struct {
	flag func(ctx context.Context, signalID, decisionID string) (review.FlagResult, error)
}

func (f fakeReviewer) FlagReview(ctx context.Context, signalID, decisionID string) (review.FlagResult, error) {
	return f.flag(ctx, signalID, decisionID)
}

func TestHandle(t *testing.T) {
	cases := []struct {
		name, payload string
		err           error
		wantOut       string
		wantType      string
	}{
		{name: "requested", payload: `{"signal_id":"s1","decision_id":"d1","decision":{"band":"medium"}}`, wantOut: `{"review":"requested"}`},
		{name: "missing decision", payload: `{"signal_id":"s1"}`, wantType: "InvalidInput"},
		{name: "unknown decision", payload: `{"signal_id":"s1","decision_id":"d1"}`, err: fmt.Errorf("flag: %w", ora.Errorf(ora.ENOTFOUND, "no")), wantType: "NotFound"},
		{name: "transient", payload: `{"signal_id":"s1","decision_id":"d1"}`, err: ora.Transient(nil, "x"), wantType: "TransientError"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Handler{Reviewer: fakeReviewer{flag: func(_ context.Context, s, d string) (review.FlagResult, error) {
				if tc.err != nil {
					return review.FlagResult{}, tc.err
				}
				return review.FlagResult{Review: "requested"}, nil
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
