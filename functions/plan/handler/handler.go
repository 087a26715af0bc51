// Package handler maps the plan function's events to its service and back; the
// Lambda (functions/plan) and the embedded runtime both call it.
package handler

import (
	"context"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Planner plans a wave's observation jobs and writes them where the Fetch
// Map reads them; *orient.Planner is one.
type Planner interface {
	// Stage plans the jobs for a signal, writes them to the job store and
	// says where they are. Errors: EINVALID, ENOTFOUND, ECONFLICT, ETRANSIENT.
	Stage(ctx context.Context, signalID string) (orient.Staged, error)
}

// Input is the Plan task's input; other fields of the execution state are ignored.
type Input struct {
	SignalID string `json:"signal_id"`
}

// Output is the Plan task's result, stored at $.plan: where the jobs are
// (the "Fetch observations" Map's ItemReader reads them), how many, the batch
// size and the tolerated failure percentage. The jobs stay out of the state.
type Output struct {
	orient.Staged
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
	st, err := h.Planner.Stage(ctx, in.SignalID)
	if err != nil {
		return Output{}, taskerr.From(err)
	}
	return Output{st}, nil
}
