// Command compile is the Lambda behind the state machine's Compile task: it
// builds the wave's orientation packet from its facts and persists it
// (shared/orient).
//
// Environment: ORA_LEDGER_TABLE (the ledger's DynamoDB table), ORA_TOKEN_BUDGET
// (optional, default 150000) and the usual AWS configuration.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/functions/compile/handler"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/telemetry"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	table := os.Getenv("ORA_LEDGER_TABLE")
	budget, err := orient.EnvOptions(os.Getenv)
	if table == "" || err != nil {
		log.Fatalf("compile: ORA_LEDGER_TABLE %q: %v", table, err)
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if err != nil {
		log.Fatalf("compile: AWS config: %v", err)
	}
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg))
	awslambda.Start("compile", handler.Handler{Compiler: orient.NewCompiler(ledger, budget, func(o *orient.Options) { o.Metrics = telemetry.WithPrefix(awslambda.Metrics) })}.Handle)
}
