// Command outbox-sweep is the Lambda an EventBridge rule invokes every few
// minutes: it starts the wave of every signal recorded in the ledger without
// one (the ledger's stream normally starts them through observe-table) and
// publishes how many it found as the EMF metric ora/WavelessSignals, on which
// an alarm fires (shared/observe's outbox). Each sweep also publishes the
// decisions waiting for a human (ora_escalations_pending and
// ora_escalation_oldest_age_seconds), which nothing else emits on AWS.
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
		log.Fatalf("outbox-sweep: ORA_LEDGER_TABLE %q, ORA_STATE_MACHINE_ARN %q, AWS config: %v", table, machine, err)
	}
	opts, errEnv := observe.EnvOptions(os.Getenv)
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.BodiesFromEnv(cfg))
	obs, err := observe.New(ledger, sfn.New(awssfn.NewFromConfig(cfg), machine), nil, opts)
	if errEnv != nil || err != nil {
		log.Fatalf("outbox-sweep: configuration: %v", errors.Join(errEnv, err))
	}
	awslambda.Start("outbox-sweep", Handler{Sweeper: obs, Metrics: os.Stdout, Approvals: ledger}.Handle)
}
