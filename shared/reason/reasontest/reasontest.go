// Package reasontest is the contract suite for the reasoner's stores: every
// reason.PatternCache and reason.SpendMeter (SQLite and DynamoDB) runs it.
package reasontest

import (
	"context"

	"math"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// Clock is a settable clock the store under test must read its time from.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// RunPatternCache runs the PatternCache contract; open returns a fresh, empty
// store reading time from clock.
func RunPatternCache(t *testing.T, open func(t *testing.T, clock *Clock) reason.PatternCache) {
	ctx := context.Background()
	start := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)

	t.Run("missing is not found", func(t *testing.T) {
		p := open(t, NewClock(start))
		if _, err := p.Get(ctx, "fp-none", "m1"); ora.ErrorCode(err) != ora.ENOTFOUND {
			t.Errorf("Get = %v, want ENOTFOUND", err)
		}
	})
	t.Run("put then get, replace", func(t *testing.T) {
		p := open(t, NewClock(start))
		if err := p.Put(ctx, "fp-1", "m1", []byte(`{"v":1}`), time.Hour); err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := p.Get(ctx, "fp-1", "m1")
		if err != nil || string(got) != `{"v":1}` {
			t.Fatalf("Get = %s, %v; want {\"v\":1}", got, err)
		}
		if err := p.Put(ctx, "fp-1", "m1", []byte(`{"v":2}`), time.Hour); err != nil {
			t.Fatalf("Put again: %v", err)
		}
		if got, err := p.Get(ctx, "fp-1", "m1"); err != nil || string(got) != `{"v":2}` {
			t.Errorf("Get after replace = %s, %v", got, err)
		}
	})
	t.Run("expires after ttl", func(t *testing.T) {
		clock := NewClock(start)
		p := open(t, clock)
		if err := p.Put(ctx, "fp-2", "m1", []byte(`{}`), time.Hour); err != nil {
			t.Fatal(err)
		}
		clock.Advance(59 * time.Minute)
		if _, err := p.Get(ctx, "fp-2", "m1"); err != nil {
			t.Errorf("Get before expiry: %v", err)
		}
		clock.Advance(time.Minute)
		if _, err := p.Get(ctx, "fp-2", "m1"); ora.ErrorCode(err) != ora.ENOTFOUND {
			t.Errorf("Get at expiry = %v, want ENOTFOUND", err)
		}
	})
	t.Run("another motor version does not match", func(t *testing.T) {
		p := open(t, NewClock(start))
		if err := p.Put(ctx, "fp-3", "rules=1;prompts=a;model=x", []byte(`{}`), time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Get(ctx, "fp-3", "rules=1;prompts=b;model=x"); ora.ErrorCode(err) != ora.ENOTFOUND {
			t.Errorf("Get under a new motor = %v, want ENOTFOUND", err)
		}
		if err := p.Put(ctx, "fp-3", "rules=1;prompts=b;model=x", []byte(`{"new":true}`), time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Get(ctx, "fp-3", "rules=1;prompts=a;model=x"); ora.ErrorCode(err) != ora.ENOTFOUND {
			t.Errorf("Get under the old motor = %v, want ENOTFOUND", err)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		p := open(t, NewClock(start))
		for name, put := range map[string]func() error{
			"empty fingerprint": func() error { return p.Put(ctx, "", "m", []byte(`{}`), time.Hour) },
			"empty motor":       func() error { return p.Put(ctx, "fp", "", []byte(`{}`), time.Hour) },
			"zero ttl":          func() error { return p.Put(ctx, "fp", "m", []byte(`{}`), 0) },
			"empty body":        func() error { return p.Put(ctx, "fp", "m", nil, time.Hour) },
		} {
			if err := put(); ora.ErrorCode(err) != ora.EINVALID {
				t.Errorf("%s: Put = %v, want EINVALID", name, err)
			}
		}
		if _, err := p.Get(ctx, "fp", "m"); ora.ErrorCode(err) != ora.ENOTFOUND {
			t.Errorf("a rejected Put wrote something: %v", err)
		}
	})
}

// RunSpendMeter runs the SpendMeter contract; open returns a fresh, empty
// store.
func RunSpendMeter(t *testing.T, open func(t *testing.T) reason.SpendMeter) {
	ctx := context.Background()
	t.Run("nothing spent is zero", func(t *testing.T) {
		s := open(t)
		if got, err := s.Total(ctx, "2026-11-22"); err != nil || got != 0 {
			t.Errorf("Total = %v, %v; want 0", got, err)
		}
	})
	t.Run("adds accumulate per day", func(t *testing.T) {
		s := open(t)
		if got, err := s.Add(ctx, "2026-11-22", 0.012345); err != nil || !near(got, 0.012345) {
			t.Fatalf("Add = %v, %v", got, err)
		}
		if got, err := s.Add(ctx, "2026-11-22", 1.5); err != nil || !near(got, 1.512345) {
			t.Fatalf("Add = %v, %v; want 1.512345", got, err)
		}
		if got, err := s.Total(ctx, "2026-11-22"); err != nil || !near(got, 1.512345) {
			t.Errorf("Total = %v, %v; want 1.512345", got, err)
		}
		if got, err := s.Total(ctx, "2026-11-23"); err != nil || got != 0 {
			t.Errorf("next day = %v, %v; want 0", got, err)
		}
	})
	t.Run("concurrent adds are atomic", func(t *testing.T) {
		s := open(t)
		const n = 20
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Add(ctx, "2026-11-24", 0.01); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("Add: %v", err)
		}
		if got, err := s.Total(ctx, "2026-11-24"); err != nil || !near(got, 0.2) {
			t.Errorf("Total = %v, %v; want 0.2", got, err)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		s := open(t)
		for name, add := range map[string]func() error{
			"bad day":  func() error { _, err := s.Add(ctx, "22/11/2026", 1); return err },
			"negative": func() error { _, err := s.Add(ctx, "2026-11-25", -1); return err },
			"NaN":      func() error { _, err := s.Add(ctx, "2026-11-25", math.NaN()); return err },
		} {
			if err := add(); ora.ErrorCode(err) != ora.EINVALID {
				t.Errorf("%s: Add = %v, want EINVALID", name, err)
			}
		}
		if got, err := s.Total(ctx, "2026-11-25"); err != nil || got != 0 {
			t.Errorf("a rejected Add wrote %v (%v)", got, err)
		}
		if _, err := s.Total(ctx, "yesterday"); ora.ErrorCode(err) != ora.EINVALID {
			t.Errorf("Total(bad day) = %v, want EINVALID", err)
		}
	})
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
