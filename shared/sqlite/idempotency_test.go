package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/idempotency"
	"github.com/ora-runtime/ora/shared/idempotency/idempotencytest"
	"github.com/ora-runtime/ora/shared/ora"
)

// openIdempotencyStore opens a fresh database file in t's temporary folder.
func openIdempotencyStore(tb testing.TB) *IdempotencyStore {
	tb.Helper()
	db, err := Open(context.Background(), filepath.Join(tb.TempDir(), "ora.db"))
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return NewIdempotencyStore(db)
}

func TestIdempotencyContract(t *testing.T) {
	idempotencytest.Run(t, func(t *testing.T) ora.IdempotencyStore { return openIdempotencyStore(t) })
}

func TestIdempotencyRecordSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ora.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 123_456_789)
	want := ora.IdempotencyRecord{Key: "k", Status: ora.IdempotencyCompleted, PayloadHash: "h",
		Response: []byte(`{"x":1}`), ExpiresAt: now.Add(time.Hour)}
	if err := NewIdempotencyStore(db).Complete(ctx, want); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := NewIdempotencyStore(db).Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if !idempotencytest.Equal(got, want) {
		t.Fatalf("after reopening Get = %+v, want %+v (times to the nanosecond)", got, want)
	}
}

func TestIdempotencyBusyIsTransient(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ora.db")
	holder, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	waiter, err := Open(ctx, path, func(o *Options) { o.BusyTimeout = time.Millisecond })
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	tx, err := holder.w.BeginTx(ctx, nil) // IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	now := time.Now()
	err = NewIdempotencyStore(waiter).PutInProgress(ctx, ora.IdempotencyRecord{Key: "k", PayloadHash: "h",
		ExpiresAt: now.Add(time.Hour), InProgressExpiresAt: now.Add(time.Minute)}, now)
	if got := ora.ErrorCode(err); got != ora.ETRANSIENT {
		t.Fatalf("PutInProgress while another writer holds the lock: %v (code %q), want %q", err, got, ora.ETRANSIENT)
	}
}

func BenchmarkIdempotentCall(b *testing.B) {
	store := openIdempotencyStore(b)
	idem := idempotency.New(store)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	fn := func(context.Context) (int, error) { return 42, nil }
	b.Run("first", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := idempotency.Do(ctx, idem, fmt.Sprintf("first-%d", i), i, fn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("duplicate", func(b *testing.B) {
		if _, err := idempotency.Do(ctx, idem, "dup", 0, fn); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := idempotency.Do(ctx, idem, "dup", 0, fn); err != nil {
				b.Fatal(err)
			}
		}
	})
}
