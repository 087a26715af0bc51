package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ora-runtime/ora/shared/console"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
	"github.com/ora-runtime/ora/shared/telemetry"
	emfmetrics "github.com/ora-runtime/ora/shared/telemetry/emf"
)

// The window a sweep reads: signals recorded since the last sweep that
// started every wave it found (its position, kept in the ledger), at most
// Lookback ago, and up to Threshold ago. Younger signals are left to their
// capture and to the stream; a signal older than Threshold without a wave is
// what the alarm is about.
const (
	DefaultLookback  = 24 * time.Hour
	DefaultThreshold = 5 * time.Minute
)

// sweeper is the observer's outbox sweep; *observe.OutboxSweeper is one.
type sweeper interface {
	Sweep(ctx context.Context, now time.Time) (observe.Sweep, error)
}

// Handler sweeps the ledger for signals without a wave.
type Handler struct {
	Sweeper sweeper
	// Metrics receives one EMF line per sweep (the Lambda's stdout).
	Metrics io.Writer
	// Approvals, when set, is read on every sweep for the decisions waiting
	// for a human, and the gauges ora_escalations_pending and
	// ora_escalation_oldest_age_seconds go to Metrics as EMF lines: on AWS
	// nothing else emits them (ora dev reads them at scrape time).
	Approvals console.Ledger
	// Now defaults to time.Now.
	Now    func() time.Time
	Logger *slog.Logger // default slog.Default()
}

// Handle runs one sweep (the scheduled event's content is ignored) and
// publishes ora/WavelessSignals (waves it had to start) and
// ora/WavelessSignalsFailed (waves it could not start). A sweep that could
// not read the ledger, or left a wave unstarted, returns a TransientError,
// so the function's error alarm fires too; the next sweep tries again.
func (h Handler) Handle(ctx context.Context, _ json.RawMessage) (observe.Sweep, error) {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	logger := h.Logger
	if logger == nil {
		logger = slog.Default()
	}
	t := now()
	sw, err := h.Sweeper.Sweep(ctx, t)
	if err != nil {
		logger.ErrorContext(ctx, "outbox sweep failed", "error", err)
		return sw, taskerr.From(err)
	}
	if h.Metrics != nil {
		if err := emf(h.Metrics, t, len(sw.Started), len(sw.Failed)); err != nil {
			logger.ErrorContext(ctx, "outbox sweep: metrics not written", "error", err)
		}
	}
	if h.Approvals != nil && h.Metrics != nil {
		// A failed read leaves the gauges unwritten (the dashboard shows a
		// gap); the sweep itself succeeded, so it is not an error of the sweep.
		if p, err := console.Pending(ctx, h.Approvals, t); err != nil {
			logger.ErrorContext(ctx, "outbox sweep: pending approvals not read", "error", err)
		} else {
			oldest := 0.0
			if len(p) > 0 {
				oldest = t.Sub(p[0].Since).Seconds()
			}
			g := emfmetrics.New(h.Metrics)
			g.Set(telemetry.EscalationsPending, float64(len(p)))
			g.Set(telemetry.EscalationOldestAge, oldest)
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
