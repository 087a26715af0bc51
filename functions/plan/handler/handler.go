// Package handler maps the plan function's events to its service and back; the
// Lambda (functions/plan) and the embedded runtime both call it.
package handler

import (
	"context"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Planner plans a wave's observation jobs; *orient.Planner is one.
type Planner interface {
	// Plan returns the jobs for a signal. Errors: EINVALID, ENOTFOUND, ETRANSIENT.
	Plan(ctx context.Context, signalID string) ([]orient.Job, error)
}

// Input is the Plan task's input; other fields of the execution state are ignored.
type Input struct {
	SignalID string `json:"signal_id"`
}

// Output is the Plan task's result, stored at $.plan.
type Output struct {
	Jobs []orient.Job `json:"jobs"`
}

// Handler answers the state machine's Plan task.
type Handler struct {
	Planner Planner
}

// Handle plans the wave of in.SignalID. Errors are taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (Output, error) {
	if in.SignalID == "" {
		return Output{}, taskerr.From(ora.Invalid("signal_id", "required"))
	}
	jobs, err := h.Planner.Plan(ctx, in.SignalID)
	if err != nil {
		return Output{}, taskerr.From(err)
	}
	return Output{Jobs: jobs}, nil
}
