// Command validate-intent is the Lambda behind the state machine's Validate (intent) branch: it
// checks that the outcome matches the decision's stated intent: the executed actions and parameters equal the plan, and records a ValidatorResult attributed to the
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
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
	"github.com/ora-runtime/ora/shared/validate"
)

func main() {
	table := os.Getenv("ORA_LEDGER_TABLE")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || err != nil {
		log.Fatalf("validate-intent: ORA_LEDGER_TABLE %q, AWS config: %v", table, err)
	}
	svc := validate.New(dynamo.New(dynamodb.NewFromConfig(cfg), table))
	awslambda.Start("validate-intent", validate.Handler{Runner: svc, Validator: ora.ValidatorIntent}.Handle)
}
