package stepfn

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Clock is the engine's source of time: Wait states, retry intervals, task
// timeouts and heartbeats all go through it.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// VirtualClock is a clock whose time moves only when everything the engine
// runs is waiting on it: then it jumps straight to the earliest pending timer.
// A Wait of a day, a retry backoff or a task timeout therefore take no real
// time, and timestamps in the history are the virtual ones. The engine tells
// the clock when its goroutines are busy; used alone (without an Engine) the
// clock fires every timer at once, in order of due time.
type VirtualClock struct {
	mu     sync.Mutex
	now    time.Time
	active int
	seq    int64
	timers timerHeap
}

// NewVirtualClock returns a virtual clock reading start.
func NewVirtualClock(start time.Time) *VirtualClock {
	return &VirtualClock{now: start}
}

// Now returns the virtual time.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the virtual time once the clock has
// advanced by d.
func (c *VirtualClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	c.addLocked(d, ch, false)
	c.advanceLocked()
	c.mu.Unlock()
	return ch
}

func (c *VirtualClock) addLocked(d time.Duration, ch chan time.Time, wake bool) *vtimer {
	if d < 0 {
		d = 0
	}
	c.seq++
	t := &vtimer{at: c.now.Add(d), seq: c.seq, ch: ch, wake: wake, index: -1}
	heap.Push(&c.timers, t)
	return t
}

// advanceLocked fires due timers while nothing is busy.
func (c *VirtualClock) advanceLocked() {
	for c.active == 0 && len(c.timers) > 0 {
		t := heap.Pop(&c.timers).(*vtimer)
		if t.at.After(c.now) {
			c.now = t.at
		}
		t.fired = true
		if t.wake {
			c.active++ // counted for the goroutine the timer wakes
		}
		t.ch <- c.now
	}
}

func (c *VirtualClock) busy() {
	c.mu.Lock()
	c.active++
	c.mu.Unlock()
}

func (c *VirtualClock) idle() {
	c.mu.Lock()
	c.active--
	c.advanceLocked()
	c.mu.Unlock()
}

func (c *VirtualClock) timer(d time.Duration) (<-chan time.Time, func() bool) {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	t := c.addLocked(d, ch, true)
	c.mu.Unlock()
	return ch, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.fired {
			return false
		}
		heap.Remove(&c.timers, t.index)
		return true
	}
}

type vtimer struct {
	at    time.Time
	seq   int64
	ch    chan time.Time
	wake  bool
	fired bool
	index int
}

type timerHeap []*vtimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*vtimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// activity is how the engine drives a clock: busy and idle bracket the work of
// its goroutines (a VirtualClock advances only when none is busy), and timer is
// a wake-up whose firing counts the woken goroutine as busy again.
type activity interface {
	Clock
	busy()
	idle()
	timer(d time.Duration) (<-chan time.Time, func() bool)
}

// plainClock adapts any Clock: it has no notion of busy.
type plainClock struct{ Clock }

func (plainClock) busy() {}
func (plainClock) idle() {}
func (p plainClock) timer(d time.Duration) (<-chan time.Time, func() bool) {
	return p.After(d), func() bool { return true }
}

func asActivity(c Clock) activity {
	if a, ok := c.(activity); ok {
		return a
	}
	return plainClock{c}
}

// sleep waits d on the clock, or until ctx is done.
func sleep(ctx context.Context, clk activity, d time.Duration) error {
	ch, cancel := clk.timer(d)
	clk.idle()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		if !cancel() {
			<-ch // fired already: it counted us busy
		} else {
			clk.busy()
		}
		return ctx.Err()
	}
}

// waiter is a one-shot rendezvous between a goroutine that waits (idle on the
// clock) and one that delivers a result, counting the waiter busy as it does so
// that a VirtualClock never sees a moment where nobody is busy in between.
type waiter struct {
	mu   sync.Mutex
	done bool
	ch   chan waitResult
}

type waitResult struct {
	out []byte
	err *stateError
}

func newWaiter() *waiter { return &waiter{ch: make(chan waitResult, 1)} }

// deliver hands r to the waiter; false when it stopped waiting already.
func (w *waiter) deliver(clk activity, r waitResult) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return false
	}
	w.done = true
	clk.busy()
	w.ch <- r
	return true
}

const (
	waitGot = iota
	waitTimer
	waitCanceled
)

// await waits for a delivery, a timer of d (none when d <= 0) or ctx. When the
// timer fires, check decides whether to give up (true) or wait again for the
// duration it returns.
func (w *waiter) await(ctx context.Context, clk activity, d time.Duration, check func() (bool, time.Duration)) (waitResult, int) {
	for {
		var tch <-chan time.Time
		cancel := func() bool { return true }
		if d > 0 {
			tch, cancel = clk.timer(d)
		}
		clk.idle()
		select {
		case r := <-w.ch:
			if !cancel() {
				<-tch
				clk.idle()
			}
			return r, waitGot
		case <-tch:
			w.mu.Lock()
			if w.done {
				w.mu.Unlock()
				r := <-w.ch
				clk.idle()
				return r, waitGot
			}
			stop, again := true, time.Duration(0)
			if check != nil {
				stop, again = check()
			}
			if stop {
				w.done = true
				w.mu.Unlock()
				return waitResult{}, waitTimer
			}
			w.mu.Unlock()
			d = again
		case <-ctx.Done():
			w.mu.Lock()
			already := w.done
			w.done = true
			w.mu.Unlock()
			if already {
				<-w.ch
			} else {
				clk.busy()
			}
			if !cancel() {
				<-tch
				clk.idle()
			}
			return waitResult{}, waitCanceled
		}
	}
}
