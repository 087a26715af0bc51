package handler

import (
	"context"
	"encoding/json"
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

type fakeRecorder struct {
	record func(ctx context.Context, signalID, decisionID, outcome string, verdict json.RawMessage) (review.RecordResult, error)
}

func (f fakeRecorder) Record(ctx context.Context, signalID, decisionID, outcome string, verdict json.RawMessage) (review.RecordResult, error) {
	return f.record(ctx, signalID, decisionID, outcome, verdict)
}

func TestHandle(t *testing.T) {
	cases := []struct {
		name, payload string
		err           error
		wantOut       string
		wantVerdict   string
		wantType      string
	}{
		{name: "completed", payload: `{"signal_id":"s1","decision_id":"d1","outcome":"completed","verdict":[{"verdict":"PASS"}],"act":{}}`,
			wantOut: `{"final":"completed"}`, wantVerdict: `[{"verdict":"PASS"}]`},
		{name: "rejected by timeout", payload: `{"signal_id":"s1","decision_id":"d1","outcome":"rejected","verdict":{"Error":"States.Timeout"}}`,
			wantOut: `{"final":"rejected"}`, wantVerdict: `{"Error":"States.Timeout"}`},
		{name: "unknown outcome", payload: `{"signal_id":"s1","decision_id":"d1","outcome":"maybe"}`, wantType: "InvalidInput"},
		{name: "missing signal", payload: `{"decision_id":"d1","outcome":"completed"}`, wantType: "InvalidInput"},
		{name: "transient", payload: `{"signal_id":"s1","decision_id":"d1","outcome":"completed"}`, err: ora.Transient(nil, "x"), wantType: "TransientError"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var gotVerdict string
			h := Handler{Recorder: fakeRecorder{record: func(_ context.Context, s, d, outcome string, v json.RawMessage) (review.RecordResult, error) {
				gotVerdict = string(v)
				return review.RecordResult{Final: outcome}, tc.err
			}}}
			out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), []byte(tc.payload))
			if got := errorType(err); got != tc.wantType {
				t.Fatalf("error type: got %q (%v), want %q", got, err, tc.wantType)
			}
			if tc.wantOut != "" && (string(out) != tc.wantOut || gotVerdict != tc.wantVerdict) {
				t.Errorf("got output %s verdict %s, want %s and %s", out, gotVerdict, tc.wantOut, tc.wantVerdict)
			}
		})
	}
}
