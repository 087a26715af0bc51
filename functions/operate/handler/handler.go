// Package handler maps the operate function's events to its service and back; the
// Lambda (functions/operate) and the embedded runtime both call it.
package handler

import (
	"context"
	"encoding/json"

	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Operator handles caught failures and paused waves; *operate.Service is one.
type Operator interface {
	// Operate classifies and records a failure and says what follows.
	// Errors: EINVALID, ETRANSIENT.
	Operate(ctx context.Context, in operate.Input) (operate.Outcome, error)
	// Pause records a paused wave's task token. Errors: EINVALID, ENOTFOUND, ETRANSIENT.
	Pause(ctx context.Context, signalID, operatorDecisionID, token string) error
	// Abandon records the failed end of a wave nobody resumed. Errors: EINVALID, ETRANSIENT.
	Abandon(ctx context.Context, signalID string, wave json.RawMessage, f operate.Failure) (operate.Outcome, error)
}

// Input is one of the three events the state machine sends the operate
// function: a caught failure ("Operate on failure": the execution state at
// wave, the caught error at failure), a paused wave's token ("Wait for
// resume": task_token), or a wave nobody resumed ("Abandon paused wave":
// abandon true).
type Input struct {
	SignalID           string          `json:"signal_id"`
	DecisionID         string          `json:"decision_id"`
	Wave               json.RawMessage `json:"wave"`
	Failure            operate.Failure `json:"failure"`
	ExecutionID        string          `json:"execution_id"`
	EnteredAt          string          `json:"entered_at"`
	OperatorDecisionID string          `json:"operator_decision_id"`
	TaskToken          string          `json:"task_token"`
	Abandon            bool            `json:"abandon"`
}

// Handler answers the state machine's operate tasks.
type Handler struct {
	Operator Operator
	// Secrets receives the pause's task token (ora.Secrets.AddTaskToken), so
	// every writer but the ledger redacts it. Optional.
	Secrets *ora.Secrets
}

// Handle dispatches the event and returns the operator's outcome
// ({"action","error","cause",...}). Errors are taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (operate.Outcome, error) {
	if in.SignalID == "" {
		return operate.Outcome{}, taskerr.From(ora.Invalid("signal_id", "required"))
	}
	var (
		out operate.Outcome
		err error
	)
	switch {
	case in.TaskToken != "":
		h.Secrets.AddTaskToken(in.TaskToken)
		err = h.Operator.Pause(ctx, in.SignalID, in.OperatorDecisionID, in.TaskToken)
		out = operate.Outcome{Action: "pause", OperatorDecisionID: in.OperatorDecisionID}
	case in.Abandon:
		out, err = h.Operator.Abandon(ctx, in.SignalID, in.Wave, in.Failure)
	default:
		out, err = h.Operator.Operate(ctx, operate.Input{
			SignalID: in.SignalID, Wave: in.Wave, Failure: in.Failure,
			ExecutionID: in.ExecutionID, EnteredAt: in.EnteredAt, DecisionID: in.DecisionID,
		})
	}
	if err != nil {
		return operate.Outcome{}, taskerr.From(err)
	}
	return out, nil
}
