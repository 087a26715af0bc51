package observe_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
)

// 200 concurrent deliveries of one signal against the real SQLite ledger (and
// its debouncer) start exactly one wave, write one entry and answer every
// delivery with the same ids.
func TestConcurrentDuplicatesOnSQLite(t *testing.T) {
	tests := []struct {
		name    string
		deliver func(t *testing.T, obs *observe.Observer) (observe.Receipt, error)
	}{
		{"webhook", func(t *testing.T, obs *observe.Observer) (observe.Receipt, error) {
			return obs.Webhook(context.Background(), "github", signed(t, "github", pushBody), []byte(pushBody))
		}},
		{"debounced commitment change", func(t *testing.T, obs *observe.Observer) (observe.Receipt, error) {
			return obs.CommitmentChanged(context.Background(), "insert", ora.Commitment{ID: "cmt_9", Title: "t", Status: "open", OpenedAt: now, Version: 1})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ora.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			waves := &observetest.Waves{}
			obs, err := observe.New(db, waves, sources, func(o *observe.Options) { o.Debouncer = db })
			if err != nil {
				t.Fatal(err)
			}
			const n = 200
			receipts := make([]observe.Receipt, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					receipts[i], errs[i] = tt.deliver(t, obs)
				}()
			}
			close(start)
			wg.Wait()
			fresh := 0
			for i, r := range receipts {
				if errs[i] != nil {
					t.Fatalf("delivery %d: %v", i, errs[i])
				}
				if r.SignalID != receipts[0].SignalID || r.WaveID != receipts[0].SignalID {
					t.Fatalf("delivery %d: ids %+v differ from %+v", i, r, receipts[0])
				}
				if !r.Duplicate {
					fresh++
				}
			}
			if fresh != 1 {
				t.Errorf("non-duplicate receipts = %d, want 1", fresh)
			}
			if got := waves.Started(); len(got) != 1 || got[0] != receipts[0].SignalID {
				t.Errorf("waves started = %v, want just %s", got, receipts[0].SignalID)
			}
			entries, err := db.Entries(context.Background(), receipts[0].SignalID)
			if err != nil || len(entries) != 1 || entries[0].Kind != ora.KindSignalReceived {
				t.Errorf("entries = %+v, %v; want one signal-received", entries, err)
			}
		})
	}
}
