// Package handler maps the fetch function's events to its service and back; the
// Lambda (functions/fetch) and the embedded runtime both call it.
package handler

import (
	"context"
	"fmt"

	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Fetcher runs observation jobs; *orient.Fetcher is one.
type Fetcher interface {
	// FetchBatch runs the jobs for a wave, one after the other, writes
	// their facts at once and returns how many. Errors: EINVALID, ETRANSIENT.
	FetchBatch(ctx context.Context, signalID string, jobs []orient.Job) (int, error)
}

// Input is one child execution of the "Fetch observations" Distributed Map:
// its ItemBatcher's batch, {"BatchInput": {"signal_id": ...}, "Items":
// [{"job": ...}, ...]}. A single job, {"signal_id": ..., "job": ...}, is
// accepted too.
type Input struct {
	SignalID   string      `json:"signal_id"`
	Job        *orient.Job `json:"job"`
	BatchInput *struct {
		SignalID string `json:"signal_id"`
	} `json:"BatchInput"`
	Items []struct {
		Job *orient.Job `json:"job"`
	} `json:"Items"`
}

// Output reports how many jobs ran and how many facts they yielded; JobID
// names the job of a single-job input.
type Output struct {
	JobID string `json:"job_id,omitempty"`
	Jobs  int    `json:"jobs"`
	Facts int    `json:"facts"`
}

// Handler answers the state machine's Fetch task.
type Handler struct {
	Fetcher Fetcher
}

// Handle runs the batch's jobs one after the other (so the Map's
// MaxConcurrency bounds the jobs in flight), or the single in.Job, for the
// wave of the signal, and writes their facts at once. A job that fails fails
// the batch (its error names the batch's jobs); running the batch again is harmless (facts are written once).
// Errors are taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (Output, error) {
	signalID, jobs := in.SignalID, []*orient.Job{in.Job}
	if in.BatchInput != nil || in.Items != nil {
		if in.BatchInput != nil {
			signalID = in.BatchInput.SignalID
		}
		jobs = jobs[:0]
		for _, it := range in.Items {
			jobs = append(jobs, it.Job)
		}
	}
	if signalID == "" {
		return Output{}, taskerr.From(ora.Invalid("signal_id", "required"))
	}
	batch := make([]orient.Job, len(jobs))
	for i, j := range jobs {
		if j == nil {
			return Output{}, taskerr.From(ora.Invalid(fmt.Sprintf("Items[%d].job", i), "required"))
		}
		batch[i] = *j
	}
	n, err := h.Fetcher.FetchBatch(ctx, signalID, batch)
	if err != nil {
		// The batch is the Map's failed item: its error names the batch's
		// jobs and families, for the operator's incident (operate.FailedJobsOf).
		named := make([]operate.FailedJob, len(batch))
		for i, j := range batch {
			named[i] = operate.FailedJob{ID: j.ID, Family: j.Family}
			if j.Family == "" {
				named[i].Family = orient.FamilyLedger
			}
		}
		return Output{}, taskerr.From(fmt.Errorf("fetch %s: %w", operate.FailedJobsNote(named), err))
	}
	out := Output{Jobs: len(batch), Facts: n}
	if in.Job != nil && len(jobs) == 1 {
		out.JobID = in.Job.ID
	}
	return out, nil
}
