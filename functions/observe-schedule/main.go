// Command observe-schedule is the Lambda EventBridge Scheduler invokes with a
// schedule's input (the template in events/README.md): it captures the firing
// as a signal and starts its wave (shared/observe).
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
	d := observerlambda.MustFromEnv("observe-schedule")
	obs, err := d.Observer(nil)
	if err != nil {
		log.Fatalf("observe-schedule: %v", err)
	}
	awslambda.Start("observe-schedule", Handler{Observer: obs}.Handle)
}
