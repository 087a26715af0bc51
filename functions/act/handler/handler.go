// Package handler maps the act function's events to its service and back; the
// Lambda (functions/act) and the embedded runtime both call it.
package handler

import (
	"context"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Actor runs decisions; *act.Service is one.
type Actor interface {
	// Act runs a decision. Errors: *taskerr.ProvenanceError, ScopeViolation,
	// ActionFailed, EINVALID, ETRANSIENT.
	Act(ctx context.Context, signalID, decisionID string) (act.Result, error)
}

// Input is the Act task's input; other fields are ignored.
type Input struct {
	SignalID   string `json:"signal_id"`
	DecisionID string `json:"decision_id"`
}

// Handler answers the state machine's Act task.
type Handler struct {
	Actor Actor
}

// Handle runs in.DecisionID and returns {"outcome","evidence"}. Errors are
// taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (act.Result, error) {
	if in.SignalID == "" {
		return act.Result{}, taskerr.From(ora.Invalid("signal_id", "required"))
	}
	if in.DecisionID == "" {
		return act.Result{}, taskerr.From(ora.Invalid("decision_id", "required"))
	}
	res, err := h.Actor.Act(ctx, in.SignalID, in.DecisionID)
	if err != nil {
		return act.Result{}, taskerr.From(err)
	}
	return res, nil
}
