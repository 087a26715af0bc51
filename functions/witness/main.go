// Command witness is the Lambda behind the state machine's Validate (witness) branch: it
// checks that re-normalizing the stored raw signal reproduces the recorded signal, and records a ValidatorResult attributed to the
// responsible author type (shared/validate).
//
// Environment: ORA_LEDGER_TABLE and the usual AWS configuration.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
	"github.com/ora-runtime/ora/shared/validate"
)

func main() {
	table := os.Getenv("ORA_LEDGER_TABLE")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || err != nil {
		log.Fatalf("witness: ORA_LEDGER_TABLE %q, AWS config: %v", table, err)
	}
	awslambda.Start("witness", handler(dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg))).Handle)
}

// handler is the witness over ledger: it normalizes a stored signal's raw
// input (in the redacted form the observer stored it in, when it held
// secrets) as the observers do.
func handler(ledger validate.Ledger) validate.Handler {
	renormalize := func(s ora.NormalizedSignal) (ora.NormalizedSignal, error) {
		return observe.Normalize(s.Source.Type, s.Raw)
	}
	svc := validate.New(ledger, func(o *validate.Options) { o.Renormalize = renormalize })
	return validate.Handler{Runner: svc, Validator: ora.ValidatorWitness}
}
