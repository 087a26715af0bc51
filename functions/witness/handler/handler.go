// Package handler maps the witness function's events to its service and back; the
// Lambda (functions/witness) and the embedded runtime both call it.
package handler

import (
	"context"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// validator is the validator this function runs.
const validator = ora.ValidatorWitness

// Validator runs a validator and records its result; *validate.Service is one.
type Validator interface {
	// Validate runs v on a decision. Errors: *taskerr.ValidationFailed after a
	// FAIL is recorded, EINVALID, ENOTFOUND, ETRANSIENT.
	Validate(ctx context.Context, v ora.Validator, signalID, decisionID string) (ora.ValidatorResult, error)
}

// Input is the task's input; other fields are ignored.
type Input struct {
	SignalID   string `json:"signal_id"`
	DecisionID string `json:"decision_id"`
}

// Handler answers the state machine's witness validation.
type Handler struct {
	Validator Validator
}

// Handle runs the witness validator and returns the ValidatorResult it
// recorded. A FAIL comes back as a *taskerr.ValidationFailed. Errors are
// taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (ora.ValidatorResult, error) {
	if in.SignalID == "" {
		return ora.ValidatorResult{}, taskerr.From(ora.Invalid("signal_id", "required"))
	}
	if in.DecisionID == "" {
		return ora.ValidatorResult{}, taskerr.From(ora.Invalid("decision_id", "required"))
	}
	r, err := h.Validator.Validate(ctx, validator, in.SignalID, in.DecisionID)
	if err != nil {
		return ora.ValidatorResult{}, taskerr.From(err)
	}
	return r, nil
}
