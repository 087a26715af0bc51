package stepfn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// call is one task invocation.
type call struct {
	exec, state, resource, function string
	ig                              *integration // a service integration's parts, nil for a Lambda function ARN
	payload                         []byte
	token                           string
}

// lambdaInvoke reports whether the call is Lambda's service integration
// (arn:aws:states:::lambda:invoke), whose invoker answers with the
// integration's whole response ({StatusCode, Payload, ExecutedVersion, ...}).
//
// The call stays small (at most 128 bytes) so that the goroutine f.invoke
// starts captures it by value, without a heap allocation.
func (c call) lambdaInvoke() bool { return c.ig != nil && c.ig.service == "lambda" }

// invoker runs a task's call and returns its JSON result.
type invoker func(ctx context.Context, c call) ([]byte, *stateError)

// maxPayload is AWS's limit on a state's input or output, in bytes.
const maxPayload = 256 * 1024

// errStopped marks work cut short by StopExecution or the execution's timeout.
var errStopped = &stateError{Name: "stepfn.Stopped"}

// frameCP is the checkpoint of one flow (the execution, a Parallel branch, a
// Map iteration): the state it is in and that state's raw input, plus what a
// resumed or redriven run needs to continue that state.
type frameCP struct {
	State     string          `json:"state"`
	Input     json.RawMessage `json:"input"`
	Entered   bool            `json:"entered,omitempty"`
	EnteredAt time.Time       `json:"enteredAt,omitzero"`
	Retries   []int64         `json:"retries,omitempty"`
	Token     string          `json:"token,omitempty"`
	Invoked   bool            `json:"invoked,omitempty"`
	TaskStart time.Time       `json:"taskStart,omitzero"`
	WaitUntil time.Time       `json:"waitUntil,omitzero"`
	Children  []*childCP      `json:"children,omitempty"`
	Parts     int             `json:"parts,omitempty"` // children kept as parts of a PartStore instead
	Vars      json.RawMessage `json:"vars,omitempty"`  // the variables the flow assigned

	input any
	vars  map[string]any // Vars, as values during a run
}

// childCP is a branch or iteration of the Parallel or Map state a frame is in.
type childCP struct {
	Status string          `json:"status,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Frame  *frameCP        `json:"frame,omitempty"`

	out   any    // the output, before it is marshalled into Output
	key   string // its key as a part of a PartStore's checkpoint
	dirty bool   // changed since it was last saved as a part
}

// childKey returns the part key of child i of the flow whose part key is
// parent ("" for the execution's own flow).
func childKey(parent string, i int) string {
	if parent == "" {
		return strconv.Itoa(i)
	}
	return parent + "/" + strconv.Itoa(i)
}

// shallowJSON marshals the flow's checkpoint with its children counted in
// Parts instead of included: each is a part of its own. Without withInput
// the input is left out too (the execution's own flow keeps it as the part
// inputPart, written when it changes, not with every event). Call with the
// execution's lock held.
func (cp *frameCP) shallowJSON(withInput bool) []byte {
	if cp.Input == nil {
		cp.Input = marshal(cp.input)
	}
	if cp.Vars == nil && len(cp.vars) > 0 {
		cp.Vars = marshal(cp.vars)
	}
	s := *cp
	s.Children, s.Parts = nil, len(cp.Children)
	if !withInput {
		s.Input = nil
	}
	return marshal(&s)
}

// inputPart is the key of the part holding the input of the execution's own
// flow.
const inputPart = "input"

// partCP is a child as a part of a PartStore's checkpoint: its frame's own
// children are parts of their own.
type partCP struct {
	Status string          `json:"status,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Frame  json.RawMessage `json:"frame,omitempty"`
}

// partJSON marshals the child as a part. Call with the execution's lock held.
func (c *childCP) partJSON() []byte {
	c.Output = nil
	if c.Status != "" {
		c.Output = marshal(c.out)
	}
	p := partCP{Status: c.Status, Output: c.Output}
	if c.Frame != nil {
		p.Frame = c.Frame.shallowJSON(true)
	}
	return marshal(&p)
}

// loadParts puts back the children a PartStore kept apart (parts, by key)
// into the flow whose part key is key, and gives every child of the tree its
// key. A checkpoint written whole (children included) loads as it is.
func (cp *frameCP) loadParts(key string, parts map[string][]byte) error {
	if cp.Parts > 0 && len(cp.Children) == 0 {
		cp.Children = make([]*childCP, cp.Parts)
		for i := range cp.Children {
			k := childKey(key, i)
			b, ok := parts[k]
			if !ok {
				return fmt.Errorf("checkpoint part %q is missing", k)
			}
			c := &childCP{}
			if err := json.Unmarshal(b, c); err != nil {
				return fmt.Errorf("checkpoint part %q: %w", k, err)
			}
			cp.Children[i] = c
		}
	}
	cp.Parts = 0
	for i, c := range cp.Children {
		c.key = childKey(key, i)
		if c.Frame != nil {
			if err := c.Frame.loadParts(c.key, parts); err != nil {
				return err
			}
		}
	}
	return nil
}

// fillOutputs marshals the inputs of the frames and the outputs of the
// children before the checkpoint is: during a run a frame keeps them as
// values only. Call with the execution's lock held.
func (cp *frameCP) fillOutputs() {
	if cp.Input == nil {
		cp.Input = marshal(cp.input)
	}
	if cp.Vars == nil && len(cp.vars) > 0 {
		cp.Vars = marshal(cp.vars)
	}
	for _, c := range cp.Children {
		c.Output = nil
		if c.Status != "" {
			c.Output = marshal(c.out)
		}
		if c.Frame != nil {
			c.Frame.fillOutputs()
		}
	}
}

// startCheckpoint is marshal(&frameCP{State: state, Input: input}), the
// checkpoint of a flow that has not entered its first state, without
// encoding/json's reflection.
func startCheckpoint(state string, input []byte) []byte {
	b := make([]byte, 0, len(input)+len(state)+24)
	b = appendString(append(b, `{"state":`...), state)
	b = append(append(b, `,"input":`...), input...)
	return append(b, '}')
}

func (cp *frameCP) prepareResume() {
	cp.input, _ = parseJSON(cp.Input)
	cp.parseVars()
	for _, c := range cp.Children {
		if c.Output != nil {
			c.out, _ = parseJSON(c.Output)
		}
		if c.Frame != nil {
			c.Frame.prepareResume()
		}
	}
}

// parseVars restores the flow's variables from a checkpoint.
func (cp *frameCP) parseVars() {
	if len(cp.Vars) > 0 {
		v, _ := parseJSON(cp.Vars)
		cp.vars, _ = v.(map[string]any)
	}
}

func (cp *frameCP) prepareRedrive() {
	cp.input, _ = parseJSON(cp.Input)
	cp.parseVars()
	cp.Entered, cp.Retries, cp.Token, cp.Invoked = false, nil, "", false
	cp.TaskStart, cp.WaitUntil = time.Time{}, time.Time{}
	for _, c := range cp.Children {
		if c.Output != nil {
			c.out, _ = parseJSON(c.Output)
		}
		if c.Status != StatusSucceeded {
			c.Status = ""
			if c.Frame != nil {
				c.Frame.prepareRedrive()
			}
		}
	}
}

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

// markDirty records that child c changed since the last save, so that the
// next save writes it, when the store keeps checkpoints in parts. nil stands
// for the execution's own flow, saved with every event. Call with x.mu held.
func (x *execution) markDirty(c *childCP) {
	if c == nil || c.dirty || x.e.parts == nil {
		return
	}
	c.dirty = true
	x.dirty = append(x.dirty, c)
}

// markTree marks every child under cp changed: after a resume or a redrive,
// the next save writes them all.
func (x *execution) markTree(cp *frameCP) {
	for _, c := range cp.Children {
		x.markDirty(c)
		if c.Frame != nil {
			x.markTree(c.Frame)
		}
	}
}

// takeParts marshals the changed children as parts and forgets them. Call
// with x.mu held.
func (x *execution) takeParts() []CheckpointPart {
	if len(x.dirty) == 0 {
		return nil
	}
	parts := make([]CheckpointPart, len(x.dirty))
	for i, c := range x.dirty {
		parts[i] = CheckpointPart{Key: c.key, Data: c.partJSON()}
		c.dirty = false
		x.dirty[i] = nil
	}
	x.dirty = x.dirty[:0]
	return parts
}

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
	ev.Timestamp = now
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
			x.mem.mu.Lock()
			if ev.kind != evFull && int64(x.mem.n)+1 != id {
				// The event's position is not its ID: keep the ID.
				ev = fullEvent(ev.expand(id))
			}
			x.mem.add(&ev)
			x.mem.mu.Unlock()
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

// frame runs one flow of states.
type frame struct {
	x    *execution
	m    *machine
	cp   *frameCP
	part *childCP // the child whose flow this is; nil for the execution's own
	last int64

	sctx       lazyContext    // the context object of the state
	outer      *scope         // the variables of the flow this one runs in (nil at the top and in a Distributed Map)
	assigned   map[string]any // what the state's Assign set, for the next state
	childScope *scope         // the variables the Parallel or Map state's children read
	exitedAt   time.Time      // when the state it left exited
	stamp      time.Time      // when the task of the state ended, for its StateExited event
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

// update changes the checkpoint under the execution's lock.
func (f *frame) update(fn func(cp *frameCP)) {
	f.x.mu.Lock()
	fn(f.cp)
	f.x.markDirty(f.part)
	f.x.mu.Unlock()
}

// setChildren gives the flow its Parallel branches or Map iterations, each
// keyed as a part under the flow's own.
func (f *frame) setChildren(children []*childCP) {
	f.x.mu.Lock()
	key := ""
	if f.part != nil {
		key = f.part.key
	}
	for i, c := range children {
		c.key = childKey(key, i)
		f.x.markDirty(c)
	}
	f.cp.Children = children
	f.x.markDirty(f.part)
	f.x.mu.Unlock()
}

func (f *frame) run(ctx context.Context) (any, *stateError) {
	for {
		st := f.m.states[f.cp.State]
		out, next, serr := f.runState(ctx, st)
		if ctx.Err() != nil {
			return nil, errStopped
		}
		if serr != nil {
			return nil, serr
		}
		if jsonSizeExceeds(out, maxPayload) {
			return nil, &stateError{Name: ErrDataLimitExceeded, Cause: fmt.Sprintf("The state/task '%s' returned a result with a size exceeding the maximum number of bytes service limit.", st.name)}
		}
		if next == "" {
			return out, nil
		}
		f.x.mu.Lock()
		vars := f.cp.vars
		if f.assigned != nil {
			vars = make(map[string]any, len(f.cp.vars)+len(f.assigned))
			for k, v := range f.cp.vars {
				vars[k] = v
			}
			for k, v := range f.assigned {
				vars[k] = v
			}
			f.assigned = nil
		}
		*f.cp = frameCP{State: next, input: out, vars: vars}
		f.x.markDirty(f.part)
		f.x.mu.Unlock()
	}
}

func (f *frame) runState(ctx context.Context, st *state) (out any, next string, serr *stateError) {
	input := f.cp.input
	if !f.cp.Entered {
		// The state's entered time is its StateEntered event's.
		f.x.mu.Lock()
		now := f.exitedAt // the previous state's exit, when there was one
		if now.IsZero() {
			now = f.x.e.clk.Now()
		}
		f.exitedAt = time.Time{}
		f.cp.Entered, f.cp.EnteredAt = true, now
		f.x.markDirty(f.part)
		ev := storedEvent{kind: evStateEntered, st: st, val: input}
		if f.cp.Input != nil {
			ev.val = f.cp.Input // as resumed from a checkpoint
		}
		f.last = f.x.emitLockedAt(f.last, ev, now)
		f.x.mu.Unlock()
	}
	f.assigned = nil
	if st.jx != nil {
		if out, next, serr = f.runJSONata(ctx, st, input); serr != nil {
			return nil, "", serr
		}
		return f.exitState(ctx, st, out, next)
	}
	ctxObj := f.stateContext(st)
	eff := input
	switch {
	case st.inputNull:
		eff = map[string]any{}
	case st.inputPath != nil:
		if eff, serr = st.inputPath.mustGet(input, ctxObj, "InputPath"); serr != nil {
			return nil, "", serr
		}
	}
	next = st.next
	switch st.typ {
	case "Pass":
		res := eff
		if st.hasParameters {
			if res, serr = evalTemplate(st.parameters, eff, ctxObj); serr != nil {
				return nil, "", serr
			}
		}
		if st.hasResult {
			res = st.result
		}
		if serr = f.assign(st.assign, res, ctxObj); serr != nil {
			return nil, "", serr
		}
		if out, serr = f.applyResult(st, input, res, ctxObj); serr != nil {
			return nil, "", serr
		}
	case "Task", "Parallel", "Map":
		if out, next, serr = f.withRetry(ctx, st, input, eff, ctxObj); serr != nil {
			return nil, "", serr
		}
	case "Choice":
		next = ""
		for _, r := range st.choices {
			ok, err := r.eval(eff, ctxObj)
			if err != nil {
				return nil, "", err
			}
			if ok {
				next = r.next
				if serr = f.assign(r.assign, eff, ctxObj); serr != nil {
					return nil, "", serr
				}
				break
			}
		}
		if next == "" {
			if st.defaultNext == "" {
				return nil, "", &stateError{Name: ErrNoChoiceMatched, Cause: fmt.Sprintf("No Choice matched in state '%s' and there is no Default", st.name)}
			}
			next = st.defaultNext
			if serr = f.assign(st.assign, eff, ctxObj); serr != nil {
				return nil, "", serr
			}
		}
		if out, serr = f.applyOutput(st, eff, ctxObj); serr != nil {
			return nil, "", serr
		}
	case "Wait":
		if serr = f.wait(ctx, st, eff, ctxObj); serr != nil {
			return nil, "", serr
		}
		if serr = f.assign(st.assign, eff, ctxObj); serr != nil {
			return nil, "", serr
		}
		if out, serr = f.applyOutput(st, eff, ctxObj); serr != nil {
			return nil, "", serr
		}
	case "Succeed":
		next = ""
		if out, serr = f.applyOutput(st, eff, ctxObj); serr != nil {
			return nil, "", serr
		}
	case "Fail":
		return nil, "", f.fail(st, input, ctxObj)
	}
	return f.exitState(ctx, st, out, next)
}

// exitState emits the state's StateExited event.
func (f *frame) exitState(ctx context.Context, st *state, out any, next string) (any, string, *stateError) {
	if ctx.Err() != nil {
		return nil, "", errStopped
	}
	f.exitedAt = f.stamp // the reading of the task's last event, when it has one
	if f.exitedAt.IsZero() {
		f.exitedAt = f.x.e.clk.Now()
	}
	f.stamp = time.Time{}
	f.emitAt(storedEvent{kind: evStateExited, st: st, val: out}, f.exitedAt)
	return out, next, nil
}

// scope returns the variables the frame's current state sees.
func (f *frame) scope() *scope {
	if len(f.cp.vars) == 0 {
		return f.outer
	}
	return &scope{parent: f.outer, own: f.cp.vars}
}

// assign evaluates an Assign with $ as src; the values take effect at the
// transition to the next state.
func (f *frame) assign(t any, src, ctxObj any) *stateError {
	f.assigned = nil
	vals, serr := evalAssign(t, src, ctxObj)
	if serr != nil {
		return serr
	}
	f.assigned = vals
	return nil
}

// stateContext returns the context object ($$) for st, built on first use.
func (f *frame) stateContext(st *state) *lazyContext {
	f.sctx = lazyContext{x: f.x, st: st, cp: f.cp, vars: f.scope()}
	return &f.sctx
}

// taskContext returns the context object of a task waiting for token. A task
// with no token sees the state's own (stateContext made it for the attempt
// the task is, and it holds nothing more); a frame does not hold a second
// context object for the rare task that has one.
func (f *frame) taskContext(st *state, token string) *lazyContext {
	if token == "" && f.sctx.st == st && f.sctx.cp == f.cp && f.sctx.token == "" && f.sctx.item == nil {
		return &f.sctx
	}
	return &lazyContext{x: f.x, st: st, cp: f.cp, token: token, vars: f.scope()}
}

// applyResult runs ResultPath then OutputPath.
func (f *frame) applyResult(st *state, input, result, ctxObj any) (any, *stateError) {
	out := input
	if !st.resultNull {
		var serr *stateError
		if out, serr = setResult(st.resultPath, input, result); serr != nil {
			return nil, serr
		}
	}
	return f.applyOutput(st, out, ctxObj)
}

func (f *frame) applyOutput(st *state, v, ctxObj any) (any, *stateError) {
	switch {
	case st.outputNull:
		return map[string]any{}, nil
	case st.outputPath != nil:
		return st.outputPath.mustGet(v, ctxObj, "OutputPath")
	}
	return v, nil
}

func (f *frame) fail(st *state, input, ctxObj any) *stateError {
	e := &stateError{Name: st.failError, Cause: st.failCause}
	pick := func(p *path, c *intrinsic, field string) (string, *stateError) {
		var v any
		var serr *stateError
		if c != nil {
			v, serr = c.eval(input, ctxObj)
		} else {
			v, serr = p.mustGet(input, ctxObj, field)
		}
		if serr != nil {
			return "", serr
		}
		s, ok := v.(string)
		if !ok {
			return "", runtimeErr("The value of the field '%s' must be a string, got %s", field, compactJSON(v))
		}
		return s, nil
	}
	var serr *stateError
	if st.failErrorPath != nil || st.failErrorCall != nil {
		if e.Name, serr = pick(st.failErrorPath, st.failErrorCall, "ErrorPath"); serr != nil {
			return serr
		}
	}
	if st.failCausePath != nil || st.failCauseCall != nil {
		if e.Cause, serr = pick(st.failCausePath, st.failCauseCall, "CausePath"); serr != nil {
			return serr
		}
	}
	return e
}

func (f *frame) wait(ctx context.Context, st *state, eff, ctxObj any) *stateError {
	clk := f.x.e.clk
	until := f.cp.WaitUntil
	if until.IsZero() {
		now := clk.Now()
		switch {
		case st.waitSeconds != nil:
			until = now.Add(secondsDuration(*st.waitSeconds))
		case st.waitTimestamp != nil:
			until = *st.waitTimestamp
		case st.waitSecondsPath != nil:
			v, serr := st.waitSecondsPath.mustGet(eff, ctxObj, "SecondsPath")
			if serr != nil {
				return serr
			}
			n, ok := toFloat(v)
			if !ok || n < 0 || !isWhole(n) {
				return runtimeErr("The SecondsPath parameter does not reference a valid non-negative integer: %s", compactJSON(v))
			}
			until = now.Add(secondsDuration(n))
		case st.waitTimestampPath != nil:
			v, serr := st.waitTimestampPath.mustGet(eff, ctxObj, "TimestampPath")
			if serr != nil {
				return serr
			}
			s, _ := v.(string)
			t, err := parseTimestamp(s)
			if err != nil {
				return runtimeErr("The TimestampPath parameter does not reference a valid ISO-8601 extended offset date-time format string: %s", compactJSON(v))
			}
			until = t
		}
		f.update(func(cp *frameCP) { cp.WaitUntil = until })
	}
	if d := until.Sub(clk.Now()); d > 0 {
		if sleep(ctx, clk, d) != nil {
			return errStopped
		}
	}
	return nil
}

// withRetry runs a Task, Parallel or Map state's work with its Retry and
// Catch, then ResultSelector, ResultPath and OutputPath.
func (f *frame) withRetry(ctx context.Context, st *state, input, eff, ctxObj any) (any, string, *stateError) {
	for {
		var res any
		var serr *stateError
		switch st.typ {
		case "Task":
			res, serr = f.task(ctx, st, eff)
		case "Parallel":
			res, serr = f.parallel(ctx, st, eff, ctxObj)
		case "Map":
			res, serr = f.mapState(ctx, st, eff, ctxObj)
		}
		if ctx.Err() != nil {
			return nil, "", errStopped
		}
		if serr == nil {
			if st.hasResultSelector {
				res, serr = evalTemplate(st.resultSelector, res, ctxObj)
			}
			if serr == nil {
				serr = f.assign(st.assign, res, ctxObj)
			}
			if serr == nil {
				out, serr := f.applyResult(st, input, res, ctxObj)
				if serr == nil {
					return out, st.next, nil
				}
				return f.catch(st, input, serr)
			}
			return f.catch(st, input, serr)
		}
		if serr.terminal() {
			return nil, "", serr
		}
		if d, ok := f.retry(st, serr); ok {
			f.stamp = time.Time{}
			f.update(func(cp *frameCP) {
				cp.Token, cp.Invoked, cp.TaskStart, cp.Children = "", false, time.Time{}, nil
			})
			if sleep(ctx, f.x.e.clk, d) != nil {
				return nil, "", errStopped
			}
			ctxObj = f.stateContext(st)
			continue
		}
		return f.catch(st, input, serr)
	}
}

// retry finds the retrier for serr and, when it has attempts left, counts one
// and returns the delay before it.
func (f *frame) retry(st *state, serr *stateError) (time.Duration, bool) {
	for i, r := range st.retry {
		if !serr.matches(r.errorEquals) {
			continue
		}
		var n int64
		if i < len(f.cp.Retries) {
			n = f.cp.Retries[i]
		}
		if n >= r.maxAttempts {
			return 0, false
		}
		delay := r.interval * math.Pow(r.backoff, float64(n))
		if r.maxDelay > 0 && delay > r.maxDelay {
			delay = r.maxDelay
		}
		if r.jitterFull {
			delay = rand.Float64() * delay
		}
		f.update(func(cp *frameCP) {
			for len(cp.Retries) < len(st.retry) {
				cp.Retries = append(cp.Retries, 0)
			}
			cp.Retries[i]++
		})
		return secondsDuration(delay), true
	}
	return 0, false
}

func (f *frame) catch(st *state, input any, serr *stateError) (any, string, *stateError) {
	if serr.terminal() {
		return nil, "", serr
	}
	f.assigned = nil
	for _, c := range st.catch {
		if !serr.matches(c.errorEquals) {
			continue
		}
		if perr := f.assign(c.assign, map[string]any{"Error": serr.Name, "Cause": serr.Cause}, f.stateContext(st)); perr != nil {
			return nil, "", perr
		}
		out := input
		if !c.resultNull {
			var perr *stateError
			errOut := map[string]any{"Error": serr.Name, "Cause": serr.Cause}
			if out, perr = setResult(c.resultPath, input, errOut); perr != nil {
				return nil, "", perr
			}
		}
		return out, c.next, nil
	}
	return nil, "", serr
}

// seconds resolves a TimeoutSeconds/HeartbeatSeconds field or its Path.
func seconds(fixed int64, p *path, eff any, field string) (int64, *stateError) {
	if p == nil {
		return fixed, nil
	}
	v, serr := p.mustGet(eff, nil, field)
	if serr != nil {
		return 0, serr
	}
	n, ok := asInt(v)
	if !ok || n <= 0 {
		return 0, runtimeErr("The value of %s must be a positive integer, got %s", field, compactJSON(v))
	}
	return n, nil
}

func (f *frame) task(ctx context.Context, st *state, eff any) (any, *stateError) {
	e := f.x.e
	clk := e.clk
	waitToken, integration := st.waitToken, st.integration
	token := f.cp.Token
	if waitToken && token == "" {
		token = uuid.NewString() + "." + uuid.NewString()
	}
	now := clk.Now()
	if f.cp.TaskStart.IsZero() || (waitToken && f.cp.Token == "") {
		f.update(func(cp *frameCP) { cp.TaskStart, cp.Token = now, token })
	}
	ctxObj := f.taskContext(st, token)
	payloadV := eff
	var serr *stateError
	if st.hasParameters {
		if payloadV, serr = evalTemplate(st.parameters, eff, ctxObj); serr != nil {
			return nil, serr
		}
	}
	timeout, serr := seconds(st.timeoutSeconds, st.timeoutPath, eff, "TimeoutSecondsPath")
	if serr != nil {
		return nil, serr
	}
	heartbeat, serr := seconds(st.heartbeatSeconds, st.heartbeatPath, eff, "HeartbeatSecondsPath")
	if serr != nil {
		return nil, serr
	}
	c := call{exec: f.x.rec.ExecutionArn, state: st.name, resource: st.resource, token: token}
	remaining := func() time.Duration {
		if timeout <= 0 {
			return 0
		}
		d := f.cp.TaskStart.Add(time.Duration(timeout) * time.Second).Sub(clk.Now())
		if d <= 0 {
			d = 1
		}
		return d
	}
	if !integration {
		c.function = st.function
		c.payload = marshal(payloadV)
		if timeout <= math.MaxInt32 {
			f.emitAt(storedEvent{kind: evLambdaScheduled, st: st, val: payloadV, num: int32(timeout)}, now)
		} else {
			f.emitAt(fullEvent(HistoryEvent{Type: "LambdaFunctionScheduled", LambdaFunctionScheduledEventDetails: &LambdaScheduledDetails{
				Resource: st.resource, Input: compactJSON(payloadV), TimeoutInSeconds: timeout}}), now)
		}
		f.emitAt(storedEvent{kind: evLambdaStarted}, now)
		out, serr := f.invoke(ctx, c, remaining())
		if serr != nil {
			if serr == errStopped {
				return nil, serr
			}
			if serr.Name == ErrTimeout {
				f.emitEvent(HistoryEvent{Type: "LambdaFunctionTimedOut", LambdaFunctionTimedOutEventDetails: &FailureDetails{Error: serr.Name, Cause: serr.Cause}})
			} else {
				f.emitEvent(HistoryEvent{Type: "LambdaFunctionFailed", LambdaFunctionFailedEventDetails: &FailureDetails{Error: serr.Name, Cause: serr.Cause}})
			}
			return nil, serr
		}
		v, serr := handlerOutput(out)
		if serr != nil {
			return nil, serr
		}
		// The history shows the handler's output as it is when it is compact
		// JSON: kept as the value when that renders to the same bytes, else
		// as a copy (a handler may reuse its bytes: aws-lambda-go's are a
		// pooled buffer).
		ev := storedEvent{kind: evLambdaSucceeded, val: v}
		if !marshalsTo(v, out) {
			ev.kind, ev.val = evLambdaSucceededRaw, json.RawMessage(bytes.Clone(out))
		}
		f.stamp = clk.Now()
		f.emitAt(ev, f.stamp)
		return v, nil
	}

	// The history names the integration as AWS does: resourceType "sqs",
	// resource "sendMessage.waitForTaskToken".
	resourceType, resource := st.service, st.action
	if st.pattern != "" {
		resource += "." + st.pattern
	}
	c.ig = &st.ig
	params, _ := payloadV.(map[string]any)
	if st.service == "lambda" {
		fn, _ := params["FunctionName"].(string)
		if fn == "" {
			return nil, runtimeErr("The Parameters of the task '%s' must hold FunctionName", st.name)
		}
		c.function = functionName(fn)
		if p, ok := params["Payload"]; ok {
			c.payload = marshal(p)
		} else {
			c.payload = []byte("{}")
		}
	} else {
		c.payload = marshal(payloadV)
	}
	taskFailed := func(serr *stateError) *stateError {
		if serr == errStopped {
			return serr
		}
		if serr.Name == ErrTimeout || serr.Name == ErrHeartbeatTimeout {
			f.emitEvent(HistoryEvent{Type: "TaskTimedOut", TaskTimedOutEventDetails: &TaskFailureDetails{ResourceType: resourceType, Resource: resource, Error: serr.Name, Cause: serr.Cause}})
		} else {
			f.emitEvent(HistoryEvent{Type: "TaskFailed", TaskFailedEventDetails: &TaskFailureDetails{ResourceType: resourceType, Resource: resource, Error: serr.Name, Cause: serr.Cause}})
		}
		return serr
	}
	if !f.cp.Invoked {
		f.emitEvent(HistoryEvent{Type: "TaskScheduled", TaskScheduledEventDetails: &TaskScheduledDetails{
			ResourceType: resourceType, Resource: resource, Region: e.opts.Region, Parameters: compactJSON(params),
			TimeoutInSeconds: timeout, HeartbeatInSeconds: heartbeat}})
		f.emitEvent(HistoryEvent{Type: "TaskStarted", TaskStartedEventDetails: &TaskDetails{ResourceType: resourceType, Resource: resource}})
	}
	var tw *tokenWait
	if waitToken {
		tw = &tokenWait{w: newWaiter(), lastBeat: f.cp.TaskStart}
		e.mu.Lock()
		e.tokens[token] = tw
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			if e.tokens[token] == tw {
				delete(e.tokens, token)
				e.doneTokens[token] = true
			}
			e.mu.Unlock()
		}()
	}
	if !f.cp.Invoked {
		out, serr := f.invoke(ctx, c, remaining())
		if serr != nil {
			return nil, taskFailed(serr)
		}
		wrapped, serr := handlerOutput(out)
		if serr != nil {
			return nil, taskFailed(serr)
		}
		if !waitToken {
			f.emitEvent(HistoryEvent{Type: "TaskSucceeded", TaskSucceededEventDetails: &TaskOutputDetails{ResourceType: resourceType, Resource: resource, Output: compactJSON(wrapped)}})
			return wrapped, nil
		}
		f.update(func(cp *frameCP) { cp.Invoked = true })
		f.emitEvent(HistoryEvent{Type: "TaskSubmitted", TaskSubmittedEventDetails: &TaskOutputDetails{ResourceType: resourceType, Resource: resource, Output: compactJSON(wrapped)}})
	}
	// Wait for SendTaskSuccess / SendTaskFailure, the timeout or the heartbeat.
	var why *stateError
	next := func() time.Duration {
		now := clk.Now()
		var d time.Duration
		if timeout > 0 {
			d = f.cp.TaskStart.Add(time.Duration(timeout) * time.Second).Sub(now)
		}
		if heartbeat > 0 {
			e.mu.Lock()
			hb := tw.lastBeat.Add(time.Duration(heartbeat) * time.Second).Sub(now)
			e.mu.Unlock()
			if d == 0 || hb < d {
				d = hb
			}
		}
		if d == 0 && (timeout > 0 || heartbeat > 0) {
			d = 1
		}
		return d
	}
	check := func() (bool, time.Duration) {
		now := clk.Now()
		if timeout > 0 && !now.Before(f.cp.TaskStart.Add(time.Duration(timeout)*time.Second)) {
			why = &stateError{Name: ErrTimeout}
			return true, 0
		}
		if heartbeat > 0 {
			e.mu.Lock()
			due := tw.lastBeat.Add(time.Duration(heartbeat) * time.Second)
			e.mu.Unlock()
			if !now.Before(due) {
				why = &stateError{Name: ErrHeartbeatTimeout}
				return true, 0
			}
		}
		d := next()
		if d <= 0 {
			d = 1
		}
		return false, d
	}
	r, how := tw.w.await(ctx, clk, next(), check)
	switch how {
	case waitCanceled:
		return nil, errStopped
	case waitTimer:
		return nil, taskFailed(why)
	}
	if r.err != nil {
		return nil, taskFailed(r.err)
	}
	v, serr := handlerOutput(r.out)
	if serr != nil {
		return nil, taskFailed(serr)
	}
	f.emitEvent(HistoryEvent{Type: "TaskSucceeded", TaskSucceededEventDetails: &TaskOutputDetails{ResourceType: resourceType, Resource: resource, Output: compactJSON(v)}})
	return v, nil
}

func handlerOutput(out []byte) (any, *stateError) {
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, nil
	}
	if len(out) > maxPayload {
		return nil, &stateError{Name: ErrDataLimitExceeded, Cause: "The task returned a result with a size exceeding the maximum number of bytes service limit."}
	}
	v, err := parseJSON(out)
	if err != nil {
		return nil, runtimeErr("The task returned a result that is not JSON: %v", err)
	}
	return v, nil
}

// invoke runs the call, bounded by timeout when it is positive.
func (f *frame) invoke(ctx context.Context, c call, timeout time.Duration) ([]byte, *stateError) {
	e := f.x.e
	if timeout <= 0 {
		out, serr := e.opts.invoke(ctx, c)
		if ctx.Err() != nil {
			return nil, errStopped
		}
		return out, serr
	}
	w := newWaiter()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.clk.busy()
	go func() {
		defer e.clk.idle()
		out, serr := e.opts.invoke(cctx, c)
		w.deliver(e.clk, waitResult{out: out, err: serr})
	}()
	r, how := w.await(ctx, e.clk, timeout, nil)
	switch how {
	case waitTimer:
		return nil, &stateError{Name: ErrTimeout, Cause: fmt.Sprintf("The task '%s' did not finish within its timeout", c.state)}
	case waitCanceled:
		return nil, errStopped
	}
	return r.out, r.err
}

// childResult is what a branch or iteration goroutine reports.
type childResult struct {
	i    int
	out  any
	err  *stateError
	last int64
}

// childStates is what a Parallel or Map state does for its children, which
// runChildren runs.
type childStates interface {
	// machine returns the states child i runs.
	machine(i int) *machine
	// started emits the start event of child i and returns its id.
	started(i int, now time.Time) int64
	// done handles a child's result and returns false to stop launching
	// and cancel the rest. Calls of done and started do not overlap.
	done(r childResult) bool
}

// runChildren runs the children of cp (Parallel branches or Map iterations)
// that have not succeeded, at most limit at a time (0: no limit), as owner
// directs; r is the run's state, which the caller allocates with its own
// (one allocation for both). Each child hands
// its result to done itself, one at a time, and starts the children a limit
// held back: the parent sleeps until the last has returned instead of waking
// for every result.
func (f *frame) runChildren(ctx context.Context, r *childRun, owner childStates, limit int) {
	n := 0
	for _, c := range f.cp.Children {
		if c.Status != StatusSucceeded {
			n++
		}
	}
	if n == 0 {
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.f, r.ctx, r.cancel, r.owner, r.limit = f, cctx, cancel, owner, limit
	r.todo, r.jobs, r.finished = make([]int, 0, n), make([]childJob, n), make(chan struct{})
	for i, c := range f.cp.Children {
		if c.Status != StatusSucceeded {
			r.todo = append(r.todo, i)
		}
	}
	clk := f.x.e.clk
	r.mu.Lock()
	r.launch()
	launched := r.running > 0
	r.mu.Unlock()
	if !launched {
		return
	}
	clk.idle()
	<-r.finished
	if r.stopped {
		clk.idle() // the hold taken when the rest were cancelled
	}
}

// childRun is the run of the children of a Parallel or Map state.
type childRun struct {
	f        *frame
	ctx      context.Context
	cancel   context.CancelFunc
	owner    childStates
	limit    int
	todo     []int      // the children to run, by index
	jobs     []childJob // their jobs, in the order of todo
	finished chan struct{}

	mu       sync.Mutex
	running  int
	nextTodo int
	stopped  bool
}

// launch starts children while the limit allows. Call with r.mu held.
func (r *childRun) launch() {
	f, clk := r.f, r.f.x.e.clk
	var now time.Time // one reading of the clock for the children started together
	// Nothing starts once the execution is stopping (StopExecution, its
	// timeout, or the engine closing): a child started then would run its
	// first task with nothing recorded.
	for !r.stopped && r.ctx.Err() == nil && r.nextTodo < len(r.todo) && (r.limit <= 0 || r.running < r.limit) {
		if now.IsZero() {
			now = clk.Now()
		}
		i := r.todo[r.nextTodo]
		j := &r.jobs[r.nextTodo]
		r.nextTodo++
		r.running++
		*j = childJob{frame: frame{x: f.x, m: r.owner.machine(i), cp: f.cp.Children[i].Frame, part: f.cp.Children[i], last: r.owner.started(i, now), outer: f.childScope}, i: i, run: r}
		clk.busy()
		f.x.e.spawn(j)
	}
}

// report hands a child's result to done and starts the next children; the
// last to return wakes the parent.
func (r *childRun) report(res childResult) {
	clk := r.f.x.e.clk
	r.mu.Lock()
	r.running--
	if !r.owner.done(res) && !r.stopped {
		r.stopped = true
		// Once the rest are cancelled the parent stays busy until they
		// have all returned, so a VirtualClock does not jump to their
		// timers.
		clk.busy()
		r.cancel()
	}
	r.launch()
	last := r.running == 0
	if last {
		clk.busy() // for the parent, which wakes
	}
	r.mu.Unlock()
	if last {
		close(r.finished)
	}
}

// childJob runs a branch or an iteration on a worker and reports its result.
type childJob struct {
	frame
	i   int
	run *childRun
}

func (j *childJob) work() {
	out, err := j.frame.run(j.run.ctx)
	j.run.report(childResult{i: j.i, out: out, err: err, last: j.last})
	j.x.e.clk.idle()
}

func (f *frame) parallel(ctx context.Context, st *state, eff, ctxObj any) (any, *stateError) {
	in := eff
	var serr *stateError
	if st.hasParameters {
		if in, serr = evalTemplate(st.parameters, eff, ctxObj); serr != nil {
			return nil, serr
		}
	}
	startedID := f.emit(storedEvent{kind: evParallelStarted})
	if len(f.cp.Children) != len(st.branches) {
		children := make([]*childCP, len(st.branches))
		cps := make([]childCP, len(st.branches))
		frames := make([]frameCP, len(st.branches))
		for i, b := range st.branches {
			frames[i] = frameCP{State: b.startAt, input: in}
			cps[i].Frame = &frames[i]
			children[i] = &cps[i]
		}
		f.setChildren(children)
	}
	f.childScope = f.scope()
	pr := &parallelRun{st: st, startedID: startedID}
	f.runChildren(ctx, &pr.childRun, pr, 0)
	failure := pr.failure
	f.last = f.x.lastID()
	if ctx.Err() != nil {
		return nil, errStopped
	}
	if failure != nil {
		f.emit(storedEvent{kind: evParallelFailed})
		return nil, failure
	}
	out := make([]any, len(st.branches))
	f.x.mu.Lock()
	for i, c := range f.cp.Children {
		out[i] = c.out
	}
	f.x.mu.Unlock()
	f.emit(storedEvent{kind: evParallelSucceeded})
	return out, nil
}

// parallelRun is a Parallel state's run of its branches.
type parallelRun struct {
	childRun  // its frame is the Parallel state's
	st        *state
	startedID int64
	failure   *stateError // the first branch's failure
}

func (p *parallelRun) machine(i int) *machine       { return p.st.branches[i] }
func (p *parallelRun) started(int, time.Time) int64 { return p.startedID }

func (p *parallelRun) done(r childResult) bool {
	f := p.f
	f.x.mu.Lock()
	c := f.cp.Children[r.i]
	if r.err == nil {
		c.Status, c.out = StatusSucceeded, r.out
		c.Frame = nil
	} else if r.err != errStopped {
		c.Status = StatusFailed
	}
	f.x.markDirty(c)
	f.x.mu.Unlock()
	if r.err != nil && r.err != errStopped && p.failure == nil {
		p.failure = r.err
	}
	return r.err == nil
}

func (x *execution) lastID() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.nextID
}

func (f *frame) mapState(ctx context.Context, st *state, eff, ctxObj any) (any, *stateError) {
	itemsV := eff
	var serr *stateError
	if st.itemReader != nil && len(f.cp.Children) == 0 {
		if itemsV, serr = f.readItems(ctx, st.itemReader, eff, ctxObj); serr != nil {
			return nil, serr
		}
	} else if st.itemsPath != nil {
		if itemsV, serr = st.itemsPath.mustGet(eff, ctxObj, "ItemsPath"); serr != nil {
			return nil, serr
		}
	}
	items, ok := itemsV.([]any)
	if st.itemReader != nil && len(f.cp.Children) > 0 {
		// Resumed: the children were built from the reader's items already.
		items, ok = make([]any, len(f.cp.Children)), true
	}
	if !ok {
		return nil, runtimeErr("Input of Map state '%s' must be an array or ItemsPath property must point to an array, got %s", st.name, compactJSON(itemsV))
	}
	limit, serr := count(st.maxConcurrency, st.maxConcurrencyPath, eff, "MaxConcurrencyPath")
	if serr != nil {
		return nil, serr
	}
	tolCount, serr := count(st.toleratedCount, st.toleratedCountPath, eff, "ToleratedFailureCountPath")
	if serr != nil {
		return nil, serr
	}
	tolPct := st.toleratedPercent
	if st.toleratedPercentPath != nil {
		v, serr := st.toleratedPercentPath.mustGet(eff, ctxObj, "ToleratedFailurePercentagePath")
		if serr != nil {
			return nil, serr
		}
		var ok bool
		if tolPct, ok = toFloat(v); !ok || tolPct < 0 || tolPct > 100 {
			return nil, runtimeErr("ToleratedFailurePercentagePath must point to a number from 0 to 100, got %s", compactJSON(v))
		}
	}
	if len(f.cp.Children) == 0 || (st.itemBatcher == nil && len(f.cp.Children) != len(items)) {
		inputs := make([]any, len(items))
		// One context object serves every item, rebuilt for each when it is read.
		it := &mapItem{parent: ctxObj}
		c := &lazyContext{item: it}
		for i, item := range items {
			in := item
			if st.hasItemSelector {
				it.index, it.value, c.v = i, item, nil
				if in, serr = evalTemplate(st.itemSelector, eff, c); serr != nil {
					return nil, serr
				}
			}
			inputs[i] = in
		}
		if st.itemBatcher != nil {
			if inputs, serr = f.batch(st.itemBatcher, inputs, eff, ctxObj); serr != nil {
				return nil, serr
			}
		}
		children := make([]*childCP, len(inputs))
		cps := make([]childCP, len(inputs))
		frames := make([]frameCP, len(inputs))
		for i, in := range inputs {
			frames[i] = frameCP{State: st.processor.startAt, input: in}
			cps[i].Frame = &frames[i]
			children[i] = &cps[i]
		}
		f.setChildren(children)
	}
	// With an ItemBatcher (or a resumed ItemReader) the children are the
	// batches: failures and results count per child.
	f.emit(storedEvent{kind: evMapStarted, num: int32(len(f.cp.Children))})
	mr := &mapRun{st: st, n: len(f.cp.Children), tolCount: tolCount, tolPct: tolPct,
		tolerant: st.hasToleratedCount || st.hasToleratedPercent}
	f.childScope = nil
	if !st.distributed {
		f.childScope = f.scope()
	}
	f.runChildren(ctx, &mr.childRun, mr, int(limit))
	f.last = f.x.lastID()
	if ctx.Err() != nil {
		return nil, errStopped
	}
	if mr.failure != nil && mr.exceeded() {
		f.emit(storedEvent{kind: evMapFailed})
		if mr.tolerant {
			return nil, &stateError{Name: ErrExceedToleratedFailure, Cause: "The specified tolerated failure threshold was exceeded"}
		}
		return nil, mr.failure
	}
	out := make([]any, mr.n)
	f.x.mu.Lock()
	for i, c := range f.cp.Children {
		out[i] = c.out
	}
	f.x.mu.Unlock()
	f.emit(storedEvent{kind: evMapSucceeded})
	return out, nil
}

// mapRun is a Map state's run of its iterations (or batches).
type mapRun struct {
	childRun // its frame is the Map state's
	st       *state
	n        int // the number of children
	tolCount int64
	tolPct   float64
	tolerant bool        // the state tolerates failures
	failed   int         // the children that failed
	failure  *stateError // the first of them
}

func (m *mapRun) machine(int) *machine { return m.st.processor }

func (m *mapRun) started(i int, now time.Time) int64 {
	return m.f.emitAt(storedEvent{kind: evIterationStarted, st: m.st, num: int32(i)}, now)
}

// exceeded reports whether the failures are more than the state tolerates.
func (m *mapRun) exceeded() bool {
	st := m.st
	if !m.tolerant {
		return m.failed > 0
	}
	if st.hasToleratedCount && int64(m.failed) > m.tolCount {
		return true
	}
	if st.hasToleratedPercent && float64(m.failed)*100 > m.tolPct*float64(m.n) {
		return true
	}
	return false
}

func (m *mapRun) done(r childResult) bool {
	f := m.f
	ev := storedEvent{st: m.st, num: int32(r.i)}
	f.x.mu.Lock()
	c := f.cp.Children[r.i]
	switch {
	case r.err == nil:
		c.Status, c.out, c.Frame = StatusSucceeded, r.out, nil
		ev.kind = evIterationSucceeded
	case r.err == errStopped:
		ev.kind = evIterationAborted
	default:
		c.Status = StatusFailed
		c.out = map[string]any{"Error": r.err.Name, "Cause": r.err.Cause}
		ev.kind = evIterationFailed
	}
	f.x.markDirty(c)
	f.x.emitLocked(r.last, ev)
	f.x.mu.Unlock()
	if r.err != nil && r.err != errStopped {
		m.failed++
		if m.failure == nil {
			m.failure = r.err
		}
		if m.exceeded() {
			return false
		}
	}
	return true
}

func count(fixed int64, p *path, eff any, field string) (int64, *stateError) {
	if p == nil {
		return fixed, nil
	}
	v, serr := p.mustGet(eff, nil, field)
	if serr != nil {
		return 0, serr
	}
	n, ok := asInt(v)
	if !ok || n < 0 {
		return 0, runtimeErr("The value of %s must be a non-negative integer, got %s", field, compactJSON(v))
	}
	return n, nil
}

// rawOutput is the handler's output as the history shows it: its own bytes
// when they are compact JSON already.
func rawOutput(out []byte) string {
	if json.Valid(out) && !bytes.ContainsAny(out, " \t\n\r") {
		return string(out)
	}
	v, _ := handlerOutput(out) // it parsed when the task ran
	return compactJSON(v)
}
