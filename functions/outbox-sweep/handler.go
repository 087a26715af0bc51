package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// The window a sweep reads: signals recorded between Lookback and Threshold
// ago. Younger signals are left to their capture and to the stream; a signal
// older than Threshold without a wave is what the alarm is about.
const (
	DefaultLookback  = 24 * time.Hour
	DefaultThreshold = 5 * time.Minute
)

// sweeper is the observer's outbox sweep.
type sweeper interface {
	StartMissing(ctx context.Context, from, to time.Time) (observe.Sweep, error)
}

// Handler sweeps the ledger for signals without a wave.
type Handler struct {
	Sweeper sweeper
	// Metrics receives one EMF line per sweep (the Lambda's stdout).
	Metrics io.Writer
	// Now, Lookback and Threshold default to time.Now, DefaultLookback and
	// DefaultThreshold.
	Now                 func() time.Time
	Lookback, Threshold time.Duration
	Logger              *slog.Logger // default slog.Default()
}

// Handle runs one sweep (the scheduled event's content is ignored) and
// publishes ora/WavelessSignals (waves it had to start) and
// ora/WavelessSignalsFailed (waves it could not start). A sweep that could
// not read the ledger, or left a wave unstarted, returns a TransientError,
// so the function's error alarm fires too; the next sweep tries again.
func (h Handler) Handle(ctx context.Context, _ json.RawMessage) (observe.Sweep, error) {
	now, lookback, threshold := time.Now, h.Lookback, h.Threshold
	if h.Now != nil {
		now = h.Now
	}
	if lookback <= 0 {
		lookback = DefaultLookback
	}
	if threshold <= 0 {
		threshold = DefaultThreshold
	}
	logger := h.Logger
	if logger == nil {
		logger = slog.Default()
	}
	t := now()
	sw, err := h.Sweeper.StartMissing(ctx, t.Add(-lookback), t.Add(-threshold))
	if err != nil {
		logger.ErrorContext(ctx, "outbox sweep failed", "error", err)
		return sw, taskerr.From(err)
	}
	if h.Metrics != nil {
		if err := emf(h.Metrics, t, len(sw.Started), len(sw.Failed)); err != nil {
			logger.ErrorContext(ctx, "outbox sweep: metrics not written", "error", err)
		}
	}
	logger.InfoContext(ctx, "outbox swept", "checked", sw.Checked, "started", len(sw.Started), "failed", len(sw.Failed))
	if len(sw.Failed) > 0 {
		return sw, taskerr.From(ora.Transient(fmt.Errorf("%d waves not started", len(sw.Failed)), "outbox sweep"))
	}
	return sw, nil
}

// emf writes one CloudWatch Embedded Metric Format line.
func emf(w io.Writer, at time.Time, started, failed int) error {
	line, err := json.Marshal(map[string]any{
		"_aws": map[string]any{
			"Timestamp": at.UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  "ora",
				"Dimensions": [][]string{{}},
				"Metrics": []any{
					map[string]string{"Name": "WavelessSignals", "Unit": "Count"},
					map[string]string{"Name": "WavelessSignalsFailed", "Unit": "Count"},
				},
			}},
		},
		"WavelessSignals":       started,
		"WavelessSignalsFailed": failed,
	})
	if err != nil {
		return err
	}
	_, err = w.Write(append(line, '\n'))
	return err
}
