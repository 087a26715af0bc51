// Command observe-event is the target of the EventBridge rules the stack
// creates from ora:eventRules and ora:buckets: it captures each AWS event as
// a signal (S3's Object Created and Object Deleted as object signals) and
// starts its wave (shared/observe).
//
// Environment: ORA_LEDGER_TABLE, ORA_STATE_MACHINE_ARN, and optionally
// ORA_ESCALATION_TIMEOUT_SECONDS.
package main

import (
	"log"

	"github.com/ora-runtime/ora/shared/observerlambda"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	d := observerlambda.MustFromEnv("observe-event")
	obs, err := d.Observer(nil)
	if err != nil {
		log.Fatalf("observe-event: %v", err)
	}
	awslambda.Start("observe-event", Handler{Observer: obs}.Handle)
}
