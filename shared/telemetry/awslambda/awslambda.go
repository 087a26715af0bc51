// Package awslambda wires telemetry for a function running on AWS Lambda:
// JSON logs to stdout at the level Lambda's LoggingConfig sets, EMF metrics to
// stdout, X-Ray subsegments for each stage and each AWS SDK call (Instrument),
// and Start, which runs a task handler through telemetry.Task.
//
// Importing it makes its logger slog's default, so services that log through
// slog.Default() write the same JSON lines.
package awslambda

import (
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/telemetry"
	"github.com/ora-runtime/ora/shared/telemetry/emf"
)

// Service is the service key of every line (Powertools' POWERTOOLS_SERVICE_NAME
// overrides it).
const Service = "ora"

// Secrets is the function's registry of sensitive values: its main adds
// what it reads (connection secrets, signing keys) and its handlers the task
// tokens they receive. Log, Metrics' dimensions and Trace's annotations and
// errors redact them.
var Secrets = ora.NewSecrets()

// Log is the function's logger; Metrics its EMF writer.
var (
	Log = telemetry.NewLogger(os.Stdout, service(os.Getenv), func(o *telemetry.LogOptions) {
		o.Level, o.Registry = Level(os.Getenv), Secrets
	})
	Metrics telemetry.Metrics = emf.New(os.Stdout, func(o *emf.Options) { o.Secrets = Secrets })
)

func init() { slog.SetDefault(Log) }

func service(getenv func(string) string) string {
	if s := getenv("POWERTOOLS_SERVICE_NAME"); s != "" {
		return s
	}
	return Service
}

// Level is the log level Lambda passes in AWS_LAMBDA_LOG_LEVEL (set by the
// function's LoggingConfig ApplicationLogLevel), else ORA_LOG_LEVEL, else INFO.
// TRACE maps to DEBUG and FATAL to ERROR.
func Level(getenv func(string) string) slog.Level {
	v := getenv("AWS_LAMBDA_LOG_LEVEL")
	if v == "" {
		v = getenv("ORA_LOG_LEVEL")
	}
	switch strings.ToUpper(v) {
	case "TRACE", "DEBUG":
		return slog.LevelDebug
	case "WARN":
		return slog.LevelWarn
	case "ERROR", "FATAL":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// Start runs fn (any handler lambda.Start accepts) as the function of stage,
// wrapped by telemetry.Task with Log, Metrics and an X-Ray subsegment per
// call (Trace). It does not return.
func Start(stage string, fn any, opts ...func(*telemetry.TaskOptions)) {
	opts = append([]func(*telemetry.TaskOptions){func(o *telemetry.TaskOptions) { o.Trace = Trace }}, opts...)
	lambda.Start(telemetry.Task(stage, fn, Log, Metrics, opts...))
}
