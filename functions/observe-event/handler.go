package main

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// events is the observer's EventBridge intake.
type events interface {
	Event(ctx context.Context, raw []byte) (observe.Receipt, error)
}

// Handler receives EventBridge events, as a rule delivers them.
type Handler struct {
	Observer events
	Logger   *slog.Logger // default slog.Default()
}

// Result is the signal of an event, or Rejected when the event is malformed
// (retrying cannot fix it).
type Result struct {
	observe.Receipt
	Rejected bool `json:"rejected,omitempty"`
}

// Handle captures one event. A malformed event is logged and rejected; any
// other failure is returned as a taskerr type, so the asynchronous invocation
// is retried and, when retries run out, lands in the dead-letter queue; a
// retried event has the same id and never starts a second wave.
func (h Handler) Handle(ctx context.Context, event json.RawMessage) (Result, error) {
	logger := h.Logger
	if logger == nil {
		logger = slog.Default()
	}
	rec, err := h.Observer.Event(ctx, event)
	switch {
	case err == nil:
		return Result{Receipt: rec}, nil
	case ora.ErrorCode(err) == ora.EINVALID:
		logger.ErrorContext(ctx, "event rejected", "error", err)
		return Result{Rejected: true}, nil
	}
	logger.ErrorContext(ctx, "event not captured", "error", err)
	return Result{}, taskerr.From(err)
}
