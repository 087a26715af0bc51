// Package handler maps the record function's events to its service and back; the
// Lambda (functions/record) and the embedded runtime both call it.
package handler

import (
	"context"
	"encoding/json"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/review"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Recorder writes final verdicts; *review.Service is one.
type Recorder interface {
	// Record writes the final-verdict entry. Errors: EINVALID, ETRANSIENT.
	Record(ctx context.Context, signalID, decisionID, outcome string, verdict json.RawMessage) (review.RecordResult, error)
}

// Input is the Record task's input; other fields are ignored.
type Input struct {
	SignalID   string          `json:"signal_id"`
	DecisionID string          `json:"decision_id"`
	Outcome    string          `json:"outcome"` // completed | rejected
	Verdict    json.RawMessage `json:"verdict,omitempty"`
}

// Handler answers the state machine's Record task.
type Handler struct {
	Recorder Recorder
}

// Handle records the wave's final verdict and returns {"final": outcome}.
// Errors are taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (review.RecordResult, error) {
	switch {
	case in.SignalID == "":
		return review.RecordResult{}, taskerr.From(ora.Invalid("signal_id", "required"))
	case in.DecisionID == "":
		return review.RecordResult{}, taskerr.From(ora.Invalid("decision_id", "required"))
	case in.Outcome != review.OutcomeCompleted && in.Outcome != review.OutcomeRejected:
		return review.RecordResult{}, taskerr.From(ora.Invalid("outcome", "%q is not completed or rejected", in.Outcome))
	}
	out, err := h.Recorder.Record(ctx, in.SignalID, in.DecisionID, in.Outcome, in.Verdict)
	if err != nil {
		return review.RecordResult{}, taskerr.From(err)
	}
	return out, nil
}
