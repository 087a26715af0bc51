// Command validate-intent is the Lambda behind the state machine's Validate (intent) branch: it
// checks that the outcome matches the decision's stated intent: the executed actions and parameters equal the plan, and records a ValidatorResult attributed to the
// responsible author type (shared/validate).
//
// With ORA_REASONER=bedrock, tier-3 decisions are also judged by the model (ORA_BEDROCK_MODEL_IDS,
// ORA_BEDROCK_CONFIG, ORA_GUARDRAIL_ID/VERSION as for the reason function): does the evidence fulfil the
// decision's stated intent?
//
// Environment: ORA_LEDGER_TABLE, ORA_REASONER and the usual AWS configuration.
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
		log.Fatalf("validate-intent: ORA_LEDGER_TABLE %q, AWS config: %v", table, err)
	}
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.BodiesFromEnv(cfg))
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
	svc := validate.New(ledger, func(o *validate.Options) {
		if judge != nil {
			o.IntentJudge = judge
		}
	})
	awslambda.Start("validate-intent", validate.Handler{Runner: svc, Validator: ora.ValidatorIntent}.Handle)
}
