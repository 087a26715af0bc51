// Command record is the Lambda behind the Record task: it writes the wave's
// final-verdict entry, completed with the validators' verdicts or rejected
// with the reason (shared/review).
//
// Environment: ORA_LEDGER_TABLE and the usual AWS configuration.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/functions/record/handler"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/review"
	"github.com/ora-runtime/ora/shared/telemetry"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	table := os.Getenv("ORA_LEDGER_TABLE")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || err != nil {
		log.Fatalf("record: ORA_LEDGER_TABLE %q, AWS config: %v", table, err)
	}
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg))
	profiles := orient.NewProfiles(ledger, func(o *orient.Options) { o.Metrics = telemetry.WithPrefix(awslambda.Metrics) })
	awslambda.Start("record", handler.Handler{Recorder: review.New(ledger, func(o *review.Options) { o.Regret = profiles.RecordRegret })}.Handle)
}
