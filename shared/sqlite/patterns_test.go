package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/reason/reasontest"
)

var (
	_ reason.PatternCache = (*Patterns)(nil)
	_ reason.SpendMeter   = (*Spend)(nil)
)

func openPatternsDB(t *testing.T, clock *reasontest.Clock) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "ora.db"), func(o *Options) {
		if clock != nil {
			o.Now = clock.Now
		}
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestPatternCacheContract(t *testing.T) {
	reasontest.RunPatternCache(t, func(t *testing.T, clock *reasontest.Clock) reason.PatternCache {
		return openPatternsDB(t, clock).Patterns()
	})
}

func TestSpendMeterContract(t *testing.T) {
	reasontest.RunSpendMeter(t, func(t *testing.T) reason.SpendMeter {
		return openPatternsDB(t, nil).Spend()
	})
}
