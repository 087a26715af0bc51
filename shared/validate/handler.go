package validate

import (
	"context"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Runner runs a validator and records its result; *Service is one.
type Runner interface {
	// Validate runs v on a decision. Errors: *taskerr.ValidationFailed after a
	// FAIL is recorded, EINVALID, ENOTFOUND, ETRANSIENT.
	Validate(ctx context.Context, v ora.Validator, signalID, decisionID string) (ora.ValidatorResult, error)
}

// Input is a validator task's input; other fields of the state are ignored.
type Input struct {
	SignalID   string `json:"signal_id"`
	DecisionID string `json:"decision_id"`
}

// Handler is the task handler of the four validator functions
// (validate-technical, validate-safety, validate-intent, witness): each
// Lambda, and the embedded runtime, runs it with its own Validator.
type Handler struct {
	Runner    Runner
	Validator ora.Validator
}

// Handle runs the validator and returns the ValidatorResult it recorded. A
// FAIL comes back as a *taskerr.ValidationFailed. Errors are taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (ora.ValidatorResult, error) {
	if in.SignalID == "" {
		return ora.ValidatorResult{}, taskerr.From(ora.Invalid("signal_id", "required"))
	}
	if in.DecisionID == "" {
		return ora.ValidatorResult{}, taskerr.From(ora.Invalid("decision_id", "required"))
	}
	r, err := h.Runner.Validate(ctx, h.Validator, in.SignalID, in.DecisionID)
	if err != nil {
		return ora.ValidatorResult{}, taskerr.From(err)
	}
	return r, nil
}
