// Command outbox-sweep is the Lambda an EventBridge rule invokes every few
// minutes: it starts the wave of every signal recorded in the ledger without
// one (the ledger's stream normally starts them through observe-table) and
// publishes how many it found as the EMF metric ora/WavelessSignals, on which
// an alarm fires (shared/observe's outbox). Each sweep also publishes the
// decisions waiting for a human (ora_escalations_pending and
// ora_escalation_oldest_age_seconds), which nothing else emits on AWS.
//
// Environment: ORA_LEDGER_TABLE, ORA_STATE_MACHINE_ARN, and optionally
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
	d := observerlambda.MustFromEnv("outbox-sweep")
	obs, err := d.Observer(nil)
	if err != nil {
		log.Fatalf("outbox-sweep: %v", err)
	}
	sw := &observe.OutboxSweeper{Observer: obs, Positions: observe.LedgerCheckpoints{Ledger: d.Ledger},
		Lookback: DefaultLookback, Threshold: DefaultThreshold}
	awslambda.Start("outbox-sweep", Handler{Sweeper: sw, Metrics: os.Stdout, Approvals: d.Ledger}.Handle)
}
