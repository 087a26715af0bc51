// Command observe-table is the Lambda behind the DynamoDB Streams event source
// mappings of the ledger table and of the user's tables (ora:tables), with
// ReportBatchItemFailures: it captures each commitment record, and each record
// of a user's table, as a signal and starts its wave (shared/observe).
//
// Environment: ORA_LEDGER_TABLE, ORA_STATE_MACHINE_ARN, ORA_TABLES (a JSON
// array of the user's tables, {name, stream_arn}), and optionally
// ORA_ESCALATION_TIMEOUT_SECONDS.
package main

import (
	"log"
	"os"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observerlambda"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	d := observerlambda.MustFromEnv("observe-table")
	tables, err := observe.ParseTables([]byte(os.Getenv("ORA_TABLES")))
	if err != nil {
		log.Fatalf("observe-table: ORA_TABLES: %v", err)
	}
	obs, err := d.Observer(nil, func(o *observe.Options) { o.Debouncer, o.Tables = d.Ledger, tables })
	if err != nil {
		log.Fatalf("observe-table: %v", err)
	}
	awslambda.Start("observe-table", Handler{Observer: obs}.Handle)
}
