// Command escalate is the Lambda behind the Escalate task
// (lambda:invoke.waitForTaskToken): a low-confidence decision waits for a
// human, who approves or rejects through the HTTP API (shared/review).
//
// Environment: ORA_LEDGER_TABLE, ORA_TOPIC_ARN (where escalations are
// announced) and the usual AWS configuration. An escalation run again after
// its human already answered settles the new task token at once
// (states:SendTaskSuccess, which needs no state machine ARN).
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/ora-runtime/ora/functions/escalate/handler"
	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/review"
	"github.com/ora-runtime/ora/shared/sfn"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	table, topic := os.Getenv("ORA_LEDGER_TABLE"), os.Getenv("ORA_TOPIC_ARN")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || topic == "" || err != nil {
		log.Fatalf("escalate: ORA_LEDGER_TABLE %q, ORA_TOPIC_ARN %q, AWS config: %v", table, topic, err)
	}
	notifier := act.NewSNSNotify(sns.NewFromConfig(cfg), topic)
	svc := review.New(dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg)), func(o *review.Options) {
		o.Notifier = notifier
		o.Settler = sfn.New(awssfn.NewFromConfig(cfg), "") // settles tokens only: starts no execution
	})
	awslambda.Start("escalate", handler.Handler{Escalator: svc, Secrets: awslambda.Secrets}.Handle)
}
