// Command observe-table is the Lambda behind the DynamoDB Streams event source
// mapping of the ledger table (with ReportBatchItemFailures): it captures each
// commitment record as a signal and starts its wave (shared/observe).
//
// Environment: ORA_LEDGER_TABLE, ORA_STATE_MACHINE_ARN, and optionally
// ORA_ESCALATION_TIMEOUT_SECONDS.
package main

import (
	"log"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observerlambda"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	d := observerlambda.MustFromEnv("observe-table")
	obs, err := d.Observer(nil, func(o *observe.Options) { o.Debouncer = d.Ledger })
	if err != nil {
		log.Fatalf("observe-table: %v", err)
	}
	awslambda.Start("observe-table", Handler{Observer: obs}.Handle)
}
