package reason_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// virtualClock fires timers only when the test advances it.
type virtualClock struct {
	mu     sync.Mutex
	now    time.Duration
	timers []*vtimer
}

type vtimer struct {
	at      time.Duration
	f       func()
	stopped bool
}

func (c *virtualClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &vtimer{at: c.now + d, f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// Advance moves the clock by d and runs the timers due, in order.
func (c *virtualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now += d
	var due []*vtimer
	rest := c.timers[:0]
	for _, t := range c.timers {
		if t.at <= c.now && !t.stopped {
			due = append(due, t)
		} else if !t.stopped {
			rest = append(rest, t)
		}
	}
	c.timers = rest
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

func scheduled(id, event string) ora.ReasonerInput {
	in := input(id)
	in.Signal.Source = ora.Source{Type: ora.SourceSchedule, Name: "hourly-check", Schedule: "rate(1 hour)", JobName: event}
	return in
}

// batchReply decides about each signal of the batch (named by its number,
// in the order the ids are given) in one record_observation call.
func batchReply(ids ...string) bedrocktest.Reply {
	var ds []map[string]any
	for i := range ids {
		ds = append(ds, map[string]any{"signal": i + 1, "decision": safeOPS})
	}
	return stage(0.97, 2, "one look at the batch", map[string]any{"decisions": ds})
}

type waiter struct {
	d   ora.ReasonerDecision
	err error
}

func TestBatching(t *testing.T) {
	cfg := testConfig()
	bc := reason.DefaultBatchConfig()
	newBatcher := func(t *testing.T, replies ...bedrocktest.Reply) (*reason.Batcher, *bedrocktest.Server, *virtualClock) {
		srv := bedrocktest.New(t, replies...)
		r, err := reason.NewReasoner(bedrock.New(srv.Client(1)), cfg, func(o *reason.Options) { o.Now = func() time.Time { return now } })
		if err != nil {
			t.Fatal(err)
		}
		clock := &virtualClock{}
		return reason.NewBatcher(r, bc, clock), srv, clock
	}
	// join starts Reason for in and waits until the batch holds want signals.
	join := func(t *testing.T, b *reason.Batcher, in ora.ReasonerInput, want int) <-chan waiter {
		ch := make(chan waiter, 1)
		go func() {
			d, err := b.Reason(context.Background(), in)
			ch <- waiter{d, err}
		}()
		key := bc.BatchKey(in.Signal)
		for i := 0; b.Pending(key) != want; i++ {
			if i > 5000 {
				t.Fatalf("batch %q holds %d signals, want %d", key, b.Pending(key), want)
			}
			time.Sleep(time.Millisecond)
		}
		return ch
	}

	t.Run("signals inside the window share one model call", func(t *testing.T) {
		b, srv, clock := newBatcher(t, batchReply("sig-a", "sig-b", "sig-c"))
		a := join(t, b, scheduled("sig-a", "tick"), 1)
		clock.Advance(300 * time.Millisecond)
		bb := join(t, b, scheduled("sig-b", "tick"), 2)
		clock.Advance(600 * time.Millisecond)
		c := join(t, b, scheduled("sig-c", "tick"), 3)
		if n := len(srv.Requests()); n != 0 {
			t.Fatalf("%d model calls before the window closed", n)
		}
		clock.Advance(100 * time.Millisecond) // 1 s after sig-a
		got := map[string]waiter{"sig-a": <-a, "sig-b": <-bb, "sig-c": <-c}
		reqs := srv.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d model calls, want 1 for the batch", len(reqs))
		}
		for _, id := range []string{"sig-a", "sig-b", "sig-c"} {
			if !strings.Contains(reqs[0].UserText(), " "+id+": schedule") {
				t.Errorf("the batch call lacks signal %s", id)
			}
			w := got[id]
			if w.err != nil {
				t.Fatalf("%s: %v", id, w.err)
			}
			d := w.d
			if d.ID != reason.DecisionID(id) || d.SignalID != id || d.PacketDigest != "digest-"+id || d.Model.BatchSize != 3 || d.Model.BatchID == "" || strings.Join(d.Model.BatchSignals, ",") != "sig-a,sig-b,sig-c" || d.Model.PacketViewDigest == "" {
				t.Errorf("%s: decision %+v (trace %+v): want its own id, signal and packet, in a batch of 3", id, d, d.Model)
			}
		}
		if got["sig-a"].d.Model.BatchID != got["sig-c"].d.Model.BatchID {
			t.Errorf("one batch, two ids")
		}
	})
	t.Run("signals outside the window are reasoned apart", func(t *testing.T) {
		b, srv, clock := newBatcher(t, stage(0.97, 2, "a alone", safeOPS), stage(0.97, 2, "b alone", safeOPS))
		a := join(t, b, scheduled("sig-a", "tick"), 1)
		clock.Advance(time.Second)
		if w := <-a; w.err != nil || w.d.Model.BatchSize != 0 || len(srv.Requests()) != 1 {
			t.Fatalf("sig-a: %+v, %v after %d calls", w.d.Model, w.err, len(srv.Requests()))
		}
		clock.Advance(200 * time.Millisecond)
		bb := join(t, b, scheduled("sig-b", "tick"), 1)
		clock.Advance(time.Second)
		if w := <-bb; w.err != nil || w.d.SignalID != "sig-b" || len(srv.Requests()) != 2 {
			t.Fatalf("sig-b: %v after %d calls, want its own call", w.err, len(srv.Requests()))
		}
	})
	t.Run("other batch keys do not mix", func(t *testing.T) {
		b, srv, clock := newBatcher(t, stage(0.97, 2, "x", safeOPS), stage(0.97, 2, "y", safeOPS))
		a := join(t, b, scheduled("sig-a", "tick"), 1)
		o := join(t, b, scheduled("sig-o", "other"), 1)
		clock.Advance(time.Second)
		wa, wo := <-a, <-o
		if wa.err != nil || wo.err != nil || len(srv.Requests()) != 2 || wa.d.Model.BatchSize != 0 {
			t.Fatalf("errors %v %v, %d calls: want two separate calls", wa.err, wo.err, len(srv.Requests()))
		}
	})
	t.Run("webhooks are not batched by default", func(t *testing.T) {
		b, srv, _ := newBatcher(t, stage(0.97, 2, "now", safeOPS))
		d, err := b.Reason(context.Background(), input("sig-w")) // a webhook: no window, no clock
		if err != nil || d.SignalID != "sig-w" || len(srv.Requests()) != 1 {
			t.Fatalf("webhook: %v, %d calls", err, len(srv.Requests()))
		}
	})
	t.Run("a full batch closes before the window", func(t *testing.T) {
		small := bc
		small.MaxSize = 2
		srv := bedrocktest.New(t, batchReply("sig-a", "sig-b"))
		r, err := reason.NewReasoner(bedrock.New(srv.Client(1)), cfg, func(o *reason.Options) { o.Now = func() time.Time { return now } })
		if err != nil {
			t.Fatal(err)
		}
		b := reason.NewBatcher(r, small, &virtualClock{})
		a := join(t, b, scheduled("sig-a", "tick"), 1)
		d, err := b.Reason(context.Background(), scheduled("sig-b", "tick"))
		if err != nil || d.SignalID != "sig-b" || d.Model.BatchSize != 2 {
			t.Fatalf("sig-b: %+v %v", d.Model, err)
		}
		if w := <-a; w.err != nil || w.d.SignalID != "sig-a" {
			t.Fatalf("sig-a: %v", w.err)
		}
	})
	t.Run("an unusable batch answer: each signal is reasoned alone", func(t *testing.T) {
		b, srv, clock := newBatcher(t, batchReply("sig-a"), stage(0.97, 2, "alone", safeOPS), stage(0.97, 2, "alone", safeOPS))
		a := join(t, b, scheduled("sig-a", "tick"), 1)
		bb := join(t, b, scheduled("sig-b", "tick"), 2)
		clock.Advance(time.Second)
		for i, w := range []waiter{<-a, <-bb} {
			if want := []string{"sig-a", "sig-b"}[i]; w.err != nil || w.d.SignalID != want || w.d.Model.BatchID != "" {
				t.Errorf("%s: decision %+v err %v: want its own decision, outside any batch", want, w.d.Model, w.err)
			}
		}
		if n := len(srv.Requests()); n != 3 {
			t.Errorf("%d model calls, want the batch's and one per signal", n)
		}
	})
}
