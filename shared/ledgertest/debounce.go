package ledgertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Clock is a settable clock for debounce tests: no sleeps, no wall time.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

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

// RunDebounce runs the debounce contract against the debouncers newDebouncer
// returns; the debouncer must read the time from now only. newDebouncer is
// called once per subtest and must return an empty store.
func RunDebounce(t *testing.T, newDebouncer func(t *testing.T, now func() time.Time) ora.Debouncer) {
	t.Helper()
	t.Run("FirstWinsThenRepeatsUntilTheWindowEnds", func(t *testing.T) {
		clock := NewClock(base)
		d := newDebouncer(t, clock.Now)
		ctx := context.Background()
		steps := []struct {
			name    string
			advance time.Duration
			key     string
			want    bool
		}{
			{"first call", 0, "k", true},
			{"repeat at once", 0, "k", false},
			{"another key", 0, "other", true},
			{"repeat just inside the window", ora.DebounceWindow - time.Millisecond, "k", false},
			{"repeat just after the window", 2 * time.Millisecond, "k", true},
			{"repeat after a new win", 100 * time.Millisecond, "k", false},
			{"long after", time.Hour, "k", true},
			{"other key long after", 0, "other", true},
		}
		for _, s := range steps {
			clock.Advance(s.advance)
			got, err := d.Debounce(ctx, s.key, ora.DebounceWindow)
			if err != nil {
				t.Fatalf("%s: Debounce: %v", s.name, err)
			}
			if got != s.want {
				t.Errorf("%s: Debounce(%q) at +%v got %v, want %v", s.name, s.key, clock.Now().Sub(base), got, s.want)
			}
		}
	})
	t.Run("ConcurrentOneWinsPerWindow", func(t *testing.T) {
		clock := NewClock(base)
		d := newDebouncer(t, clock.Now)
		for window := range 3 {
			wins := raceDebounce(t, d, "burst", Concurrency)
			if wins != 1 {
				t.Errorf("window %d: %d of %d callers won, want exactly 1", window, wins, Concurrency)
			}
			clock.Advance(ora.DebounceWindow + time.Millisecond)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		clock := NewClock(base)
		d := newDebouncer(t, clock.Now)
		cases := []struct {
			name   string
			key    string
			window time.Duration
			field  string
		}{
			{"empty key", "", ora.DebounceWindow, "key"},
			{"zero window", "k", 0, "window"},
			{"negative window", "k", -time.Second, "window"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := d.Debounce(context.Background(), tc.key, tc.window)
				if got := ora.ErrorCode(err); got != ora.EINVALID {
					t.Fatalf("error code got %q (%v), want %q", got, err, ora.EINVALID)
				}
				if got := ora.ErrorField(err); got != tc.field {
					t.Errorf("field got %q, want %q", got, tc.field)
				}
			})
		}
		// A rejected call holds no key.
		ok, err := d.Debounce(context.Background(), "k", ora.DebounceWindow)
		if err != nil || !ok {
			t.Errorf("Debounce after rejected calls got %v, %v; want true, nil", ok, err)
		}
	})
}

// raceDebounce has n goroutines call Debounce on one key at once and returns
// how many won.
func raceDebounce(t *testing.T, d ora.Debouncer, key string, n int) int {
	t.Helper()
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		won   = make([]bool, n)
		errs  = make([]error, n)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			won[i], errs[i] = d.Debounce(context.Background(), key, ora.DebounceWindow)
		}()
	}
	close(start)
	wg.Wait()
	wins := 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("caller %d: %v", i, fmt.Errorf("debounce %s: %w", key, errs[i]))
		}
		if won[i] {
			wins++
		}
	}
	return wins
}
