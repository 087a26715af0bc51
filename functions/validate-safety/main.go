// Command validate-safety is the Lambda behind the state machine's Validate (safety) branch: it
// checks that scope and boundaries held: every executed action was in allowed_operations and touched no forbidden path, and records a ValidatorResult attributed to the
// responsible author type (shared/validate).
//
// With ORA_GUARDRAIL_ID and ORA_GUARDRAIL_VERSION set, decisions of tier 2 and above also pass through
// that Bedrock guardrail (ApplyGuardrail on the action parameters and the signal text).
//
// Environment: ORA_LEDGER_TABLE, optionally ORA_GUARDRAIL_ID and ORA_GUARDRAIL_VERSION, and the usual AWS
// configuration.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
	"github.com/ora-runtime/ora/shared/validate"
)

func main() {
	table := os.Getenv("ORA_LEDGER_TABLE")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || err != nil {
		log.Fatalf("validate-safety: ORA_LEDGER_TABLE %q, AWS config: %v", table, err)
	}
	g, err := reason.GuardrailFromEnv(os.Getenv)
	if err != nil {
		log.Fatalf("validate-safety: %v", err)
	}
	svc := validate.New(dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.BodiesFromEnv(cfg)), func(o *validate.Options) {
		if g.Enabled() {
			guard, err := bedrock.NewGuard(bedrockruntime.NewFromConfig(cfg), g)
			if err != nil {
				log.Fatalf("validate-safety: %v", err)
			}
			o.Guardrail = guard
		}
	})
	awslambda.Start("validate-safety", validate.Handler{Runner: svc, Validator: ora.ValidatorSafety}.Handle)
}
