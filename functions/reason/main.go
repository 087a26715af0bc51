// Command reason is the Lambda behind the state machine's Reason task: it
// decides about the wave's signal with the rules reasoner (shared/rules) and
// records the decision.
//
// Environment: ORA_LEDGER_TABLE (the ledger's DynamoDB table), ORA_RULES_FILE
// (optional: a rules file bundled with the function; default the embedded
// rules/ora.rules.yaml) and the usual AWS configuration.
package main

import (
	"context"
	"github.com/ora-runtime/ora/functions/reason/handler"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/rules"
)

func main() {
	table := os.Getenv("ORA_LEDGER_TABLE")
	set, err := rules.Load(os.Getenv("ORA_RULES_FILE"), defaultrules.Default)
	if table == "" || err != nil {
		log.Fatalf("reason: ORA_LEDGER_TABLE %q, rules: %v", table, err)
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatalf("reason: AWS config: %v", err)
	}
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table)
	lambda.Start(handler.Handler{Ledger: ledger, Reasoner: rules.New(set)}.Handle)
}
