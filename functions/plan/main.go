// Command plan is the Lambda behind the state machine's Plan task: it turns a
// signal into the wave's observation jobs (shared/orient).
//
// Environment: ORA_LEDGER_TABLE (the ledger's DynamoDB table) and the usual
// AWS configuration (AWS_REGION, AWS_ENDPOINT_URL, ...).
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/functions/plan/handler"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	table := os.Getenv("ORA_LEDGER_TABLE")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || err != nil {
		log.Fatalf("plan: ORA_LEDGER_TABLE %q, AWS config: %v", table, err)
	}
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table)
	awslambda.Start("plan", handler.Handler{Planner: orient.NewPlanner(ledger)}.Handle)
}
