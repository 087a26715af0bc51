// Command plan is the Lambda behind the state machine's Plan task: it turns a
// signal into the wave's observation jobs (shared/orient).
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

	"github.com/ora-runtime/ora/functions/plan/handler"
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
		log.Fatalf("plan: ORA_LEDGER_TABLE %q, AWS config: %v", table, err)
	}
	env, err := orient.EnvOptions(os.Getenv)
	if err != nil {
		log.Fatalf("plan: %v", err)
	}
	opts := []func(*orient.Options){env}
	if bucket := os.Getenv("ORA_OBJECTS_BUCKET"); bucket != "" {
		opts = append(opts, orient.WithObjects(orient.S3{Client: s3.NewFromConfig(cfg), Bucket: bucket}))
	}
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.BodiesFromEnv(cfg))
	awslambda.Start("plan", handler.Handler{Planner: orient.NewPlanner(ledger, append(opts, func(o *orient.Options) { o.Metrics = telemetry.WithPrefix(awslambda.Metrics) })...)}.Handle)
}
