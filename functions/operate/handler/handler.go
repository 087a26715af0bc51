// Package handler maps the operate function's events to its service and back; the
// Lambda (functions/operate) and the embedded runtime both call it.
package handler

import (
	"context"

	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Operator records failures; *operate.Service is one.
type Operator interface {
	// Operate records the failure of a wave. Errors: EINVALID, ETRANSIENT.
	Operate(ctx context.Context, signalID, decisionID string, f operate.Failure) (operate.Outcome, error)
}

// Input is the Operate task's input: the execution state with the caught
// error at $.failure; other fields are ignored.
type Input struct {
	SignalID   string          `json:"signal_id"`
	DecisionID string          `json:"decision_id"`
	Failure    operate.Failure `json:"failure"`
}

// Handler answers the state machine's Operate task.
type Handler struct {
	Operator Operator
}

// Handle records the failure and returns {"error","cause"} for the Fail
// state. Errors are taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (operate.Outcome, error) {
	if in.SignalID == "" {
		return operate.Outcome{}, taskerr.From(ora.Invalid("signal_id", "required"))
	}
	out, err := h.Operator.Operate(ctx, in.SignalID, in.DecisionID, in.Failure)
	if err != nil {
		return operate.Outcome{}, taskerr.From(err)
	}
	return out, nil
}
