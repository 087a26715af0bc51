// Command observe-object is the Lambda S3 invokes with ObjectCreated and
// ObjectRemoved notifications: it captures each record as a signal and starts
// its wave (shared/observe).
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
	d := observerlambda.MustFromEnv("observe-object")
	obs, err := d.Observer(nil)
	if err != nil {
		log.Fatalf("observe-object: %v", err)
	}
	awslambda.Start("observe-object", Handler{Observer: obs}.Handle)
}
