// Package idempotencytest is the contract test suite every ora.IdempotencyStore
// passes: the store's own rules (conditional lock, take-over, conflict carrying
// the record, concurrency) and every rule of the idempotency wrapper run on top
// of it. Adapters call Run from their tests with a fresh, real store.
package idempotencytest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/idempotency"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Clock is a settable clock for Options.Now. It starts at the current time
// rounded to the second, so a context deadline set from it is a real one that
// has not passed.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock at the current time, rounded down to the second.
func NewClock() *Clock { return &Clock{now: time.Now().Truncate(time.Second)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Concurrency is how many goroutines the concurrency cases start.
const Concurrency = 50

// Run runs the contract against stores made by newStore; each case gets its own.
func Run(t *testing.T, newStore func(t *testing.T) ora.IdempotencyStore) {
	t.Run("store", func(t *testing.T) { runStore(t, newStore) })
	t.Run("wrapper", func(t *testing.T) { runWrapper(t, newStore) })
}

// record returns a lock made at now. Its ExpiresAt is in whole seconds and its
// InProgressExpiresAt in whole milliseconds: the coarsest times a store may
// keep (DynamoDB's TTL attribute is in seconds), so records round-trip exactly.
func record(key, hash string, now time.Time) ora.IdempotencyRecord {
	return ora.IdempotencyRecord{
		Key:                 key,
		Status:              ora.IdempotencyInProgress,
		PayloadHash:         hash,
		ExpiresAt:           now.Truncate(time.Second).Add(time.Hour),
		InProgressExpiresAt: now.Add(30*time.Second + 250*time.Millisecond),
	}
}

// Equal reports whether two records hold the same values (times compared with
// time.Time.Equal).
func Equal(a, b ora.IdempotencyRecord) bool {
	return a.Key == b.Key && a.Status == b.Status && a.PayloadHash == b.PayloadHash &&
		string(a.Response) == string(b.Response) && a.ExpiresAt.Equal(b.ExpiresAt) &&
		a.InProgressExpiresAt.Equal(b.InProgressExpiresAt)
}

func mustGet(t *testing.T, s ora.IdempotencyStore, key string) ora.IdempotencyRecord {
	t.Helper()
	rec, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return rec
}

func wantCode(t *testing.T, err error, code, field string) {
	t.Helper()
	if got := ora.ErrorCode(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
	if got := ora.ErrorField(err); got != field {
		t.Fatalf("error field = %q (%v), want %q", got, err, field)
	}
}

func runStore(t *testing.T, newStore func(t *testing.T) ora.IdempotencyStore) {
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)

	t.Run("put then get round-trips the lock", func(t *testing.T) {
		s := newStore(t)
		rec := record("k", "h1", now)
		if err := s.PutInProgress(ctx, rec, now); err != nil {
			t.Fatalf("PutInProgress: %v", err)
		}
		if got := mustGet(t, s, "k"); !Equal(got, rec) {
			t.Fatalf("Get = %+v, want %+v", got, rec)
		}
	})

	t.Run("get of a missing key is not found", func(t *testing.T) {
		_, err := newStore(t).Get(ctx, "missing")
		wantCode(t, err, ora.ENOTFOUND, "")
	})

	// Cases where the second PutInProgress finds a live record: it must lose
	// and carry that record.
	conflicts := []struct {
		name  string
		first func(s ora.IdempotencyStore) ora.IdempotencyRecord
		at    time.Time
	}{
		{"a live lock", func(s ora.IdempotencyStore) ora.IdempotencyRecord {
			rec := record("k", "h1", now)
			mustNil(t, s.PutInProgress(ctx, rec, now))
			return rec
		}, now.Add(30 * time.Second)},
		{"a completed record", func(s ora.IdempotencyStore) ora.IdempotencyRecord {
			rec := record("k", "h1", now)
			mustNil(t, s.PutInProgress(ctx, rec, now))
			rec.Status = ora.IdempotencyCompleted
			rec.Response = []byte(`{"ok":true}`)
			rec.InProgressExpiresAt = time.Time{}
			mustNil(t, s.Complete(ctx, rec))
			return rec
		}, now.Add(time.Hour - time.Second)},
		{"a completed record past its lock's expiry", func(s ora.IdempotencyStore) ora.IdempotencyRecord {
			rec := record("k", "h1", now)
			mustNil(t, s.PutInProgress(ctx, rec, now))
			rec.Status = ora.IdempotencyCompleted
			rec.Response = []byte(`"done"`)
			mustNil(t, s.Complete(ctx, rec))
			got := mustGet(t, s, "k")
			return got
		}, now.Add(time.Minute)},
	}
	for _, tc := range conflicts {
		t.Run("put on "+tc.name+" is a conflict carrying it", func(t *testing.T) {
			s := newStore(t)
			first := tc.first(s)
			err := s.PutInProgress(ctx, record("k", "h2", tc.at), tc.at)
			wantCode(t, err, ora.ECONFLICT, "")
			got, ok := ora.Existing[ora.IdempotencyRecord](err)
			if !ok {
				t.Fatalf("conflict carries %T, want an ora.IdempotencyRecord", errExisting(err))
			}
			if !Equal(got, first) {
				t.Fatalf("conflict carries %+v, want %+v", got, first)
			}
			if stored := mustGet(t, s, "k"); !Equal(stored, first) {
				t.Fatalf("after the lost write Get = %+v, want %+v unchanged", stored, first)
			}
		})
	}

	// Cases where the second PutInProgress replaces the record.
	takeovers := []struct {
		name  string
		first func(s ora.IdempotencyStore)
		at    time.Time
	}{
		{"an expired lock (in-progress expiry == now)", func(s ora.IdempotencyStore) {
			mustNil(t, s.PutInProgress(ctx, record("k", "h1", now), now))
		}, now.Add(30*time.Second + 250*time.Millisecond)},
		{"an expired lock (in-progress expiry < now)", func(s ora.IdempotencyStore) {
			mustNil(t, s.PutInProgress(ctx, record("k", "h1", now), now))
		}, now.Add(time.Minute)},
		{"an expired completed record (expiry == now)", func(s ora.IdempotencyStore) {
			rec := record("k", "h1", now)
			rec.Status = ora.IdempotencyCompleted
			rec.Response = []byte(`1`)
			mustNil(t, s.Complete(ctx, rec))
		}, now.Add(time.Hour)},
		{"an expired completed record (expiry < now)", func(s ora.IdempotencyStore) {
			rec := record("k", "h1", now)
			rec.Status = ora.IdempotencyCompleted
			rec.Response = []byte(`1`)
			mustNil(t, s.Complete(ctx, rec))
		}, now.Add(2 * time.Hour)},
		{"a deleted record", func(s ora.IdempotencyStore) {
			mustNil(t, s.PutInProgress(ctx, record("k", "h1", now), now))
			mustNil(t, s.Delete(ctx, "k"))
		}, now.Add(time.Second)},
	}
	for _, tc := range takeovers {
		t.Run("put takes over "+tc.name, func(t *testing.T) {
			s := newStore(t)
			tc.first(s)
			next := record("k", "h2", tc.at)
			if err := s.PutInProgress(ctx, next, tc.at); err != nil {
				t.Fatalf("PutInProgress: %v, want it to take the record over", err)
			}
			if got := mustGet(t, s, "k"); !Equal(got, next) {
				t.Fatalf("Get = %+v, want %+v", got, next)
			}
		})
	}

	t.Run("complete stores the response and the new expiry", func(t *testing.T) {
		s := newStore(t)
		rec := record("k", "h1", now)
		mustNil(t, s.PutInProgress(ctx, rec, now))
		done := rec
		done.Status = ora.IdempotencyCompleted
		done.Response = []byte(`{"answer":42}`)
		done.ExpiresAt = now.Add(2 * time.Hour)
		done.InProgressExpiresAt = time.Time{}
		mustNil(t, s.Complete(ctx, done))
		if got := mustGet(t, s, "k"); !Equal(got, done) {
			t.Fatalf("Get = %+v, want %+v", got, done)
		}
	})

	t.Run("delete removes the record and a missing key is no error", func(t *testing.T) {
		s := newStore(t)
		mustNil(t, s.PutInProgress(ctx, record("k", "h1", now), now))
		mustNil(t, s.Delete(ctx, "k"))
		_, err := s.Get(ctx, "k")
		wantCode(t, err, ora.ENOTFOUND, "")
		if err := s.Delete(ctx, "k"); err != nil {
			t.Fatalf("second Delete: %v, want nil", err)
		}
	})

	invalid := []struct {
		name  string
		call  func(s ora.IdempotencyStore) error
		field string
	}{
		{"put with an empty key", func(s ora.IdempotencyStore) error {
			return s.PutInProgress(ctx, record("", "h", now), now)
		}, "key"},
		{"put without expiry", func(s ora.IdempotencyStore) error {
			r := record("k", "h", now)
			r.ExpiresAt = time.Time{}
			return s.PutInProgress(ctx, r, now)
		}, "expires_at"},
		{"put without in-progress expiry", func(s ora.IdempotencyStore) error {
			r := record("k", "h", now)
			r.InProgressExpiresAt = time.Time{}
			return s.PutInProgress(ctx, r, now)
		}, "in_progress_expires_at"},
		{"put with a completed status", func(s ora.IdempotencyStore) error {
			r := record("k", "h", now)
			r.Status = ora.IdempotencyCompleted
			return s.PutInProgress(ctx, r, now)
		}, "status"},
		{"complete with an empty key", func(s ora.IdempotencyStore) error {
			r := record("", "h", now)
			r.Status = ora.IdempotencyCompleted
			return s.Complete(ctx, r)
		}, "key"},
		{"complete with an in-progress status", func(s ora.IdempotencyStore) error {
			return s.Complete(ctx, record("k", "h", now))
		}, "status"},
		{"complete without expiry", func(s ora.IdempotencyStore) error {
			r := record("k", "h", now)
			r.Status = ora.IdempotencyCompleted
			r.ExpiresAt = time.Time{}
			return s.Complete(ctx, r)
		}, "expires_at"},
		{"delete with an empty key", func(s ora.IdempotencyStore) error { return s.Delete(ctx, "") }, "key"},
		{"get with an empty key", func(s ora.IdempotencyStore) error { _, err := s.Get(ctx, ""); return err }, "key"},
	}
	for _, tc := range invalid {
		t.Run("invalid: "+tc.name, func(t *testing.T) {
			s := newStore(t)
			wantCode(t, tc.call(s), ora.EINVALID, tc.field)
			if _, err := s.Get(ctx, "k"); ora.ErrorCode(err) != ora.ENOTFOUND {
				t.Fatalf("after the invalid call Get(k) = %v, want not found (nothing written)", err)
			}
		})
	}

	t.Run("concurrent puts: one wins, the others get its record", func(t *testing.T) {
		s := newStore(t)
		errs := make([]error, Concurrency)
		var wg sync.WaitGroup
		for g := range Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[g] = s.PutInProgress(ctx, record("k", fmt.Sprintf("h%d", g), now), now)
			}()
		}
		wg.Wait()
		winner := -1
		for g, err := range errs {
			if err == nil {
				if winner >= 0 {
					t.Fatalf("goroutines %d and %d both won", winner, g)
				}
				winner = g
			}
		}
		if winner < 0 {
			t.Fatalf("no goroutine won; first error: %v", errs[0])
		}
		want := record("k", fmt.Sprintf("h%d", winner), now)
		for g, err := range errs {
			if g == winner {
				continue
			}
			got, ok := ora.Existing[ora.IdempotencyRecord](err)
			if ora.ErrorCode(err) != ora.ECONFLICT || !ok || !Equal(got, want) {
				t.Fatalf("goroutine %d: err = %v carrying %+v, want a conflict carrying %+v", g, err, got, want)
			}
		}
	})
}

func errExisting(err error) any {
	var e *ora.Error
	if errors.As(err, &e) {
		return e.Existing
	}
	return nil
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// result is what the wrapped test function returns.
type result struct {
	N    int    `json:"n"`
	Echo string `json:"echo"`
}

// counter is a wrapped function that counts its runs.
type counter struct {
	runs atomic.Int64
	err  error
}

func (c *counter) fn(echo string) func(context.Context) (result, error) {
	return func(context.Context) (result, error) {
		n := int(c.runs.Add(1))
		if c.err != nil {
			return result{}, c.err
		}
		return result{N: n, Echo: echo}, nil
	}
}

func runWrapper(t *testing.T, newStore func(t *testing.T) ora.IdempotencyStore) {
	setup := func(t *testing.T, opts ...func(*idempotency.Options)) (ora.IdempotencyStore, *idempotency.Idempotency, *Clock) {
		t.Helper()
		s := newStore(t)
		clock := NewClock()
		opts = append([]func(*idempotency.Options){func(o *idempotency.Options) { o.Now = clock.Now }}, opts...)
		return s, idempotency.New(s, opts...), clock
	}
	deadline := func(t *testing.T, clock *Clock, d time.Duration) context.Context {
		t.Helper()
		ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(d))
		t.Cleanup(cancel)
		return ctx
	}

	t.Run("first call runs and stores COMPLETED; a duplicate gets the stored response", func(t *testing.T) {
		s, idem, clock := setup(t)
		ctx := deadline(t, clock, 5*time.Minute)
		var c counter
		first, err := idempotency.Do(ctx, idem, "k", map[string]int{"a": 1}, c.fn("one"))
		mustNil(t, err)
		if want := (result{N: 1, Echo: "one"}); first != want {
			t.Fatalf("first call = %+v, want %+v", first, want)
		}
		rec := mustGet(t, s, "k")
		if rec.Status != ora.IdempotencyCompleted || string(rec.Response) != `{"n":1,"echo":"one"}` ||
			!rec.ExpiresAt.Equal(clock.Now().Add(time.Hour)) {
			t.Fatalf("record = %+v, want COMPLETED with the response, expiring in 1h", rec)
		}
		clock.Advance(59 * time.Minute)
		dup, err := idempotency.Do(ctx, idem, "k", map[string]int{"a": 1}, c.fn("two"))
		mustNil(t, err)
		if dup != first {
			t.Fatalf("duplicate = %+v, want the stored %+v", dup, first)
		}
		if got := c.runs.Load(); got != 1 {
			t.Fatalf("function ran %d times, want 1", got)
		}
	})

	t.Run("the lock is INPROGRESS until the context's deadline while the function runs", func(t *testing.T) {
		s, idem, clock := setup(t)
		ctx := deadline(t, clock, 90*time.Second+500*time.Millisecond)
		want, _ := ctx.Deadline()
		_, err := idempotency.Do(ctx, idem, "k", "p", func(ctx context.Context) (int, error) {
			rec := mustGet(t, s, "k")
			if rec.Status != ora.IdempotencyInProgress || !rec.InProgressExpiresAt.Equal(want) ||
				!rec.ExpiresAt.Equal(clock.Now().Add(time.Hour)) {
				t.Errorf("record while running = %+v, want INPROGRESS until %v, expiring in 1h", rec, want)
			}
			return 1, nil
		})
		mustNil(t, err)
	})

	t.Run("without a deadline the lock lasts InProgressFallback", func(t *testing.T) {
		s, idem, clock := setup(t, func(o *idempotency.Options) { o.InProgressFallback = 7 * time.Minute })
		_, err := idempotency.Do(context.Background(), idem, "k", "p", func(ctx context.Context) (int, error) {
			if rec := mustGet(t, s, "k"); !rec.InProgressExpiresAt.Equal(clock.Now().Add(7 * time.Minute)) {
				t.Errorf("in-progress expiry = %v, want now + 7m", rec.InProgressExpiresAt)
			}
			return 1, nil
		})
		mustNil(t, err)
	})

	t.Run("a call during a run gets a retryable InProgressError", func(t *testing.T) {
		_, idem, clock := setup(t)
		ctx := deadline(t, clock, time.Minute)
		var inner error
		_, err := idempotency.Do(ctx, idem, "k", "p", func(ctx context.Context) (int, error) {
			_, inner = idempotency.Do(ctx, idem, "k", "p", func(context.Context) (int, error) {
				t.Error("the duplicate ran while the first was in progress")
				return 2, nil
			})
			return 1, nil
		})
		mustNil(t, err)
		var ip *idempotency.InProgressError
		if !errors.As(inner, &ip) {
			t.Fatalf("duplicate during the run: %v, want *InProgressError", inner)
		}
		if d, _ := ctx.Deadline(); !ip.ExpiresAt.Equal(d) {
			t.Fatalf("InProgressError.ExpiresAt = %v, want the deadline %v", ip.ExpiresAt, d)
		}
		if got := ora.ErrorCode(inner); got != ora.ETRANSIENT {
			t.Fatalf("ora code = %q, want %q", got, ora.ETRANSIENT)
		}
		var te *taskerr.TransientError
		if !errors.As(taskerr.From(inner), &te) {
			t.Fatalf("taskerr.From = %T, want *taskerr.TransientError", taskerr.From(inner))
		}
	})

	t.Run("a crashed invocation's lock is taken over after its deadline", func(t *testing.T) {
		s, idem, clock := setup(t)
		hash, err := idempotency.PayloadHash("p")
		mustNil(t, err)
		crashed := ora.IdempotencyRecord{Key: "k", Status: ora.IdempotencyInProgress, PayloadHash: hash,
			ExpiresAt: clock.Now().Add(time.Hour), InProgressExpiresAt: clock.Now().Add(10 * time.Second)}
		mustNil(t, s.PutInProgress(context.Background(), crashed, clock.Now()))

		var c counter
		clock.Advance(9 * time.Second)
		_, err = idempotency.Do(deadline(t, clock, time.Minute), idem, "k", "p", c.fn("x"))
		if !idempotency.IsInProgress(err) {
			t.Fatalf("before the lock's expiry: %v, want *InProgressError", err)
		}
		clock.Advance(time.Second)
		got, err := idempotency.Do(deadline(t, clock, time.Minute), idem, "k", "p", c.fn("x"))
		mustNil(t, err)
		if want := (result{N: 1, Echo: "x"}); got != want || c.runs.Load() != 1 {
			t.Fatalf("after the lock's expiry = %+v with %d runs, want %+v with 1 run", got, c.runs.Load(), want)
		}
		if rec := mustGet(t, s, "k"); rec.Status != ora.IdempotencyCompleted {
			t.Fatalf("record status = %q, want COMPLETED", rec.Status)
		}
	})

	for _, tc := range []struct {
		name   string
		expiry time.Duration // 0: the default
		after  time.Duration
		runs   int64
	}{
		{"default expiry: 1s before the hour is a duplicate", 0, time.Hour - time.Second, 1},
		{"default expiry: at the hour the function runs again", 0, time.Hour, 2},
		{"Expiry 5m: 1s before is a duplicate", 5 * time.Minute, 5*time.Minute - time.Second, 1},
		{"Expiry 5m: after it the function runs again", 5 * time.Minute, 6 * time.Minute, 2},
	} {
		t.Run("record expiry checked in code: "+tc.name, func(t *testing.T) {
			var opts []func(*idempotency.Options)
			if tc.expiry > 0 {
				opts = append(opts, func(o *idempotency.Options) { o.Expiry = tc.expiry })
			}
			_, idem, clock := setup(t, opts...)
			var c counter
			_, err := idempotency.Do(deadline(t, clock, time.Minute), idem, "k", "p", c.fn("x"))
			mustNil(t, err)
			clock.Advance(tc.after)
			got, err := idempotency.Do(deadline(t, clock, time.Minute), idem, "k", "p", c.fn("x"))
			mustNil(t, err)
			if c.runs.Load() != tc.runs || got.N != int(tc.runs) {
				t.Fatalf("runs = %d, second result %+v; want %d runs, result n=%d", c.runs.Load(), got, tc.runs, tc.runs)
			}
		})
	}

	t.Run("same key, another payload: EINVALID on payload and nothing runs", func(t *testing.T) {
		_, idem, clock := setup(t)
		ctx := deadline(t, clock, time.Minute)
		var c counter
		_, err := idempotency.Do(ctx, idem, "k", map[string]any{"amount": 10}, c.fn("x"))
		mustNil(t, err)
		_, err = idempotency.Do(ctx, idem, "k", map[string]any{"amount": 11}, c.fn("x"))
		wantCode(t, err, ora.EINVALID, "payload")
		if c.runs.Load() != 1 {
			t.Fatalf("runs = %d, want 1", c.runs.Load())
		}
	})

	t.Run("another payload is rejected while the first is in progress too", func(t *testing.T) {
		_, idem, clock := setup(t)
		ctx := deadline(t, clock, time.Minute)
		var inner error
		_, err := idempotency.Do(ctx, idem, "k", "a", func(ctx context.Context) (int, error) {
			_, inner = idempotency.Do(ctx, idem, "k", "b", func(context.Context) (int, error) { return 2, nil })
			return 1, nil
		})
		mustNil(t, err)
		wantCode(t, inner, ora.EINVALID, "payload")
	})

	t.Run("the same payload with its keys in another order is a duplicate", func(t *testing.T) {
		_, idem, clock := setup(t)
		ctx := deadline(t, clock, time.Minute)
		var c counter
		type in struct {
			B int    `json:"b"`
			A string `json:"a"`
		}
		_, err := idempotency.Do(ctx, idem, "k", in{B: 2, A: "x"}, c.fn("x"))
		mustNil(t, err)
		_, err = idempotency.Do(ctx, idem, "k", map[string]any{"a": "x", "b": 2}, c.fn("x"))
		mustNil(t, err)
		if c.runs.Load() != 1 {
			t.Fatalf("runs = %d, want 1", c.runs.Load())
		}
	})

	t.Run("a failed run deletes the lock and returns its error unchanged", func(t *testing.T) {
		s, idem, clock := setup(t)
		ctx := deadline(t, clock, time.Minute)
		boom := errors.New("boom")
		c := counter{err: boom}
		_, err := idempotency.Do(ctx, idem, "k", "p", c.fn("x"))
		if err != boom {
			t.Fatalf("error = %v (%T), want the function's error itself", err, err)
		}
		_, err = s.Get(context.Background(), "k")
		wantCode(t, err, ora.ENOTFOUND, "")
		c.err = nil
		got, err := idempotency.Do(ctx, idem, "k", "p", c.fn("x"))
		mustNil(t, err)
		if got.N != 2 {
			t.Fatalf("retry = %+v, want the function to run again (n=2)", got)
		}
	})

	t.Run("KeyPrefix namespaces the stored key", func(t *testing.T) {
		s, idem, clock := setup(t, func(o *idempotency.Options) { o.KeyPrefix = "act" })
		_, err := idempotency.Do(deadline(t, clock, time.Minute), idem, "k", "p", func(context.Context) (int, error) { return 1, nil })
		mustNil(t, err)
		if rec := mustGet(t, s, "act#k"); rec.Status != ora.IdempotencyCompleted {
			t.Fatalf("record act#k = %+v, want COMPLETED", rec)
		}
	})

	t.Run("Wrap takes the key from the input and the input as payload", func(t *testing.T) {
		_, idem, clock := setup(t)
		ctx := deadline(t, clock, time.Minute)
		type input struct {
			ID     string `json:"id"`
			Amount int    `json:"amount"`
		}
		var runs atomic.Int64
		h := idempotency.Wrap(idem, func(in input) (string, error) {
			if in.ID == "" {
				return "", errors.New("no id")
			}
			return in.ID, nil
		}, func(ctx context.Context, in input) (int, error) {
			runs.Add(1)
			return in.Amount * 2, nil
		})
		for i, want := range []int{20, 20} {
			got, err := h(ctx, input{ID: "a", Amount: 10})
			if err != nil || got != want {
				t.Fatalf("call %d = %d, %v; want %d", i, got, err, want)
			}
		}
		_, err := h(ctx, input{ID: "a", Amount: 11})
		wantCode(t, err, ora.EINVALID, "payload")
		_, err = h(ctx, input{Amount: 1})
		wantCode(t, err, ora.EINVALID, "key")
		if runs.Load() != 1 {
			t.Fatalf("runs = %d, want 1", runs.Load())
		}
	})

	t.Run("concurrent calls with one key run the function once", func(t *testing.T) {
		_, idem, clock := setup(t)
		ctx := deadline(t, clock, time.Minute)
		var c counter
		results := make([]result, Concurrency)
		errs := make([]error, Concurrency)
		var wg sync.WaitGroup
		for g := range Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[g], errs[g] = idempotency.Do(ctx, idem, "k", "p", c.fn("once"))
			}()
		}
		wg.Wait()
		if got := c.runs.Load(); got != 1 {
			t.Fatalf("function ran %d times, want 1", got)
		}
		want := result{N: 1, Echo: "once"}
		ok := 0
		for g := range Concurrency {
			switch {
			case errs[g] == nil && results[g] == want:
				ok++
			case idempotency.IsInProgress(errs[g]):
				// retryable: the run was still in progress
			default:
				t.Fatalf("goroutine %d: %+v, %v; want %+v or *InProgressError", g, results[g], errs[g], want)
			}
		}
		if ok < 1 {
			t.Fatalf("%d calls got the result, want at least the one that ran", ok)
		}
	})
}
