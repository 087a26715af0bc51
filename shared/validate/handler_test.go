package validate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
	"github.com/ora-runtime/ora/shared/validate"
)

type fakeValidator struct {
	validate func(ctx context.Context, v ora.Validator, signalID, decisionID string) (ora.ValidatorResult, error)
}

func (f fakeValidator) Validate(ctx context.Context, v ora.Validator, signalID, decisionID string) (ora.ValidatorResult, error) {
	return f.validate(ctx, v, signalID, decisionID)
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
	for _, v := range []ora.Validator{ora.ValidatorTechnical, ora.ValidatorSafety, ora.ValidatorIntent, ora.ValidatorWitness} {
		t.Run(string(v), func(t *testing.T) { testHandle(t, v) })
	}
}

func testHandle(t *testing.T, validator ora.Validator) {
	pass := ora.ValidatorResult{Validator: validator, Verdict: ora.Pass, Summary: "ok", DecisionID: "d1",
		Attribution: &ora.Attribution{AuthorType: validator.ResponsibleAuthor(), ResponsibleFor: "x"}}
	cases := []struct {
		name     string
		payload  string
		result   ora.ValidatorResult
		err      error
		wantType string
	}{
		{name: "pass, unknown fields ignored", payload: `{"signal_id":"s1","decision_id":"d1","decision":{"tier":3}}`, result: pass},
		{name: "fail", payload: `{"signal_id":"s1","decision_id":"d1"}`,
			err: fmt.Errorf("validate: %w", &taskerr.ValidationFailed{Message: "FAIL"}), wantType: "ValidationFailed"},
		{name: "missing decision", payload: `{"signal_id":"s1"}`, wantType: "InvalidInput"},
		{name: "missing signal", payload: `{"decision_id":"d1"}`, wantType: "InvalidInput"},
		{name: "unknown decision", payload: `{"signal_id":"s1","decision_id":"d1"}`, err: ora.Errorf(ora.ENOTFOUND, "no"), wantType: "NotFound"},
		{name: "transient", payload: `{"signal_id":"s1","decision_id":"d1"}`, err: ora.Transient(nil, "throttled"), wantType: "TransientError"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := validate.Handler{Validator: validator, Runner: fakeValidator{validate: func(_ context.Context, v ora.Validator, s, d string) (ora.ValidatorResult, error) {
				if v != validator || s != "s1" || d != "d1" {
					t.Errorf("Validate(%s, %q, %q), want %s, s1, d1", v, s, d, validator)
				}
				return tc.result, tc.err
			}}}
			out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), []byte(tc.payload))
			if got := errorType(err); got != tc.wantType {
				t.Fatalf("error type: got %q (%v), want %q", got, err, tc.wantType)
			}
			if tc.wantType != "" {
				return
			}
			var got ora.ValidatorResult
			if err := json.Unmarshal(out, &got); err != nil || got.Verdict != ora.Pass || got.Attribution.AuthorType != validator.ResponsibleAuthor() {
				t.Errorf("output: got %s (%v), want the PASS result", out, err)
			}
		})
	}
}
