package main

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// tableChanges is the observer's DynamoDB Streams intake.
type tableChanges interface {
	TableChanges(ctx context.Context, event []byte) ([]observe.Outcome, error)
}

// Handler receives DynamoDB Streams batches of the ledger table.
type Handler struct {
	Observer tableChanges
	Logger   *slog.Logger // default slog.Default()
}

// Handle captures the commitment records of a batch; records of other items
// are skipped, malformed ones logged and dropped (retrying cannot fix them).
// Records that failed otherwise are reported as batch item failures (their
// SequenceNumber; the event source mapping needs ReportBatchItemFailures), so
// Lambda retries from the first of them; records captured before answer as
// duplicates on the retry.
func (h Handler) Handle(ctx context.Context, event json.RawMessage) (events.DynamoDBEventResponse, error) {
	logger := h.Logger
	if logger == nil {
		logger = slog.Default()
	}
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	outcomes, err := h.Observer.TableChanges(ctx, event)
	if err != nil {
		logger.ErrorContext(ctx, "not a DynamoDB Streams event", "error", err)
		return resp, taskerr.From(err)
	}
	for _, o := range outcomes {
		switch {
		case o.Err == nil:
		case ora.ErrorCode(o.Err) == ora.EINVALID:
			logger.ErrorContext(ctx, "stream record dropped", "sequence_number", o.Ref, "error", o.Err)
		default:
			logger.ErrorContext(ctx, "stream record not captured", "sequence_number", o.Ref, "error", o.Err)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: o.Ref})
		}
	}
	return resp, nil
}
