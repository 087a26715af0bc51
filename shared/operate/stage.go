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

// operateState is the state that catches failures.
const operateState = "Operate on failure"

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
