// Command validate-technical is the Lambda behind the state machine's Validate (technical) branch: it
// checks that the receipts show each action did what it claimed: evidence for every planned action, the object exists with its digest, the commitment is open, the http status is 2xx, and records a ValidatorResult attributed to the
// responsible author type (shared/validate).
//
// Environment: ORA_LEDGER_TABLE, ORA_BUCKET (where object.put writes) and the usual AWS configuration.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
	"github.com/ora-runtime/ora/shared/validate"
)

func main() {
	table := os.Getenv("ORA_LEDGER_TABLE")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || err != nil {
		log.Fatalf("validate-technical: ORA_LEDGER_TABLE %q, AWS config: %v", table, err)
	}
	db := dynamodb.NewFromConfig(cfg)
	ledger := dynamo.New(db, table, dynamo.MustFromEnv(cfg))
	objects := act.S3{Client: s3.NewFromConfig(cfg), Bucket: os.Getenv("ORA_BUCKET")}
	svc := validate.New(ledger, func(o *validate.Options) { o.Objects, o.Commitments = objects, ledger })
	awslambda.Start("validate-technical", validate.Handler{Runner: svc, Validator: ora.ValidatorTechnical}.Handle)
}
