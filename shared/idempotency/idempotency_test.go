package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/idempotency"
	"github.com/ora-runtime/ora/shared/idempotency/idempotencytest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// memStore is a map-backed store implementing the contract, used to check the
// contract suite itself and as the base of fakeStore. The real stores are
// tested in shared/sqlite and shared/dynamo.
type memStore struct {
	mu   sync.Mutex
	recs map[string]ora.IdempotencyRecord
}

func newMemStore() *memStore { return &memStore{recs: map[string]ora.IdempotencyRecord{}} }

func checkRec(rec ora.IdempotencyRecord, status ora.IdempotencyStatus, lock bool) error {
	switch {
	case rec.Key == "":
		return ora.Invalid("key", "empty")
	case rec.Status != "" && rec.Status != status:
		return ora.Invalid("status", "want %s", status)
	case rec.ExpiresAt.IsZero():
		return ora.Invalid("expires_at", "zero")
	case lock && rec.InProgressExpiresAt.IsZero():
		return ora.Invalid("in_progress_expires_at", "zero")
	}
	return nil
}

func (m *memStore) PutInProgress(_ context.Context, rec ora.IdempotencyRecord, now time.Time) error {
	if err := checkRec(rec, ora.IdempotencyInProgress, true); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.recs[rec.Key]
	if ok && old.ExpiresAt.After(now) && (old.Status != ora.IdempotencyInProgress || old.InProgressExpiresAt.After(now)) {
		return ora.Conflict(old, "exists")
	}
	rec.Status = ora.IdempotencyInProgress
	rec.Response = nil
	m.recs[rec.Key] = rec
	return nil
}

func (m *memStore) Complete(_ context.Context, rec ora.IdempotencyRecord) error {
	if err := checkRec(rec, ora.IdempotencyCompleted, false); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec.Status = ora.IdempotencyCompleted
	m.recs[rec.Key] = rec
	return nil
}

func (m *memStore) Delete(_ context.Context, key string) error {
	if key == "" {
		return ora.Invalid("key", "empty")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, key)
	return nil
}

func (m *memStore) Get(_ context.Context, key string) (ora.IdempotencyRecord, error) {
	if key == "" {
		return ora.IdempotencyRecord{}, ora.Invalid("key", "empty")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.recs[key]
	if !ok {
		return ora.IdempotencyRecord{}, ora.Errorf(ora.ENOTFOUND, "no record %s", key)
	}
	return rec, nil
}

// fakeStore overrides memStore's methods where a function field is set.
type fakeStore struct {
	*memStore
	put      func(ctx context.Context, rec ora.IdempotencyRecord, now time.Time) error
	complete func(ctx context.Context, rec ora.IdempotencyRecord) error
	del      func(ctx context.Context, key string) error
	get      func(ctx context.Context, key string) (ora.IdempotencyRecord, error)
}

func (f *fakeStore) PutInProgress(ctx context.Context, rec ora.IdempotencyRecord, now time.Time) error {
	if f.put != nil {
		return f.put(ctx, rec, now)
	}
	return f.memStore.PutInProgress(ctx, rec, now)
}

func (f *fakeStore) Complete(ctx context.Context, rec ora.IdempotencyRecord) error {
	if f.complete != nil {
		return f.complete(ctx, rec)
	}
	return f.memStore.Complete(ctx, rec)
}

func (f *fakeStore) Delete(ctx context.Context, key string) error {
	if f.del != nil {
		return f.del(ctx, key)
	}
	return f.memStore.Delete(ctx, key)
}

func (f *fakeStore) Get(ctx context.Context, key string) (ora.IdempotencyRecord, error) {
	if f.get != nil {
		return f.get(ctx, key)
	}
	return f.memStore.Get(ctx, key)
}

var _ ora.IdempotencyStore = (*fakeStore)(nil)

// TestContractSuite runs the contract suite against the in-memory reference,
// checking the suite itself.
func TestContractSuite(t *testing.T) {
	idempotencytest.Run(t, func(*testing.T) ora.IdempotencyStore { return newMemStore() })
}

func one(context.Context) (int, error) { return 1, nil }

func TestOptionDefaults(t *testing.T) {
	m := newMemStore()
	clock := idempotencytest.NewClock()
	idem := idempotency.New(m, func(o *idempotency.Options) {
		o.Now = clock.Now
		o.Expiry = 0
		o.InProgressFallback = -time.Second
	})
	_, err := idempotency.Do(context.Background(), idem, "k", "p", func(ctx context.Context) (int, error) {
		rec, err := m.Get(ctx, "k")
		if err != nil {
			return 0, err
		}
		if !rec.ExpiresAt.Equal(clock.Now().Add(time.Hour)) || !rec.InProgressExpiresAt.Equal(clock.Now().Add(15*time.Minute)) {
			t.Errorf("lock = %+v, want the defaults: expiry 1h, in-progress 15m", rec)
		}
		return 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDoRejectsBadInput(t *testing.T) {
	idem := idempotency.New(newMemStore(), func(o *idempotency.Options) { o.KeyPrefix = "fn" })
	for _, tc := range []struct {
		name    string
		key     string
		payload any
		field   string
	}{
		{"empty key", "", "p", "key"},
		{"key too long", strings.Repeat("k", idempotency.MaxKeyLength), "p", "key"},
		{"payload that is not JSON", "k", func() {}, "payload"},
		{"payload with a NaN", "k", map[string]float64{"x": nan()}, "payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := false
			_, err := idempotency.Do(context.Background(), idem, tc.key, tc.payload, func(context.Context) (int, error) {
				ran = true
				return 1, nil
			})
			if ora.ErrorCode(err) != ora.EINVALID || ora.ErrorField(err) != tc.field {
				t.Fatalf("error = %v, want EINVALID on %q", err, tc.field)
			}
			if ran {
				t.Fatal("the function ran")
			}
		})
	}
}

func nan() float64 { z := 0.0; return z / z }

func TestPayloadHash(t *testing.T) {
	type s struct {
		B []int  `json:"b"`
		A string `json:"a"`
	}
	for _, tc := range []struct {
		name string
		a, b any
		same bool
	}{
		{"struct and map with the same fields", s{B: []int{1, 2}, A: "x"}, map[string]any{"a": "x", "b": []int{1, 2}}, true},
		{"maps in any order", map[string]int{"x": 1, "y": 2}, map[string]int{"y": 2, "x": 1}, true},
		{"large integers are kept exact", map[string]int64{"n": 9007199254740993}, map[string]int64{"n": 9007199254740992}, false},
		{"a changed value", map[string]int{"x": 1}, map[string]int{"x": 2}, false},
		{"array order matters", []int{1, 2}, []int{2, 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ha, err := idempotency.PayloadHash(tc.a)
			if err != nil {
				t.Fatal(err)
			}
			hb, err := idempotency.PayloadHash(tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if (ha == hb) != tc.same {
				t.Fatalf("hash(a) = %s, hash(b) = %s; want equal = %v", ha, hb, tc.same)
			}
			if len(ha) != 64 {
				t.Fatalf("hash length = %d, want 64 hex digits (sha256)", len(ha))
			}
		})
	}
}

func TestInProgressErrorIsTransient(t *testing.T) {
	err := error(&idempotency.InProgressError{Key: "k", ExpiresAt: time.Unix(100, 0)})
	if got := ora.ErrorCode(err); got != ora.ETRANSIENT {
		t.Fatalf("ora.ErrorCode = %q, want %q", got, ora.ETRANSIENT)
	}
	var te *taskerr.TransientError
	if got := taskerr.From(err); !errors.As(got, &te) {
		t.Fatalf("taskerr.From = %T, want *taskerr.TransientError", got)
	}
	if !idempotency.IsInProgress(errors.Join(errors.New("ctx"), err)) {
		t.Fatal("IsInProgress does not see a wrapped InProgressError")
	}
}

func TestStoreFailures(t *testing.T) {
	ctx := context.Background()
	throttled := ora.Transient(errors.New("ProvisionedThroughputExceeded"), "throttled")

	t.Run("a throttled lock write is ETRANSIENT and nothing runs", func(t *testing.T) {
		f := &fakeStore{memStore: newMemStore(),
			put: func(context.Context, ora.IdempotencyRecord, time.Time) error { return throttled }}
		ran := false
		_, err := idempotency.Do(ctx, idempotency.New(f), "k", "p", func(context.Context) (int, error) { ran = true; return 1, nil })
		if ora.ErrorCode(err) != ora.ETRANSIENT || !errors.Is(err, throttled) || ran {
			t.Fatalf("error = %v, ran = %v; want the wrapped ETRANSIENT and no run", err, ran)
		}
	})

	t.Run("a conflict without the record reads it", func(t *testing.T) {
		m := newMemStore()
		hash, _ := idempotency.PayloadHash("p")
		done := ora.IdempotencyRecord{Key: "k", Status: ora.IdempotencyCompleted, PayloadHash: hash,
			Response: []byte(`7`), ExpiresAt: time.Now().Add(time.Hour)}
		if err := m.Complete(ctx, done); err != nil {
			t.Fatal(err)
		}
		f := &fakeStore{memStore: m,
			put: func(context.Context, ora.IdempotencyRecord, time.Time) error { return ora.Conflict(nil, "exists") }}
		got, err := idempotency.Do(ctx, idempotency.New(f), "k", "p", one)
		if err != nil || got != 7 {
			t.Fatalf("Do = %d, %v; want the stored 7", got, err)
		}
	})

	t.Run("a conflict whose record vanished is retried", func(t *testing.T) {
		m := newMemStore()
		puts := 0
		f := &fakeStore{memStore: m, put: func(ctx context.Context, rec ora.IdempotencyRecord, now time.Time) error {
			puts++
			if puts == 1 {
				return ora.Conflict(nil, "exists")
			}
			return m.PutInProgress(ctx, rec, now)
		}}
		got, err := idempotency.Do(ctx, idempotency.New(f), "k", "p", one)
		if err != nil || got != 1 || puts != 2 {
			t.Fatalf("Do = %d, %v after %d puts; want 1 after 2 puts", got, err, puts)
		}
	})

	t.Run("a conflict carrying an expired record is ETRANSIENT and nothing runs", func(t *testing.T) {
		hash, _ := idempotency.PayloadHash("p")
		stale := ora.IdempotencyRecord{Key: "k", Status: ora.IdempotencyCompleted, PayloadHash: hash,
			Response: []byte(`7`), ExpiresAt: time.Now().Add(-time.Second)}
		f := &fakeStore{memStore: newMemStore(),
			put: func(context.Context, ora.IdempotencyRecord, time.Time) error { return ora.Conflict(stale, "exists") }}
		ran := false
		got, err := idempotency.Do(ctx, idempotency.New(f), "k", "p", func(context.Context) (int, error) { ran = true; return 1, nil })
		if ora.ErrorCode(err) != ora.ETRANSIENT || got != 0 || ran {
			t.Fatalf("Do = %d, %v, ran = %v; want ETRANSIENT, not the stale 7, no run", got, err, ran)
		}
	})

	t.Run("a failed save of the response is logged and the result returned", func(t *testing.T) {
		var logs bytes.Buffer
		f := &fakeStore{memStore: newMemStore(),
			complete: func(context.Context, ora.IdempotencyRecord) error { return throttled }}
		idem := idempotency.New(f, func(o *idempotency.Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		})
		got, err := idempotency.Do(ctx, idem, "k", "p", one)
		if err != nil || got != 1 || !strings.Contains(logs.String(), "response was not saved") {
			t.Fatalf("Do = %d, %v (log %q); want the result 1, no error, and the failure logged", got, err, logs.String())
		}
		// The lock stays: a duplicate before its expiry is told to retry.
		if _, err := idempotency.Do(ctx, idem, "k", "p", one); !idempotency.IsInProgress(err) {
			t.Fatalf("a duplicate after the failed save: %v, want in progress", err)
		}
	})

	t.Run("a failed delete is logged and the function's error returned unchanged", func(t *testing.T) {
		var logs bytes.Buffer
		f := &fakeStore{memStore: newMemStore(),
			del: func(context.Context, string) error { return throttled }}
		idem := idempotency.New(f, func(o *idempotency.Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		})
		boom := errors.New("boom")
		_, err := idempotency.Do(ctx, idem, "k", "p", func(context.Context) (int, error) { return 0, boom })
		if err != boom {
			t.Fatalf("error = %v, want the function's own error", err)
		}
		if !strings.Contains(logs.String(), "cannot delete the lock") || !strings.Contains(logs.String(), "key=k") {
			t.Fatalf("log = %q, want the failed delete logged with the key", logs.String())
		}
	})

	t.Run("the lock is deleted even when the function cancelled its context", func(t *testing.T) {
		m := newMemStore()
		var delCtxErr error
		f := &fakeStore{memStore: m, del: func(ctx context.Context, key string) error {
			delCtxErr = ctx.Err()
			return m.Delete(ctx, key)
		}}
		cctx, cancel := context.WithCancel(ctx)
		boom := errors.New("boom")
		_, err := idempotency.Do(cctx, idempotency.New(f), "k", "p", func(context.Context) (int, error) {
			cancel()
			return 0, boom
		})
		if err != boom || delCtxErr != nil {
			t.Fatalf("error = %v, delete saw ctx error %v; want boom and a live context", err, delCtxErr)
		}
		if _, err := m.Get(ctx, "k"); ora.ErrorCode(err) != ora.ENOTFOUND {
			t.Fatalf("Get after the failure = %v, want not found", err)
		}
	})

	t.Run("a stored response that does not decode is EINTERNAL", func(t *testing.T) {
		m := newMemStore()
		hash, _ := idempotency.PayloadHash("p")
		if err := m.Complete(ctx, ora.IdempotencyRecord{Key: "k", Status: ora.IdempotencyCompleted, PayloadHash: hash,
			Response: []byte(`"text"`), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		_, err := idempotency.Do(ctx, idempotency.New(m), "k", "p", one)
		if ora.ErrorCode(err) != ora.EINTERNAL || !strings.Contains(err.Error(), "decode") {
			t.Fatalf("error = %v, want EINTERNAL about decoding", err)
		}
	})

	t.Run("a response that does not encode releases the lock", func(t *testing.T) {
		m := newMemStore()
		_, err := idempotency.Do(ctx, idempotency.New(m), "k", "p", func(context.Context) (func(), error) { return func() {}, nil })
		if ora.ErrorCode(err) != ora.EINTERNAL {
			t.Fatalf("error = %v, want EINTERNAL", err)
		}
		if _, err := m.Get(ctx, "k"); ora.ErrorCode(err) != ora.ENOTFOUND {
			t.Fatalf("Get after the failure = %v, want not found", err)
		}
	})
}

func TestWrapKeyError(t *testing.T) {
	idem := idempotency.New(newMemStore())
	for _, tc := range []struct {
		name  string
		err   error
		code  string
		field string
	}{
		{"a plain error becomes EINVALID on key", errors.New("no id"), ora.EINVALID, "key"},
		{"a domain error keeps its kind", ora.Invalid("signal_id", "missing"), ora.EINVALID, "signal_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := idempotency.Wrap(idem, func(string) (string, error) { return "", tc.err }, func(context.Context, string) (int, error) {
				t.Error("the function ran")
				return 1, nil
			})
			_, err := h(context.Background(), "in")
			if ora.ErrorCode(err) != tc.code || ora.ErrorField(err) != tc.field || !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %s on %q wrapping %v", err, tc.code, tc.field, tc.err)
			}
		})
	}
}
