// Package handler maps the flag-review function's events to its service and back; the
// Lambda (functions/flag-review) and the embedded runtime both call it.
package handler

import (
	"context"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/review"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Reviewer flags decisions for review; *review.Service is one.
type Reviewer interface {
	// FlagReview writes the review-requested entry. Errors: EINVALID,
	// ENOTFOUND, ETRANSIENT.
	FlagReview(ctx context.Context, signalID, decisionID string) (review.FlagResult, error)
}

// Input is the FlagReview task's input; other fields are ignored.
type Input struct {
	SignalID   string `json:"signal_id"`
	DecisionID string `json:"decision_id"`
}

// Handler answers the state machine's FlagReview task.
type Handler struct {
	Reviewer Reviewer
}

// Handle flags in.DecisionID and returns {"review":"requested"}. Errors are
// taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (review.FlagResult, error) {
	if in.SignalID == "" {
		return review.FlagResult{}, taskerr.From(ora.Invalid("signal_id", "required"))
	}
	if in.DecisionID == "" {
		return review.FlagResult{}, taskerr.From(ora.Invalid("decision_id", "required"))
	}
	out, err := h.Reviewer.FlagReview(ctx, in.SignalID, in.DecisionID)
	if err != nil {
		return review.FlagResult{}, taskerr.From(err)
	}
	return out, nil
}
