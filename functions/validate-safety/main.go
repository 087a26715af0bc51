// Command validate-safety is the Lambda behind the state machine's Validate (safety) branch: it
// checks that scope and boundaries held: every executed action was in allowed_operations and touched no forbidden path, and records a ValidatorResult attributed to the
// responsible author type (shared/validate).
//
// With ORA_GUARDRAIL_ID and ORA_GUARDRAIL_VERSION set, decisions of tier 2 and above also pass through
// that Bedrock guardrail (ApplyGuardrail on the action parameters and the signal text).
//
// The current motor version's validator settings (shared/motor, read at most every motor.DefaultCacheTTL)
// tune it: the guardrail on or off and from which tier, and forbidden paths on top of each decision's scope.
//
// Environment: ORA_LEDGER_TABLE, optionally ORA_GUARDRAIL_ID and ORA_GUARDRAIL_VERSION, ORA_RULES_FILE (the
// base motor version's rules file, as the reason function's), and the usual AWS configuration.
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
	"github.com/ora-runtime/ora/shared/motor"
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
	base, err := motor.BaseFromEnv(os.Getenv)
	if err != nil {
		log.Fatalf("validate-safety: %v", err)
	}
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg))
	motors := motor.NewRegistry(ledger, base, nil, func(o *motor.Options) { o.CacheTTL = motor.DefaultCacheTTL })
	svc := validate.New(ledger, func(o *validate.Options) {
		o.Motor = motors
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
