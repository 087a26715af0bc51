package main

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// schedules is the observer's schedule intake.
type schedules interface {
	Schedule(ctx context.Context, raw []byte) (observe.Receipt, error)
}

// Handler receives EventBridge Scheduler firings (the schedule's input) and
// EventBridge "Scheduled Event"s.
type Handler struct {
	Observer schedules
	Logger   *slog.Logger // default slog.Default()
}

// Handle captures one firing and returns its receipt. A failure is returned
// as a taskerr type, so the asynchronous invocation is retried (and lands in
// the schedule's dead-letter queue when retries run out); a retried firing
// has the same dedup key and never starts a second wave.
func (h Handler) Handle(ctx context.Context, event json.RawMessage) (observe.Receipt, error) {
	rec, err := h.Observer.Schedule(ctx, event)
	if err != nil {
		logger := h.Logger
		if logger == nil {
			logger = slog.Default()
		}
		logger.ErrorContext(ctx, "schedule firing not captured", "error", err)
		return observe.Receipt{}, taskerr.From(err)
	}
	return rec, nil
}
