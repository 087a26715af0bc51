// Command api is the Lambda behind the HTTP API's GET /signals/{id}, GET
// /waves/{id} and POST /decisions/{id}/approve|reject, authorized by the JWT
// API Gateway verified.
//
// Environment: ORA_LEDGER_TABLE, ORA_STATE_MACHINE_ARN, ORA_RESOURCE_SERVER
// (the scope prefix, default "ora") and the usual AWS configuration.
package main

import (
	"cmp"
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/review"
	"github.com/ora-runtime/ora/shared/sfn"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	table, machine := os.Getenv("ORA_LEDGER_TABLE"), os.Getenv("ORA_STATE_MACHINE_ARN")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || machine == "" || err != nil {
		log.Fatalf("api: ORA_LEDGER_TABLE %q, ORA_STATE_MACHINE_ARN %q, AWS config: %v", table, machine, err)
	}
	ledger, states := dynamo.New(dynamodb.NewFromConfig(cfg), table), awssfn.NewFromConfig(cfg)
	waves, err := sfn.NewWaves(states, machine)
	if err != nil {
		log.Fatalf("api: %v", err)
	}
	rev := review.New(ledger, func(o *review.Options) { o.Settler = sfn.New(states, machine) })
	h := New(ledger, waves, rev, cmp.Or(os.Getenv("ORA_RESOURCE_SERVER"), DefaultResourceServer), nil)
	awslambda.Start("api", h.Handle)
}
