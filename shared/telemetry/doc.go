// Package telemetry is what ora's functions and services call to log, count
// and time: a slog logger that writes one JSON object per line with the keys
// Powertools for AWS Lambda users know, correlation keys carried in the
// context, a small Metrics interface, and a task-handler wrapper that logs one
// line per stage outcome and records the stage's metrics.
//
// Adapters live in sub-packages named for what they write: emf (CloudWatch
// embedded metric format, for Lambdas) and prom (Prometheus text exposition,
// for `ora dev`'s GET /metrics). Services never import an adapter.
package telemetry
