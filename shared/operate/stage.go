package operate

import (
	"encoding/json"
	"slices"
)

// Stages are the wave's top-level states a failure is caught from and a
// paused wave resumes at; "Resume at the failed stage" in
// statemachines/ora.asl.json has one choice per stage.
var Stages = []string{
	"Plan observations", "Fetch observations", "Compile orientation packet", "Reason",
	"Flag for review", "Escalate to a human", "Record rejection", "Act", "Validate", "Record outcome",
}

// The stages a resume at Fetch observations may need: Plan writes the
// jobs the Fetch Map reads.
const (
	stagePlan  = "Plan observations"
	stageFetch = "Fetch observations"
)

// operateState is the state that catches failures.
const operateState = "Operate on failure"

// ChildStates are the wave's Task states that start an Express child
// (statemachines.Children), each with the child's first stage: where a child
// that failed without saying where (it timed out, or was stopped) resumes.
// Every step of a child is idempotent, so running its finished stages again
// is safe; a child that reports its stage resumes exactly there.
var ChildStates = map[string]string{
	"Orient and reason": "Compile orientation packet",
	"Act and validate":  "Act",
}

// ChildReport is what an Express child reports when one of its stages fails:
// its Fail state's cause is this JSON. Results carries what a resume at that
// stage needs (the decision for Flag for review, the validation for Record
// outcome); the child restores it from the failure when it resumes.
type ChildReport struct {
	Stage   string          `json:"stage"`
	Error   string          `json:"error"`
	Cause   string          `json:"cause"`
	Results json.RawMessage `json:"results,omitempty"`
}

// UnwrapChild returns the report of the Express child a failure came from,
// and the stage's own failure. The parent sees a failed child as
// States.TaskFailed whose cause is the child's DescribeExecution, the report
// being its Cause; a cause that is the report itself is read as well. ok is
// false for any other failure.
func UnwrapChild(f Failure) (rep ChildReport, inner Failure, ok bool) {
	read := func(s string) bool {
		var r ChildReport
		if json.Unmarshal([]byte(s), &r) != nil || r.Stage == "" || !slices.Contains(Stages, r.Stage) {
			return false
		}
		rep = r
		return true
	}
	if !read(f.Cause) {
		var d struct {
			Cause string `json:"Cause"`
		}
		if json.Unmarshal([]byte(f.Cause), &d) != nil || !read(d.Cause) {
			return ChildReport{}, f, false
		}
	}
	inner = Failure{Error: rep.Error, Cause: rep.Cause}
	if inner.Error == "" {
		inner.Error = f.Error
	}
	return rep, inner, true
}

// FailedStage returns the stage that failed, given the names of the states the
// execution entered in order: the last stage entered before the last entry
// into Operate on failure. It returns "" when there is none.
func FailedStage(entered []string) string {
	end := len(entered)
	for i := len(entered) - 1; i >= 0; i-- {
		if entered[i] == operateState {
			end = i
			break
		}
	}
	for i := end - 1; i >= 0; i-- {
		if slices.Contains(Stages, entered[i]) {
			return entered[i]
		}
		if first, ok := ChildStates[entered[i]]; ok {
			return first
		}
	}
	return ""
}

// InferStage guesses the failed stage from the wave's state (the execution's
// JSON at the Catch) where the execution history is not at hand: each stage
// adds its result to the state, so the first missing result names the stage.
// Where two stages leave no result (Fetch before Compile, Flag for review
// before Act), it names the earlier one; both are safe to run again.
func InferStage(wave json.RawMessage) string {
	var w struct {
		Plan     json.RawMessage `json:"plan"`
		Packet   json.RawMessage `json:"packet"`
		Decision *struct {
			DecisionID string `json:"decision_id"`
			Band       string `json:"band"`
		} `json:"decision"`
		Verdict *struct {
			Verdict string `json:"verdict"`
		} `json:"verdict"`
		Timeout    json.RawMessage `json:"timeout"`
		Act        json.RawMessage `json:"act"`
		Validation json.RawMessage `json:"validation"`
	}
	if json.Unmarshal(wave, &w) != nil {
		return ""
	}
	if w.Decision != nil && w.Decision.DecisionID == "" {
		w.Decision = nil // a placeholder set before any decision was made
	}
	switch {
	case w.Validation != nil:
		return "Record outcome"
	case w.Act != nil:
		return "Validate"
	case w.Timeout != nil:
		return "Record rejection"
	case w.Verdict != nil && w.Verdict.Verdict == "approved":
		return "Act"
	case w.Verdict != nil:
		return "Record rejection"
	case w.Decision != nil && w.Decision.Band == "high":
		return "Act"
	case w.Decision != nil && w.Decision.Band == "medium":
		return "Flag for review"
	case w.Decision != nil:
		return "Escalate to a human"
	case w.Packet != nil:
		return "Reason"
	case w.Plan != nil:
		return "Fetch observations"
	}
	return "Plan observations"
}
