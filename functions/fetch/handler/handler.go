// Package handler maps the fetch function's events to its service and back; the
// Lambda (functions/fetch) and the embedded runtime both call it.
package handler

import (
	"context"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Fetcher runs one observation job; *orient.Fetcher is one.
type Fetcher interface {
	// Fetch runs job for a wave and returns how many facts it wrote. Errors:
	// EINVALID, ETRANSIENT.
	Fetch(ctx context.Context, signalID string, job orient.Job) (int, error)
}

// Input is one iteration of the "Fetch observations" Map: the signal and one
// of the jobs Plan produced.
type Input struct {
	SignalID string      `json:"signal_id"`
	Job      *orient.Job `json:"job"`
}

// Output reports how many facts the job yielded.
type Output struct {
	JobID string `json:"job_id"`
	Facts int    `json:"facts"`
}

// Handler answers the state machine's Fetch task.
type Handler struct {
	Fetcher Fetcher
}

// Handle runs in.Job for the wave of in.SignalID. Errors are taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (Output, error) {
	if in.SignalID == "" {
		return Output{}, taskerr.From(ora.Invalid("signal_id", "required"))
	}
	if in.Job == nil {
		return Output{}, taskerr.From(ora.Invalid("job", "required"))
	}
	n, err := h.Fetcher.Fetch(ctx, in.SignalID, *in.Job)
	if err != nil {
		return Output{}, taskerr.From(err)
	}
	return Output{JobID: in.Job.ID, Facts: n}, nil
}
