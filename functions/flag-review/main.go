// Command flag-review is the Lambda behind the FlagReview task: a
// medium-confidence decision runs and is logged for review with a
// review-requested entry (shared/review).
//
// Environment: ORA_LEDGER_TABLE and the usual AWS configuration.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/functions/flag-review/handler"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/review"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	table := os.Getenv("ORA_LEDGER_TABLE")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || err != nil {
		log.Fatalf("flag-review: ORA_LEDGER_TABLE %q, AWS config: %v", table, err)
	}
	awslambda.Start("flag-review", handler.Handler{Reviewer: review.New(dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg)))}.Handle)
}
