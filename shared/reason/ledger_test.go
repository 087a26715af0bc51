package reason_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/sqlite"
)

// TestTraceLandsInTheLedger records a model decision the way the pipeline's
// reason handler does (ledger.RecordDecision) and reads the chain length,
// usage and cost back from the stored entry.
func TestTraceLandsInTheLedger(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ora.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r, _, _ := newReasoner(t, testConfig(), stage(0.5, 8, "a", proposal(1)), stage(0.52, 8, "b", proposal(2)))
	in := input("sig-ledger")
	in.Packet = realisticPacket("sig-ledger") // long enough to reach the cache minimum
	d, err := r.Reason(ctx, in)
	if err != nil {
		t.Fatalf("Reason: %v", err)
	}
	if _, err := db.RecordDecision(ctx, d); err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	entries, err := db.Entries(ctx, "sig-ledger")
	if err != nil {
		t.Fatal(err)
	}
	var stored *ora.ReasonerDecision
	for _, e := range entries {
		if e.Kind == ora.KindReasonerDecision {
			var got ora.ReasonerDecision
			if err := json.Unmarshal(e.Body, &got); err != nil {
				t.Fatal(err)
			}
			stored = &got
		}
	}
	if stored == nil || stored.Model == nil {
		t.Fatalf("no model decision in the ledger: %+v", entries)
	}
	m := stored.Model
	if m.ChainLength != 2 || m.CrystallizationReason != string(reason.Consistency) || m.Usage != d.Model.Usage || m.Usage.CacheReadTokens == 0 || m.CostUSD != d.Model.CostUSD || m.CostUSD <= 0 {
		t.Errorf("stored trace = %+v, want chain 2, Consistency, usage %+v, cost %v", m, d.Model.Usage, d.Model.CostUSD)
	}
}
