// Command fetch is the Lambda behind the state machine's "Fetch observations"
// Map: it runs one observation job against the ledger and writes its facts
// (shared/orient).
//
// Environment: ORA_LEDGER_TABLE (the ledger's DynamoDB table),
// ORA_OBJECTS_BUCKET (the bucket the objects source family reads; optional),
// ORA_TOKEN_BUDGET and ORA_OBSERVE_HTTP_ALLOW (orient.EnvOptions), and the
// usual AWS configuration (AWS_REGION, AWS_ENDPOINT_URL, ...).
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ora-runtime/ora/functions/fetch/handler"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/telemetry"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	table := os.Getenv("ORA_LEDGER_TABLE")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || err != nil {
		log.Fatalf("fetch: ORA_LEDGER_TABLE %q, AWS config: %v", table, err)
	}
	env, err := orient.EnvOptions(os.Getenv)
	if err != nil {
		log.Fatalf("fetch: %v", err)
	}
	opts := []func(*orient.Options){env, orient.ObjectsFromEnv(os.Getenv, s3.NewFromConfig(cfg))}
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg))
	awslambda.Start("fetch", handler.Handler{Fetcher: orient.NewFetcher(ledger, append(opts, func(o *orient.Options) {
		o.Metrics, o.Secrets = telemetry.WithPrefix(awslambda.Metrics), awslambda.Secrets
	})...)}.Handle)
}
