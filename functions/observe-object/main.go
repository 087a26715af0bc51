// Command observe-object is the Lambda S3 invokes with ObjectCreated and
// ObjectRemoved notifications: it captures each record as a signal and starts
// its wave (shared/observe).
//
// Environment: ORA_LEDGER_TABLE, ORA_STATE_MACHINE_ARN, and optionally
// ORA_ESCALATION_TIMEOUT_SECONDS.
package main

import (
	"context"
	"errors"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/sfn"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	table, machine := os.Getenv("ORA_LEDGER_TABLE"), os.Getenv("ORA_STATE_MACHINE_ARN")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || machine == "" || err != nil {
		log.Fatalf("observe-object: ORA_LEDGER_TABLE %q, ORA_STATE_MACHINE_ARN %q, AWS config: %v", table, machine, err)
	}
	opts, errEnv := observe.EnvOptions(os.Getenv)
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.BodiesFromEnv(cfg))
	obs, err := observe.New(ledger, sfn.New(awssfn.NewFromConfig(cfg), machine), nil, opts)
	if errEnv != nil || err != nil {
		log.Fatalf("observe-object: configuration: %v", errors.Join(errEnv, err))
	}
	awslambda.Start("observe-object", Handler{Observer: obs}.Handle)
}
