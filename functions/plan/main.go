// Command plan is the Lambda behind the state machine's Plan task: it turns a
// signal into the wave's observation jobs (shared/orient).
//
// Environment: ORA_LEDGER_TABLE (the ledger's DynamoDB table),
// ORA_JOBS_BUCKET (the bucket Plan writes each wave's jobs to, for the Fetch
// Map's ItemReader), ORA_OBJECTS_BUCKET (the bucket the objects source family
// reads; optional),
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
	table, jobs := os.Getenv("ORA_LEDGER_TABLE"), os.Getenv("ORA_JOBS_BUCKET")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || jobs == "" || err != nil {
		log.Fatalf("plan: ORA_LEDGER_TABLE %q, ORA_JOBS_BUCKET %q, AWS config: %v", table, jobs, err)
	}
	env, err := orient.EnvOptions(os.Getenv)
	if err != nil {
		log.Fatalf("plan: %v", err)
	}
	client := s3.NewFromConfig(cfg)
	opts := []func(*orient.Options){env, orient.ObjectsFromEnv(os.Getenv, client), func(o *orient.Options) { o.Jobs = orient.S3Jobs{Client: client, Bucket: jobs} }}
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg))
	awslambda.Start("plan", handler.Handler{Planner: orient.NewPlanner(ledger, append(opts, func(o *orient.Options) { o.Metrics = telemetry.WithPrefix(awslambda.Metrics) })...)}.Handle)
}
