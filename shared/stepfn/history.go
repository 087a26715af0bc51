package stepfn

import (
	"context"
	"time"
)

// deferrable reports whether a durable store may save the event with the
// next one instead of at once: the events between two points where the
// execution waits on anything outside the engine (a task's invocation and
// its result, a Wait state, a token), which a resume from the previous save
// renders again as they were. Every other event (a task started or ended, a
// Wait state entered, a failure, the execution's end) saves the record, its
// checkpoint and every event before it in one write, before the engine
// goes on.
func (c *storedEvent) deferrable() bool {
	switch c.kind {
	case evStateEntered:
		return c.st.enteredType != "WaitStateEntered"
	case evStateExited, evLambdaScheduled, evParallelStarted, evParallelSucceeded,
		evMapStarted, evMapSucceeded, evIterationStarted, evIterationSucceeded:
		return true
	case evFull:
		t := c.val.(*HistoryEvent).Type
		return t == "TaskScheduled" || t == "LambdaFunctionScheduled"
	}
	return false
}

// emitLocked appends an event and saves the record with the current checkpoint.
func (x *execution) emitLocked(prev int64, ev storedEvent) int64 {
	return x.emitLockedAt(prev, ev, x.e.clk.Now())
}

// emitLockedAt is emitLocked with the event's timestamp.
func (x *execution) emitLockedAt(prev int64, ev storedEvent, now time.Time) int64 {
	x.nextID++
	id := x.nextID
	if ev.kind == evFull {
		ev.val.(*HistoryEvent).ID = id
	}
	ev.Prev = prev
	if now.Before(x.lastAt) {
		now = x.lastAt // a reading taken before the previous event's
	}
	x.lastAt = now
	ev.setTime(now, id)
	if x.shutdown {
		return id
	}
	typ := ""
	if ev.kind == evFull {
		typ = ev.typ()
	}
	if x.e.durable && x.rec.Status == StatusRunning && ev.deferrable() {
		// Saved with the next event that is not: no work outside the
		// engine happens in between.
		x.pending = append(x.pending, ev.expand(id))
		return id
	}
	var parts []CheckpointPart
	if x.e.durable || typ == "ExecutionFailed" || typ == "ExecutionAborted" || typ == "ExecutionTimedOut" {
		// A MemoryStore does not outlive the process: its checkpoint is only
		// needed once the execution has stopped, for a redrive.
		x.rec.Checkpoint = nil
		switch {
		case x.root == nil:
			x.dirty = nil // succeeded: nothing resumes it
		case x.e.parts != nil:
			// The execution's flow, its input when it changed (a Map's
			// input is as large as its items), and the children that
			// changed.
			x.rec.Checkpoint = x.root.shallowJSON(false)
			parts = x.takeParts()
			if in := x.root.Input; len(x.savedIn) == 0 || &in[0] != &x.savedIn[0] {
				parts = append(parts, CheckpointPart{Key: inputPart, Data: in})
				x.savedIn = in
			}
		default:
			x.root.fillOutputs()
			x.rec.Checkpoint = marshal(x.root)
		}
	}
	if x.e.mem != nil && typ != "ExecutionRedriven" && x.rec.Status == StatusRunning {
		// In memory the live record is x.rec itself (DescribeExecution reads
		// it): only the event needs storing until the execution stops.
		if x.mem == nil {
			x.mem = x.e.mem.historyOf(x.rec.ExecutionArn)
		}
		if x.mem != nil {
			// The execution's lock makes this the history's one writer.
			if ev.kind != evFull && x.mem.n.Load()+1 != id {
				// The event's position is not its ID: keep the ID.
				ev = fullEvent(ev.expand(id))
			}
			x.mem.add(&ev)
			return id
		}
	}
	events := append(x.pending, ev.expand(id))
	x.pending = x.pending[:0]
	var err error
	if x.e.parts != nil {
		err = x.e.parts.SaveExecutionParts(context.Background(), x.rec, parts, events)
	} else {
		err = x.e.store.SaveExecution(context.Background(), x.rec, events)
	}
	if err != nil {
		x.e.log.Error("stepfn: save execution", "execution", x.rec.ExecutionArn, "event", ev.typ(), "err", err)
	}
	return id
}

func (f *frame) emit(ev storedEvent) int64 {
	f.x.mu.Lock()
	f.x.markDirty(f.part)
	id := f.x.emitLocked(f.last, ev)
	f.x.mu.Unlock()
	f.last = id
	return id
}

// emitAt emits an event with the timestamp now: for events that follow one
// another with no wait between them, which take one reading of the clock.
func (f *frame) emitAt(ev storedEvent, now time.Time) int64 {
	f.x.mu.Lock()
	f.x.markDirty(f.part)
	id := f.x.emitLockedAt(f.last, ev, now)
	f.x.mu.Unlock()
	f.last = id
	return id
}

// emitEvent emits an event given with its details.
func (f *frame) emitEvent(ev HistoryEvent) int64 { return f.emit(fullEvent(ev)) }
