package stepfn

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// execution is a live execution.
type execution struct {
	e      *Engine
	m      *machine
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	rec       ExecutionRecord
	root      *frameCP
	nextID    int64
	stopKind  string
	stopErr   string
	stopCause string
	shutdown  bool           // the engine closed: stop without recording anything
	holding   bool           // a stop holds the clock until the end
	mem       *memHistory    // the history in a MemoryStore, appended to directly
	dirty     []*childCP     // the children changed since the last save, with a PartStore
	savedIn   []byte         // the input of the root flow last saved as inputPart
	pending   []HistoryEvent // events a durable store has yet to save (deferrable)
	startPrev int64          // the id of the last event before launch
	lastAt    time.Time      // the timestamp of the last event

	baseOnce sync.Once
	input    any // the execution's input, once parsed
	base     struct{ exec, machine map[string]any }
}

// newExecution returns an execution of m for rec; in is its input when the
// caller has parsed it already.
func (e *Engine) newExecution(m *machine, rec ExecutionRecord, in any) *execution {
	ctx, cancel := context.WithCancel(context.Background())
	return &execution{e: e, m: m, rec: rec, ctx: ctx, cancel: cancel, done: make(chan struct{}), input: in}
}

// contextBase returns the Execution and StateMachine entries of the context
// object, built on first use: most executions never read them.
func (x *execution) contextBase() (exec, machine map[string]any) {
	x.baseOnce.Do(func() {
		x.mu.Lock()
		rec := x.rec.Execution
		x.mu.Unlock()
		in := x.input
		if in == nil {
			in, _ = parseJSON(rec.Input)
		}
		smName := rec.StateMachineArn[strings.LastIndexByte(rec.StateMachineArn, ':')+1:]
		exec := map[string]any{
			"Id": rec.ExecutionArn, "Input": in, "Name": rec.Name,
			"RoleArn":      x.e.roleArn,
			"StartTime":    rec.StartDate.UTC().Format(time.RFC3339Nano),
			"RedriveCount": int64(rec.RedriveCount),
		}
		if !rec.RedriveDate.IsZero() {
			exec["RedriveTime"] = rec.RedriveDate.UTC().Format(time.RFC3339Nano)
		}
		x.base.exec = exec
		x.base.machine = map[string]any{"Id": rec.StateMachineArn, "Name": smName}
	})
	return x.base.exec, x.base.machine
}

// launch runs the execution in its own goroutine; prev is the id of the last
// event already in its history.
func (e *Engine) launch(x *execution, prev int64) {
	e.clk.busy()
	x.startPrev = prev
	e.spawn(x)
}

func (x *execution) work() { x.run(x.startPrev) }

func (x *execution) run(prev int64) {
	clk := x.e.clk
	defer clk.idle()
	if x.m.timeoutSeconds > 0 {
		from := x.rec.StartDate
		if !x.rec.RedriveDate.IsZero() {
			from = x.rec.RedriveDate
		}
		d := from.Add(time.Duration(x.m.timeoutSeconds) * time.Second).Sub(clk.Now())
		clk.busy()
		go func() {
			defer clk.idle()
			if sleep(x.ctx, clk, d) == nil {
				x.stop(StatusTimedOut, ErrTimeout, fmt.Sprintf("The execution exceeded its TimeoutSeconds of %d", x.m.timeoutSeconds))
			}
		}()
	}
	f := &frame{x: x, m: x.m, cp: x.root, last: prev}
	out, serr := f.run(x.ctx)
	x.mu.Lock()
	kind, errName, cause, shutdown := x.stopKind, x.stopErr, x.stopCause, x.shutdown
	x.mu.Unlock()
	last := f.last
	switch {
	case shutdown:
		if !x.e.durable {
			// A MemoryStore shared with a later Engine: leave it the
			// checkpoint to Resume from.
			x.mu.Lock()
			x.root.fillOutputs()
			x.rec.Checkpoint = marshal(x.root)
			if err := x.e.store.SaveExecution(context.Background(), x.rec, nil); err != nil {
				x.e.log.Error("stepfn: save execution", "execution", x.rec.ExecutionArn, "err", err)
			}
			x.mu.Unlock()
		}
		x.release()
	case kind != "":
		x.finish(kind, nil, errName, cause, last)
	case serr != nil:
		x.finish(StatusFailed, nil, serr.Name, serr.Cause, last)
	default:
		x.finish(StatusSucceeded, out, "", "", last)
	}
}

// stop ends the execution as kind (ABORTED or TIMED_OUT) unless it already stopped.
func (x *execution) stop(kind, errName, cause string) {
	x.mu.Lock()
	if x.stopKind == "" && x.rec.Status == StatusRunning {
		x.stopKind, x.stopErr, x.stopCause = kind, errName, cause
		x.hold()
	}
	x.mu.Unlock()
	x.cancel()
}

// hold keeps a VirtualClock still from a stop until the execution has ended,
// so that nothing it was waiting on fires while it winds down. Call with x.mu held.
func (x *execution) hold() {
	if !x.holding {
		x.holding = true
		x.e.clk.busy()
	}
}

// finish records the execution's end and releases Wait.
func (x *execution) finish(status string, out any, errName, cause string, prev int64) {
	x.mu.Lock()
	if x.rec.Status == StatusRunning {
		x.rec.Status = status
		now := x.e.clk.Now()
		x.rec.StopDate = now
		var ev storedEvent
		switch status {
		case StatusSucceeded:
			raw := marshal(out)
			x.rec.Output = raw
			x.root = nil
			ev = fullEvent(HistoryEvent{Type: "ExecutionSucceeded", ExecutionSucceededEventDetails: &OutputDetails{Output: string(raw)}})
		case StatusFailed:
			x.rec.Error, x.rec.Cause = errName, cause
			ev = fullEvent(HistoryEvent{Type: "ExecutionFailed", ExecutionFailedEventDetails: &FailureDetails{Error: errName, Cause: cause}})
		case StatusAborted:
			x.rec.Error, x.rec.Cause = errName, cause
			ev = fullEvent(HistoryEvent{Type: "ExecutionAborted", ExecutionAbortedEventDetails: &FailureDetails{Error: errName, Cause: cause}})
		case StatusTimedOut:
			x.rec.Error, x.rec.Cause = errName, cause
			ev = fullEvent(HistoryEvent{Type: "ExecutionTimedOut", ExecutionTimedOutEventDetails: &FailureDetails{Error: errName, Cause: cause}})
		}
		x.emitLockedAt(prev, ev, now)
		if x.m != nil {
			x.m.historyLen.Store(x.nextID)
		}
	}
	x.mu.Unlock()
	x.release()
}

// release forgets the live execution and releases Wait.
func (x *execution) release() {
	x.e.mu.Lock()
	if x.e.live[x.rec.ExecutionArn] == x {
		delete(x.e.live, x.rec.ExecutionArn)
	}
	x.e.mu.Unlock()
	x.cancel()
	x.mu.Lock()
	if x.holding {
		x.holding = false
		x.e.clk.idle()
	}
	x.mu.Unlock()
	close(x.done)
}

func (x *execution) lastID() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.nextID
}
