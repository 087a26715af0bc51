// Command act is the Lambda behind the Act task (shared/act). Environment:
// ORA_LEDGER_TABLE, ORA_IDEMPOTENCY_TABLE, ORA_TOPIC_ARN, ORA_BUCKET,
// ORA_ACT_CONFIG (act.Config as JSON), ORA_SIGNING_SECRET_ARN (optional),
// ORA_MCP_SERVERS (mcp.EnvServers, optional: the servers mcp.call may call).
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/ora-runtime/ora/functions/act/handler"
	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/idempotency"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	ctx := context.Background()
	ledgerTable, idemTable := os.Getenv("ORA_LEDGER_TABLE"), os.Getenv("ORA_IDEMPOTENCY_TABLE")
	cfg, err := config.LoadDefaultConfig(ctx)
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if ledgerTable == "" || idemTable == "" || err != nil {
		log.Fatalf("act: ORA_LEDGER_TABLE %q, ORA_IDEMPOTENCY_TABLE %q, AWS config: %v", ledgerTable, idemTable, err)
	}
	ac, err := act.ConfigFromEnv(ctx, os.Getenv, secretsmanager.NewFromConfig(cfg))
	if err != nil {
		log.Fatalf("act: %v", err)
	}
	db := dynamodb.NewFromConfig(cfg)
	ledger, objects := dynamo.New(db, ledgerTable, dynamo.BodiesFromEnv(cfg)), act.S3{Client: s3.NewFromConfig(cfg), Bucket: ac.Object.Bucket}
	registry := act.Standard(ac, act.NewSNSNotify(sns.NewFromConfig(cfg), ac.Notify.TopicARN), objects, ledger, nil)
	servers, err := mcp.ServersFromEnv(os.Getenv)
	if err != nil {
		log.Fatalf("act: %v", err)
	}
	if len(servers) > 0 {
		tools, err := mcp.New(servers, false)
		if err != nil {
			log.Fatalf("act: %v", err)
		}
		registry.Register(act.TypeMCPCall, act.NewMCPCall(tools))
	}
	once := act.Idempotent(idempotency.New(dynamo.NewIdempotencyStore(db, idemTable), func(o *idempotency.Options) { o.KeyPrefix = "act" }))
	awslambda.Start("act", handler.Handler{Actor: act.New(ledger, registry, once)}.Handle)
}
