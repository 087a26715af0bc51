package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ledgertest"
	"github.com/ora-runtime/ora/shared/ora"
)

// openDB opens a fresh database in t.TempDir() and closes it when t ends.
func openDB(tb testing.TB, opts ...func(*Options)) *DB {
	tb.Helper()
	db, err := Open(context.Background(), filepath.Join(tb.TempDir(), "ora.db"), opts...)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func TestLedgerContract(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) ora.Ledger { return openDB(t) })
}

func TestBodiesContract(t *testing.T) {
	ledgertest.RunBodies(t, func(t *testing.T, bodies ora.BodyStore) ora.Ledger {
		return openDB(t, func(o *Options) { o.Bodies = bodies })
	})
}

func TestDebounceContract(t *testing.T) {
	ledgertest.RunDebounce(t, func(t *testing.T, now func() time.Time) ora.Debouncer {
		return openDB(t, func(o *Options) { o.Now = now })
	})
}

// TestLedgerSurvivesReopen checks the records live in the file, not in memory.
func TestLedgerSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ora.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	body := []byte(`{"kept": true}`)
	stored, err := db.Append(ctx, ora.Entry{SignalID: "sig-1", Kind: ora.KindObservedFact, Body: body})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	db, err = Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	got, err := db.Entries(ctx, "sig-1")
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	if len(got) != 1 || string(got[0].Body) != string(body) || got[0].Digest != stored.Digest {
		t.Errorf("after reopen got %+v, want one entry with body %s", got, body)
	}
}

func TestAppendUsesTheClock(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.FixedZone("CET", 3600))
	db := openDB(t, func(o *Options) { o.Now = func() time.Time { return at } })
	got, err := db.Append(context.Background(), ora.Entry{SignalID: "sig-clock", Kind: ora.KindObservedFact, Body: []byte(`{}`)})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if !got.CreatedAt.Equal(at) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("created_at got %v, want %v in UTC", got.CreatedAt, at)
	}
}
