// Command reason is the Lambda behind the state machine's Reason task. It
// decides with the rules reasoner (shared/rules) or, when ORA_REASONER is
// bedrock, with the Bedrock observer chain (shared/reason), and records the
// decision once.
//
// Environment: ORA_LEDGER_TABLE; ORA_RULES_FILE (optional, default the
// embedded rules/ora.rules.yaml); ORA_REASONER (rules | bedrock);
// ORA_BEDROCK_MODEL_IDS and ORA_BEDROCK_CONFIG (see reason.ConfigFromEnv);
// ORA_TOKEN_BUDGET (orient.EnvOptions: the budget the orientation guard holds
// a reasoner-emitted proposal to).
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/functions/reason/handler"
	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/rules"
	"github.com/ora-runtime/ora/shared/telemetry"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	table := os.Getenv("ORA_LEDGER_TABLE")
	set, err := rules.Load(os.Getenv("ORA_RULES_FILE"), defaultrules.Default)
	cfg, cfgErr := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || err != nil || cfgErr != nil {
		log.Fatalf("reason: ORA_LEDGER_TABLE %q, rules: %v, AWS config: %v", table, err, cfgErr)
	}
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.BodiesFromEnv(cfg))
	var reasoner ora.Reasoner = rules.New(set)
	if os.Getenv("ORA_REASONER") == "bedrock" {
		bc, err := reason.ConfigFromEnv(os.Getenv)
		if err == nil {
			bc.RulesVersion = set.Version()
			reasoner, err = reason.NewReasoner(bedrock.New(bedrockruntime.NewFromConfig(cfg)), bc, func(o *reason.Options) {
				o.Patterns, o.Spend, o.Stages, o.Ledger = ledger.Patterns(), ledger.Spend(), ledger.Patterns(), ledger
			})
		}
		if err != nil {
			log.Fatalf("reason: bedrock: %v", err)
		}
	}
	author := "rules"
	if os.Getenv("ORA_REASONER") == "bedrock" {
		author = "model"
	}
	env, err := orient.EnvOptions(os.Getenv)
	if err != nil {
		log.Fatalf("reason: %v", err)
	}
	// Orientation proposals the reasoner emits go through the guard.
	proposals := orient.NewProfiles(ledger, env, func(o *orient.Options) { o.Metrics = telemetry.WithPrefix(awslambda.Metrics) })
	awslambda.Start("reason", handler.Handler{Ledger: ledger, Reasoner: reasoner, Proposals: proposals}.Handle,
		func(o *telemetry.TaskOptions) { o.AuthorType = author })
}
