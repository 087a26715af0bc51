// Command observe-webhook is the Lambda behind API Gateway's POST
// /webhooks/{source} (HTTP API, payload format 2.0; or the REST API of the
// ora:api=rest profile, payload 1.0, through shared/apigw): it verifies a delivery,
// captures it as a signal and starts its wave (shared/observe).
//
// Environment: ORA_LEDGER_TABLE, ORA_STATE_MACHINE_ARN, ORA_SOURCES_SECRET_ARN
// (a Secrets Manager secret holding the sources as a JSON array of {name,
// type, secret, header, hash}, read again once a minute), and optionally ORA_ESCALATION_TIMEOUT_SECONDS
// and ORA_MAX_BODY_BYTES.
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/ora-runtime/ora/shared/apigw"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observerlambda"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	ctx, d := context.Background(), observerlambda.MustFromEnv("observe-webhook")
	secrets, secretArn := secretsmanager.NewFromConfig(d.AWS), os.Getenv("ORA_SOURCES_SECRET_ARN")
	intake := &refreshing{
		ttl: sourcesTTL, now: time.Now, log: slog.Default(),
		read: func(ctx context.Context) (string, error) {
			out, err := secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretArn)})
			if err != nil {
				return "", fmt.Errorf("read the sources secret ORA_SOURCES_SECRET_ARN: %w", err)
			}
			return aws.ToString(out.SecretString), nil
		},
		build: func(raw string) (webhooks, error) {
			sources, err := observe.ParseSources([]byte(raw))
			if err != nil {
				return nil, err
			}
			return d.Observer(sources)
		},
	}
	// Read once at start, so a broken secret shows in the first cold start's log.
	if _, err := intake.current(ctx); err != nil {
		log.Printf("observe-webhook: %v", err)
	}
	// Payload 2.0 from the HTTP API, 1.0 from the REST API profile (ora:api=rest).
	awslambda.Start("observe-webhook", apigw.Dispatch(Handler{Observer: intake}.Handle, nil))
}
