// Command operate is the Lambda behind the operator's tasks: "Operate on
// failure" (any stage's caught failure: classified, filed as an incident,
// answered with retry, pause or fail), "Wait for resume" (records the paused
// wave's task token) and "Abandon paused wave" (shared/operate). On AWS the
// failed stage is inferred from the execution's state (operate.InferStage);
// resume is SendTaskSuccess on the recorded token.
//
// Environment: ORA_LEDGER_TABLE, ORA_AUTO_RESUME_TRANSIENT, ORA_RULES_FILE
// (optional: the base motor version's rules file, as the reason
// function's), ORA_APP_VERSION and the usual AWS configuration. Incidents
// and operator records carry the current motor version (read at most every
// motor.DefaultCacheTTL) and the app version.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/functions/operate/handler"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/motor"
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
	base, err := motor.BaseFromEnv(os.Getenv)
	if err != nil {
		log.Fatalf("operate: %v", err)
	}
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg))
	motors := motor.NewRegistry(ledger, base, nil, func(o *motor.Options) { o.CacheTTL = motor.DefaultCacheTTL })
	awslambda.Start("operate", handler.Handler{Operator: operate.New(ledger, func(o *operate.Options) {
		o.AutoResumeTransient = os.Getenv("ORA_AUTO_RESUME_TRANSIENT") != "false"
		o.AppVersion = os.Getenv(motor.EnvAppVersion)
		o.Motor = func(ctx context.Context) (operate.Motor, error) {
			b, prev, since, err := motors.Current(ctx)
			return motor.OperatorMotor(b, prev, since), err
		}
	}), Secrets: awslambda.Secrets}.Handle, func(o *telemetry.TaskOptions) {
		o.Classify = func(name string) string { return operate.Classify(operate.Facts{Error: name}).Classification }
	})
}
