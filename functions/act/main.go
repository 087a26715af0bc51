// Command act is the Lambda behind the Act task (shared/act). Environment:
// ORA_LEDGER_TABLE, ORA_IDEMPOTENCY_TABLE, ORA_TOPIC_ARN, ORA_BUCKET,
// ORA_ACT_CONFIG (act.Config as JSON), ORA_SIGNING_SECRET_ARN (optional),
// ORA_CONNECTIONS (connect.Config as JSON, each naming its secret's ARN).
// ORA_FUNCTIONS (the functions function.invoke may run: name -> Lambda ARN).
// ORA_MCP_SERVERS (mcp.EnvServers, optional: the servers mcp.call may call).
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/ora-runtime/ora/functions/act/handler"
	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bodystore"
	"github.com/ora-runtime/ora/shared/connect"
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
	sm := secretsmanager.NewFromConfig(cfg)
	ac, err := act.ConfigFromEnv(ctx, os.Getenv, sm)
	conns, cerr := connect.FromEnv(os.Getenv)
	if err != nil || cerr != nil {
		log.Fatalf("act: %v %v", err, cerr)
	}
	// The registry every writer consults: the signing secret now, each
	// connection's secret and OAuth 2.0 token as they are read or minted.
	// (awslambda's: its logger, EMF dimensions and X-Ray annotations redact
	// them too).
	secrets := awslambda.Secrets
	secrets.Add("actions.http.signing_secret", ac.HTTP.SigningSecret)
	set, err := connect.New(conns, connect.NewSecretsManager(sm, connect.DefaultSecretTTL, secrets), func(o *connect.Options) { o.Secrets = secrets })
	if err != nil {
		log.Fatalf("act: %v", err)
	}
	db, s3c := dynamodb.NewFromConfig(cfg), s3.NewFromConfig(cfg)
	ledger := dynamo.New(db, ledgerTable, dynamo.MustFromEnv(cfg), func(o *dynamo.Options) { o.Secrets = secrets })
	objects := act.S3{Client: s3c, Bucket: ac.Object.Bucket}
	registry := act.Standard(ac, act.NewSNSNotify(sns.NewFromConfig(cfg), ac.Notify.TopicARN), objects, ledger, nil)
	registry.Register(act.TypeHTTPRequest, act.NewHTTPRequest(ac.HTTP, nil, set))
	funcs, err := act.FunctionsFromEnv(os.Getenv)
	if err == nil && len(funcs) > 0 {
		err = act.RegisterFunctions(registry, funcs, func(c map[string]act.FunctionConfig) (map[string]act.Function, error) {
			return act.LambdaFunctions(c, lambda.NewFromConfig(cfg), ac.HTTP.SigningSecret)
		}, bodystore.FromEnv(os.Getenv, s3c))
	}
	if err != nil {
		log.Fatalf("act: %v", err)
	}
	servers, err := mcp.ServersFromEnv(os.Getenv)
	if err != nil {
		log.Fatalf("act: %v", err)
	}
	if len(servers) > 0 {
		tools, err := mcp.New(servers, false, func(o *mcp.Options) { o.HTTPClient = set.ClientFor })
		if err != nil {
			log.Fatalf("act: %v", err)
		}
		registry.Register(act.TypeMCPCall, act.NewMCPCall(tools))
	}
	once := act.Idempotent(idempotency.New(dynamo.NewIdempotencyStore(db, idemTable), func(o *idempotency.Options) { o.KeyPrefix = "act" }))
	awslambda.Start("act", handler.Handler{Actor: act.New(ledger, registry, once, func(o *act.Options) { o.MaxParallel = ac.MaxParallel })}.Handle)
}
