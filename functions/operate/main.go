// Command operate is the Lambda behind the Operate task, which catches any
// failure of Act or Validate: it classifies and records the failure, fails the
// decision, and hands the Fail state its error and cause (shared/operate).
//
// Environment: ORA_LEDGER_TABLE and the usual AWS configuration.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/functions/operate/handler"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/telemetry"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	table := os.Getenv("ORA_LEDGER_TABLE")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || err != nil {
		log.Fatalf("operate: ORA_LEDGER_TABLE %q, AWS config: %v", table, err)
	}
	awslambda.Start("operate", handler.Handler{Operator: operate.New(dynamo.New(dynamodb.NewFromConfig(cfg), table))}.Handle, func(o *telemetry.TaskOptions) {
		o.Classify = func(name string) string { class, _ := operate.Classify(name); return class }
	})
}
