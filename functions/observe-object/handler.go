package main

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// objects is the observer's S3 notification intake.
type objects interface {
	Objects(ctx context.Context, event []byte) ([]observe.Outcome, error)
}

// Handler receives S3 event notifications (ObjectCreated:*, ObjectRemoved:*).
type Handler struct {
	Observer objects
	Logger   *slog.Logger // default slog.Default()
}

// Result lists the signals of a notification's records, and the records
// rejected as malformed (bucket/key), which retrying cannot fix.
type Result struct {
	Signals  []observe.Receipt `json:"signals"`
	Rejected []string          `json:"rejected,omitempty"`
}

// Handle captures every record. Malformed records are logged and rejected;
// any other failure fails the invocation (as a taskerr type) so that the
// asynchronous invocation is retried: records already captured then answer as
// duplicates and start no second wave.
func (h Handler) Handle(ctx context.Context, event json.RawMessage) (Result, error) {
	logger := h.Logger
	if logger == nil {
		logger = slog.Default()
	}
	outcomes, err := h.Observer.Objects(ctx, event)
	if err != nil {
		logger.ErrorContext(ctx, "not an S3 notification", "error", err)
		return Result{}, taskerr.From(err)
	}
	res := Result{Signals: []observe.Receipt{}}
	var failed []error
	for _, o := range outcomes {
		switch {
		case o.Err == nil:
			res.Signals = append(res.Signals, o.Receipt)
		case ora.ErrorCode(o.Err) == ora.EINVALID:
			logger.ErrorContext(ctx, "S3 record rejected", "object", o.Ref, "error", o.Err)
			res.Rejected = append(res.Rejected, o.Ref)
		default:
			logger.ErrorContext(ctx, "S3 record not captured", "object", o.Ref, "error", o.Err)
			failed = append(failed, o.Err)
		}
	}
	if len(failed) > 0 {
		return Result{}, taskerr.From(failed[0])
	}
	return res, nil
}
