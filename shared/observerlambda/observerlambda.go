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
	// Starter starts waves on the state machine ORA_STATE_MACHINE_ARN.
	Starter *sfn.Client
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
		AWS:     cfg,
		Ledger:  dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg)),
		Starter: sfn.New(awssfn.NewFromConfig(cfg), machine),
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
// change) and starts the one wave; the others attach to it.
func (d Deps) Observer(sources []observe.SourceConfig, more ...func(*observe.Options)) (*observe.Observer, error) {
	return observe.New(d.Ledger, d.Starter, sources, append([]func(*observe.Options){d.Options, d.coalescer}, more...)...)
}

func (d Deps) coalescer(o *observe.Options) {
	if d.Ledger != nil {
		o.Coalescer = d.Ledger
	}
}
