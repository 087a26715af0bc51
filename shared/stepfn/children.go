package stepfn

import (
	"context"
	"sync"
	"time"
)

// childResult is what a branch or iteration goroutine reports.
type childResult struct {
	i    int
	out  any
	err  *stateError
	last int64
	size int       // a bound of out's JSON size, 0 when not known
	at   time.Time // when the child's last state exited, when it succeeded
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
	js := getJobs(n)
	defer putJobs(js)
	r.todo, r.jobs, r.finished = js.todo, js.jobs, make(chan struct{})
	for i, c := range f.cp.Children {
		if c.Status != StatusSucceeded {
			r.todo = append(r.todo, i)
		}
	}
	clk := f.x.e.clk
	r.mu.Lock()
	own := r.launch(true)
	launched := r.running > 0
	r.mu.Unlock()
	if !launched {
		return
	}
	// The parent waits: a VirtualClock counts it idle. It runs the last
	// child it started itself meanwhile (as a worker would: busy from its
	// launch to its report), and hands a worker one job fewer.
	clk.idle()
	if own != nil {
		own.work()
	}
	<-r.finished
	if r.stopped {
		clk.idle() // the hold taken when the rest were cancelled
	}
}

// childJobs are the jobs of a run of children and the indexes they run,
// reused from one run to the next: once the last child has reported, no
// goroutine holds a job (childJob.work touches nothing after its report).
type childJobs struct {
	jobs []childJob
	todo []int
}

var jobPool = sync.Pool{New: func() any { return new(childJobs) }}

// maxPooledJobs is the most jobs a pooled childJobs keeps room for.
const maxPooledJobs = 256

// getJobs returns n zero jobs and room for n indexes.
func getJobs(n int) *childJobs {
	js := jobPool.Get().(*childJobs)
	if cap(js.jobs) < n {
		js.jobs, js.todo = make([]childJob, n), make([]int, 0, n)
	}
	js.jobs, js.todo = js.jobs[:n], js.todo[:0]
	return js
}

// putJobs clears the jobs (their frames hold the children's values) and
// pools them.
func putJobs(js *childJobs) {
	if cap(js.jobs) > maxPooledJobs {
		return
	}
	clear(js.jobs)
	jobPool.Put(js)
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
	sized    int // the children that succeeded with a bound of their output's size
	sizeSum  int // those bounds added up
}

// launch starts children while the limit allows. With keep, the last child
// it starts is not handed to a worker but returned, for the caller to run
// (its work reports and ends its hold of the clock as a worker's would).
// Call with r.mu held.
func (r *childRun) launch(keep bool) (own *childJob) {
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
		// The child's first state is entered as it starts: at this reading.
		*j = childJob{frame: frame{x: f.x, m: r.owner.machine(i), cp: f.cp.Children[i].Frame, part: f.cp.Children[i], last: r.owner.started(i, now), outer: f.childScope, exitedAt: now}, i: i, run: r}
		clk.busy()
		if own != nil {
			f.x.e.spawn(own)
		}
		own = j
	}
	if !keep && own != nil {
		f.x.e.spawn(own)
		own = nil
	}
	return own
}

// report hands a child's result to done and starts the next children; the
// last to return wakes the parent.
func (r *childRun) report(res childResult) {
	clk := r.f.x.e.clk
	r.mu.Lock()
	r.running--
	if res.err == nil && res.size > 0 {
		r.sized++
		r.sizeSum += res.size
	}
	if !r.owner.done(res) && !r.stopped {
		r.stopped = true
		// Once the rest are cancelled the parent stays busy until they
		// have all returned, so a VirtualClock does not jump to their
		// timers.
		clk.busy()
		r.cancel()
	}
	r.launch(false)
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
	r := childResult{i: j.i, out: out, err: err, last: j.last}
	if err == nil {
		r.size, r.at = j.outSize, j.exitedAt
	}
	clk := j.x.e.clk
	j.run.report(r) // the last report ends the run: j may be reused from here
	clk.idle()
}

func (f *frame) parallel(ctx context.Context, st *state, eff, ctxObj any) (any, *stateError) {
	in := eff
	var serr *stateError
	if st.hasParameters {
		if in, serr = evalTemplate(st.parameters, eff, ctxObj); serr != nil {
			return nil, serr
		}
	}
	startedID := f.emitAt(storedEvent{kind: evParallelStarted}, f.takeEntered())
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
	f.resSize = childrenBound(len(out), pr.sized, pr.sizeSum)
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
	started := f.takeEntered()
	if st.itemReader != nil {
		started = f.x.e.clk.Now() // after reading the items, which takes time
	}
	f.emitAt(storedEvent{kind: evMapStarted, num: int32(len(f.cp.Children))}, started)
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
	f.resSize = childrenBound(len(out), mr.sized, mr.sizeSum)
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
	if r.at.IsZero() {
		f.x.emitLocked(r.last, ev)
	} else {
		f.x.emitLockedAt(r.last, ev, r.at) // the iteration ended as its last state exited
	}
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
