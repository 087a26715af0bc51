package orient

import (
	"context"
	"log/slog"
	"time"
)

// Metrics receives the orientation metrics of seed 002 §14.1. It is the one
// interface the kernel emits through; an exporter (Prometheus locally, EMF in
// a Lambda) adapts it. Labels are name, value pairs with few values, never ids.
type Metrics interface {
	// Add adds delta to a counter.
	Add(name string, delta float64, labels ...string)
	// Observe records one sample of a gauge or histogram.
	Observe(name string, value float64, labels ...string)
}

// The eight orientation metrics of seed 002 §14.1.
const (
	MetricPacketTokensUsed   = "orientation_packet_tokens_used"    // Observe, per packet
	MetricBudgetOverflow     = "orientation_budget_overflow_total" // Add, a packet left facts out
	MetricFactDrops          = "orientation_fact_drop_total"       // Add, {reason}
	MetricObservationJobs    = "observation_jobs_total"            // Add, {source,status}
	MetricObservationLatency = "observation_job_latency_ms"        // Observe, per job
	MetricProposals          = "profile_proposal_total"            // Add, {status}
	MetricRollbacks          = "profile_rollback_total"            // Add, a horizon reverted
	MetricDecisionRegret     = "decision_regret_total"             // Add, a human rejected or reversed
)

type nopMetrics struct{}

func (nopMetrics) Add(string, float64, ...string)     {}
func (nopMetrics) Observe(string, float64, ...string) {}

// logFields are the ten structured log fields of seed 002 §14.2 (trace_id
// comes from the context, latency_ms from Start).
type logFields struct {
	WaveID, PacketID, ProfileID, Actor, Result, ErrorCode string
	ProfileVersion                                        int
	Start                                                 time.Time
}

type traceKey struct{}

// WithTraceID returns a context whose orientation log lines carry traceID.
func WithTraceID(ctx context.Context, traceID string) context.Context {
	return context.WithValue(ctx, traceKey{}, traceID)
}

// log writes one orientation log line with all ten fields of §14.2.
func (o Options) log(ctx context.Context, action string, f logFields) {
	trace, _ := ctx.Value(traceKey{}).(string)
	level := slog.LevelInfo
	if f.ErrorCode != "" {
		level = slog.LevelWarn
	}
	o.Logger.LogAttrs(ctx, level, "orientation "+action,
		slog.String("trace_id", trace),
		slog.String("wave_id", f.WaveID),
		slog.String("packet_id", f.PacketID),
		slog.String("profile_id", f.ProfileID),
		slog.Int("profile_version", f.ProfileVersion),
		slog.String("actor", f.Actor),
		slog.String("action", action),
		slog.String("result", f.Result),
		slog.Int64("latency_ms", time.Since(f.Start).Milliseconds()),
		slog.String("error_code", f.ErrorCode),
	)
}
