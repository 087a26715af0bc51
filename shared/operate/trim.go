package operate

import (
	"encoding/json"
	"unicode/utf8"
)

// MaxCause bounds a failure's cause as the state machine keeps it, and the
// cause an Outcome carries: a Catch stores the cause in the execution's
// state, where every later state and child carries it, under Step Functions'
// 256 KiB payload quota.
const MaxCause = 8 << 10

// Trim returns the failure as the wave should keep it after the operator has
// read it. A failed Express child's cause is its DescribeExecution, whose
// input is the child's whole input (and so the previous failure, and the one
// before): Trim keeps its execution ARN, status, error and cause (the
// child's report, which a resumed child restores its results from) and drops
// the rest. Any other cause is clipped to MaxCause.
func Trim(f Failure) Failure {
	var d struct {
		ExecutionArn string `json:"ExecutionArn"`
		Status       string `json:"Status,omitempty"`
		Error        string `json:"Error,omitempty"`
		Cause        string `json:"Cause,omitempty"`
	}
	if json.Unmarshal([]byte(f.Cause), &d) == nil && d.ExecutionArn != "" {
		if _, _, ok := UnwrapChild(f); !ok {
			d.Cause = clip(d.Cause, MaxCause) // not a report: nothing restores from it
		}
		if b, err := json.Marshal(d); err == nil {
			return Failure{Error: f.Error, Cause: string(b)}
		}
	}
	return Failure{Error: f.Error, Cause: clip(f.Cause, MaxCause)}
}

// clip returns s cut to at most n bytes on a rune boundary, marked when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "... (clipped)"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
