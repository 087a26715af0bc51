// Command validate-intent is the Lambda behind the state machine's Validate (intent) branch: it
// checks that the outcome matches the decision's stated intent: the executed actions and parameters equal the plan, and records a ValidatorResult attributed to the
// responsible author type (shared/validate).
//
// With ORA_REASONER=bedrock, tier-3 decisions are also judged by the model (ORA_BEDROCK_MODEL_IDS,
// ORA_BEDROCK_CONFIG, ORA_GUARDRAIL_ID/VERSION as for the reason function): does the evidence fulfil the
// decision's stated intent? The current motor version's validator settings (shared/motor, read at most
// every motor.DefaultCacheTTL) can turn that judgement off.
//
// Environment: ORA_LEDGER_TABLE, ORA_REASONER, ORA_RULES_FILE (the base motor version's rules file, as the
// reason function's) and the usual AWS configuration.
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
		log.Fatalf("validate-intent: ORA_LEDGER_TABLE %q, AWS config: %v", table, err)
	}
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg))
	var judge *reason.IntentJudge
	if os.Getenv("ORA_REASONER") == "bedrock" {
		bc, err := reason.ConfigFromEnv(os.Getenv)
		if err == nil {
			// The judge's model calls count in the reason function's daily spend meter.
			judge, err = reason.NewIntentJudge(bedrock.New(bedrockruntime.NewFromConfig(cfg)), bc,
				func(o *reason.IntentOptions) { o.Spend = ledger.Spend() })
		}
		if err != nil {
			log.Fatalf("validate-intent: bedrock: %v", err)
		}
	}
	base, err := motor.BaseFromEnv(os.Getenv)
	if err != nil {
		log.Fatalf("validate-intent: %v", err)
	}
	motors := motor.NewRegistry(ledger, base, nil, func(o *motor.Options) { o.CacheTTL = motor.DefaultCacheTTL })
	svc := validate.New(ledger, func(o *validate.Options) {
		o.Motor = motors
		if judge != nil {
			o.IntentJudge = judge
		}
	})
	awslambda.Start("validate-intent", validate.Handler{Runner: svc, Validator: ora.ValidatorIntent}.Handle)
}
