// Package observerlambda wires an observer Lambda (observe-object,
// observe-schedule, observe-table, observe-webhook, outbox-sweep): it reads
// the environment every observer shares, builds the AWS clients once, and
// builds the observer over the ledger and the wave starter, so each
// function's main only adds what is its own.
package observerlambda

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sfn"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

// Deps is what every observer Lambda is built from.
type Deps struct {
	// AWS is the SDK configuration, instrumented for X-Ray.
	AWS aws.Config
	// Ledger is the ledger table (ORA_LEDGER_TABLE), bodies in the bucket
	// ORA_BODY_BUCKET names.
	Ledger *dynamo.Ledger
	// Starter starts waves on the state machine ORA_STATE_MACHINE_ARN
	// (an *sfn.Client).
	Starter observe.WaveStarter
	// Secrets is the function's registry of sensitive values
	// (awslambda.Secrets): the ledger redacts what it writes with it, and
	// Observer registers the webhook sources' secrets in it, so a delivery
	// carrying one is captured redacted.
	Secrets *ora.Secrets
	// Options are the observer's options from the environment
	// (observe.EnvOptions).
	Options func(*observe.Options)
}

// FromEnv builds the dependencies from getenv; the error names every missing
// or malformed setting, prefixed with the function's name.
func FromEnv(ctx context.Context, name string, getenv func(string) string) (Deps, error) {
	table, machine := getenv("ORA_LEDGER_TABLE"), getenv("ORA_STATE_MACHINE_ARN")
	var errs []error
	if table == "" {
		errs = append(errs, errors.New("ORA_LEDGER_TABLE is not set"))
	}
	if machine == "" {
		errs = append(errs, errors.New("ORA_STATE_MACHINE_ARN is not set"))
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		errs = append(errs, fmt.Errorf("AWS config: %w", err))
	}
	opts, err := observe.EnvOptions(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return Deps{}, fmt.Errorf("%s: configuration: %w", name, errors.Join(errs...))
	}
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	return Deps{
		AWS: cfg,
		Ledger: dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg), func(o *dynamo.Options) {
			o.Secrets = awslambda.Secrets
		}),
		Starter: sfn.New(awssfn.NewFromConfig(cfg), machine),
		Secrets: awslambda.Secrets,
		Options: opts,
	}, nil
}

// MustFromEnv is FromEnv on the process's environment; it exits the process
// with the error when the function cannot start (only mains call it).
func MustFromEnv(name string) Deps {
	d, err := FromEnv(context.Background(), name, os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return d
}

// Observer builds the observer over the ledger and the starter, with the
// given webhook sources (none outside observe-webhook) and options beyond
// the environment's. The ledger table claims the coalescing windows (on when
// ORA_COALESCE_WINDOW_MS is set): the first signal of an entity's window
// wins a conditional write, waits out the window in its own invocation (at
// most the window: far inside the Lambda's timeout, and no state machine
// change) and starts the one wave; the others attach to it. The sources'
// secrets join d.Secrets (named "source:<name>", as ora dev names them), and
// the observer captures with it: a delivery whose body or headers carry a
// registered value is stored redacted (observe.Options.Secrets).
func (d Deps) Observer(sources []observe.SourceConfig, more ...func(*observe.Options)) (*observe.Observer, error) {
	for _, s := range sources {
		d.Secrets.Add("source:"+s.Name, s.Secret)
	}
	secrets := func(o *observe.Options) { o.Secrets = d.Secrets }
	return observe.New(d.Ledger, d.Starter, sources, append([]func(*observe.Options){d.Options, d.coalescer, secrets}, more...)...)
}

func (d Deps) coalescer(o *observe.Options) {
	if d.Ledger != nil {
		o.Coalescer = d.Ledger
	}
}
