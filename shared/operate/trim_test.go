package operate

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTrim(t *testing.T) {
	report := `{"stage":"Flag for review","error":"TransientError","cause":"x","results":{"decision":{"decision_id":"d1"}}}`
	describe := func(cause string) string {
		b, _ := json.Marshal(map[string]any{
			"ExecutionArn": "arn:aws:states:us-east-1:123456789012:execution:ora-reason:w1-2",
			"Status":       "FAILED", "Error": "TransientError", "Cause": cause,
			"Input":  strings.Repeat("i", 100_000), // the child's whole input: dropped
			"Output": "null",
		})
		return string(b)
	}
	tests := []struct {
		name     string
		in       Failure
		wantMax  int
		wantKeep []string
		wantDrop []string
	}{
		{"child failure keeps the report and the ARN", Failure{"States.TaskFailed", describe(report)}, 1024,
			[]string{"execution:ora-reason:w1-2", `\"decision_id\":\"d1\"`, "States.TaskFailed"}, []string{"iiii"}},
		{"child failure without a report is clipped", Failure{"States.TaskFailed", describe(strings.Repeat("c", 50_000))}, MaxCause + 512,
			[]string{"execution:ora-reason:w1-2", "(clipped)"}, []string{"iiii"}},
		{"a plain long cause is clipped", Failure{"TransientError", strings.Repeat("é", 20_000)}, MaxCause,
			[]string{"(clipped)"}, nil},
		{"a short cause is kept as it is", Failure{"TransientError", `{"errorMessage":"boom"}`}, 100,
			[]string{`{"errorMessage":"boom"}`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Trim(tt.in)
			if got.Error != tt.in.Error {
				t.Errorf("Error = %q, want %q", got.Error, tt.in.Error)
			}
			if len(got.Cause) > tt.wantMax {
				t.Errorf("Cause is %d bytes, want at most %d", len(got.Cause), tt.wantMax)
			}
			all := got.Error + got.Cause
			for _, k := range tt.wantKeep {
				if !strings.Contains(all, k) {
					t.Errorf("trimmed failure lost %q: %.300s", k, all)
				}
			}
			for _, d := range tt.wantDrop {
				if strings.Contains(all, d) {
					t.Errorf("trimmed failure still holds %q", d)
				}
			}
			if rep, _, ok := UnwrapChild(got); strings.Contains(tt.name, "keeps the report") && (!ok || rep.Stage != "Flag for review") {
				t.Errorf("the trimmed failure no longer unwraps to its report: %+v %v", rep, ok)
			}
		})
	}
}
