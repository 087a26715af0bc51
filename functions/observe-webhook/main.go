// Command observe-webhook is the Lambda behind API Gateway's POST
// /webhooks/{source} (HTTP API, payload format 2.0): it verifies a delivery,
// captures it as a signal and starts its wave (shared/observe).
//
// Environment: ORA_LEDGER_TABLE, ORA_STATE_MACHINE_ARN, ORA_SOURCES_SECRET_ARN
// (a Secrets Manager secret holding the sources as a JSON array of {name,
// type, secret, header, hash}), and optionally ORA_ESCALATION_TIMEOUT_SECONDS
// and ORA_MAX_BODY_BYTES.
package main

import (
	"context"
	"errors"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/sfn"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	ctx, table, machine := context.Background(), os.Getenv("ORA_LEDGER_TABLE"), os.Getenv("ORA_STATE_MACHINE_ARN")
	cfg, err := config.LoadDefaultConfig(ctx)
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || machine == "" || err != nil {
		log.Fatalf("observe-webhook: ORA_LEDGER_TABLE %q, ORA_STATE_MACHINE_ARN %q, AWS config: %v", table, machine, err)
	}
	secret, err := secretsmanager.NewFromConfig(cfg).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(os.Getenv("ORA_SOURCES_SECRET_ARN"))})
	if err != nil {
		log.Fatalf("observe-webhook: read the sources secret ORA_SOURCES_SECRET_ARN: %v", err)
	}
	sources, errSources := observe.ParseSources([]byte(aws.ToString(secret.SecretString)))
	opts, errEnv := observe.EnvOptions(os.Getenv)
	obs, err := observe.New(dynamo.New(dynamodb.NewFromConfig(cfg), table), sfn.New(awssfn.NewFromConfig(cfg), machine), sources, opts)
	if errSources != nil || errEnv != nil || err != nil {
		log.Fatalf("observe-webhook: configuration: %v", errors.Join(errSources, errEnv, err))
	}
	awslambda.Start("observe-webhook", Handler{Observer: obs}.Handle)
}
