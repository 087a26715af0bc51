package stepfn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

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
	// entered is the state's entered time while nothing has waited since:
	// the work that follows at once (a task's scheduling, a Pass state's
	// exit) takes it rather than another reading of the clock.
	entered time.Time

	// JSON sizes, in bytes, known without rendering (see size.go); 0 is
	// not known. inSize bounds the current state's input, outSize the
	// output runState returned (or, once run returns, the flow's output),
	// resSize the result of the Task, Parallel or Map state's last attempt.
	inSize, outSize, resSize int
}

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
		// The output's size is checked by rendering it only when runState
		// could not bound it below the limit from its input and result.
		size := f.outSize
		if size <= 0 || size > maxPayload {
			if size = jsonSize(out, maxPayload); size > maxPayload {
				return nil, &stateError{Name: ErrDataLimitExceeded, Cause: fmt.Sprintf("The state/task '%s' returned a result with a size exceeding the maximum number of bytes service limit.", st.name)}
			}
		}
		f.inSize, f.outSize = size, size
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
	f.entered = time.Time{}
	if !f.cp.Entered {
		// The state's entered time is its StateEntered event's.
		f.x.mu.Lock()
		now := f.exitedAt // the previous state's exit, when there was one
		if now.IsZero() {
			now = f.x.e.clk.Now()
		}
		f.exitedAt = time.Time{}
		f.entered = now
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
	f.outSize = 0
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
		if !st.hasParameters && !st.hasResult {
			f.outSize = st.outputBound(st.resultBound(f.inSize, st.effectiveBound(f.inSize)))
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
		f.outSize = st.outputBound(st.effectiveBound(f.inSize))
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
		f.outSize = st.outputBound(st.effectiveBound(f.inSize))
	case "Succeed":
		next = ""
		if out, serr = f.applyOutput(st, eff, ctxObj); serr != nil {
			return nil, "", serr
		}
		f.outSize = st.outputBound(st.effectiveBound(f.inSize))
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
		switch st.typ {
		case "Pass", "Choice", "Succeed":
			// Nothing waited since the state was entered.
			f.exitedAt = f.takeEntered()
		default:
			f.exitedAt = f.x.e.clk.Now()
		}
	}
	f.stamp = time.Time{}
	f.emitAt(storedEvent{kind: evStateExited, st: st, val: out}, f.exitedAt)
	return out, next, nil
}

// takeEntered returns the state's entered time when nothing has waited
// since it was read, else a new reading of the clock; either way it is
// taken, and the next caller reads the clock.
func (f *frame) takeEntered() time.Time {
	now := f.entered
	f.entered = time.Time{}
	if now.IsZero() {
		now = f.x.e.clk.Now()
	}
	return now
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
		f.resSize = 0
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
					if !st.hasResultSelector {
						f.outSize = st.outputBound(st.resultBound(f.inSize, f.resSize))
					}
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
