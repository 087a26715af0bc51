// Package handler maps the escalate function's events to its service and back; the
// Lambda (functions/escalate) and the embedded runtime both call it.
package handler

import (
	"context"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/review"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Escalator hands decisions to a human; *review.Service is one.
type Escalator interface {
	// Escalate moves the decision to awaiting-approval, records the
	// architect-intent with the task token and notifies. Errors: EINVALID,
	// ENOTFOUND, ECONFLICT, ETRANSIENT.
	Escalate(ctx context.Context, signalID, decisionID, taskToken string) (review.EscalateResult, error)
}

// Input is the Escalate task's payload; other fields are ignored.
type Input struct {
	SignalID   string `json:"signal_id"`
	DecisionID string `json:"decision_id"`
	TaskToken  string `json:"task_token"`
}

// Handler answers the state machine's Escalate task. Its output is ignored:
// the task ends when the human's verdict settles the token.
type Handler struct {
	Escalator Escalator
	// Secrets receives the task token (ora.Secrets.AddTaskToken), so every
	// writer but the ledger redacts it. Optional.
	Secrets *ora.Secrets
}

// Handle escalates in.DecisionID. Errors are taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (review.EscalateResult, error) {
	switch {
	case in.SignalID == "":
		return review.EscalateResult{}, taskerr.From(ora.Invalid("signal_id", "required"))
	case in.DecisionID == "":
		return review.EscalateResult{}, taskerr.From(ora.Invalid("decision_id", "required"))
	case in.TaskToken == "":
		return review.EscalateResult{}, taskerr.From(ora.Invalid("task_token", "required"))
	}
	h.Secrets.AddTaskToken(in.TaskToken)
	out, err := h.Escalator.Escalate(ctx, in.SignalID, in.DecisionID, in.TaskToken)
	if err != nil {
		return review.EscalateResult{}, taskerr.From(err)
	}
	return out, nil
}
