package handler

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
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
	operate func(ctx context.Context, in operate.Input) (operate.Outcome, error)
	pause   func(ctx context.Context, signalID, opID, token string) error
	abandon func(ctx context.Context, signalID string, wave json.RawMessage, f operate.Failure) (operate.Outcome, error)
}

func (f fakeOperator) Operate(ctx context.Context, in operate.Input) (operate.Outcome, error) {
	return f.operate(ctx, in)
}

func (f fakeOperator) Pause(ctx context.Context, signalID, opID, token string) error {
	return f.pause(ctx, signalID, opID, token)
}

func (f fakeOperator) Abandon(ctx context.Context, signalID string, wave json.RawMessage, fl operate.Failure) (operate.Outcome, error) {
	return f.abandon(ctx, signalID, wave, fl)
}

func TestHandle(t *testing.T) {
	cases := []struct {
		name, payload string
		err           error
		wantCall      string
		wantOut       string
		wantType      string
	}{
		{name: "caught error", payload: `{"signal_id":"s1","wave":{"decision":{"decision_id":"d1"}},"execution_id":"arn:x","entered_at":"t1","failure":{"Error":"ActionFailed","Cause":"{\"errorMessage\":\"502\"}"}}`,
			wantCall: "operate", wantOut: `"action":"pause"`},
		{name: "paused wave's token", payload: `{"signal_id":"s1","operator_decision_id":"op1","task_token":"tok"}`, wantCall: "pause", wantOut: `"operator_decision_id":"op1"`},
		{name: "abandoned", payload: `{"signal_id":"s1","abandon":true,"failure":{"Error":"ActionFailed"}}`, wantCall: "abandon", wantOut: `"action":"fail"`},
		{name: "missing signal", payload: `{"failure":{"Error":"X"}}`, wantType: "InvalidInput"},
		{name: "transient", payload: `{"signal_id":"s1","failure":{"Error":"X"}}`, err: ora.Transient(nil, "x"), wantCall: "operate", wantType: "TransientError"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			called := ""
			h := Handler{Operator: fakeOperator{
				operate: func(_ context.Context, in operate.Input) (operate.Outcome, error) {
					called = "operate"
					if tc.err != nil {
						return operate.Outcome{}, tc.err
					}
					if in.Failure.Error != "ActionFailed" || in.ExecutionID != "arn:x" || in.EnteredAt != "t1" || len(in.Wave) == 0 {
						t.Errorf("input: got %+v", in)
					}
					return operate.Outcome{Action: "pause", Error: in.Failure.Error}, nil
				},
				pause: func(_ context.Context, s, op, tok string) error {
					called = "pause"
					if s != "s1" || op != "op1" || tok != "tok" {
						t.Errorf("pause: got %s %s %s", s, op, tok)
					}
					return nil
				},
				abandon: func(_ context.Context, s string, _ json.RawMessage, f operate.Failure) (operate.Outcome, error) {
					called = "abandon"
					return operate.Outcome{Action: "fail", Error: f.Error}, nil
				},
			}}
			out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), []byte(tc.payload))
			if got := errorType(err); got != tc.wantType {
				t.Fatalf("error type: got %q (%v), want %q", got, err, tc.wantType)
			}
			if called != tc.wantCall {
				t.Errorf("called %q, want %q", called, tc.wantCall)
			}
			if tc.wantOut != "" && !json.Valid(out) || tc.wantOut != "" && !strings.Contains(string(out), tc.wantOut) {
				t.Errorf("output: got %s, want it to contain %s", out, tc.wantOut)
			}
		})
	}
}
