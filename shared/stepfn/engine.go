package stepfn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Engine runs state machines. It is safe for concurrent use.
type Engine struct {
	// resuming counts the executions Resume launched that have not yet
	// re-registered their task token waits (settle gives them a moment).
	resuming atomic.Int64
	opts     Options
	clk      activity
	store    Store
	durable  bool            // the store outlives the process: save the checkpoint with the events
	mem      *MemoryStore    // the store, when it is a MemoryStore
	parts    PartStore       // the store, when it keeps checkpoints in parts
	lister   ExecutionLister // the store, when it lists executions
	log      *slog.Logger
	roleArn  string // the role executions report

	work chan job      // hands work to idle workers (pool.go)
	quit chan struct{} // closed by Close: idle workers exit
	// The pool's state (pool.go): work spawned since trim last looked, the
	// live workers, and whether trim runs.
	spawned, trimming atomic.Bool
	workers           atomic.Int64
	stopping          atomic.Bool // Close ran: workers end after their job

	mu         sync.Mutex
	closed     bool
	handlers   atomic.Pointer[map[string]Handler] // copied on write: read on every task
	machines   map[string]*stateMachine
	live       map[string]*execution
	tokens     map[string]*tokenWait
	doneTokens map[string]bool
	index      map[string][]string // execution ARNs by state machine, when the store cannot list them
}

type stateMachine struct {
	arn, name        string
	definition       []byte
	m                *machine
	created, updated time.Time
	revision         int
}

// tokenWait is a task waiting for SendTaskSuccess or SendTaskFailure.
type tokenWait struct {
	w        *waiter
	lastBeat time.Time
}

// NewEngine returns an Engine configured by opts.
func NewEngine(opts ...func(*Options)) *Engine {
	o := Options{Region: "us-east-1", Account: "123456789012"}
	for _, f := range opts {
		f(&o)
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Store == nil {
		o.Store = NewMemoryStore()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e := &Engine{
		opts: o, clk: asActivity(o.Clock), store: o.Store, log: o.Logger,
		machines: map[string]*stateMachine{},
		live:     map[string]*execution{}, tokens: map[string]*tokenWait{}, doneTokens: map[string]bool{},
		work: make(chan job), quit: make(chan struct{}),
	}
	e.mem, _ = o.Store.(*MemoryStore)
	e.durable = e.mem == nil
	e.parts, _ = o.Store.(PartStore)
	e.lister, _ = o.Store.(ExecutionLister)
	e.index = map[string][]string{}
	e.roleArn = "arn:aws:iam::" + o.Account + ":role/stepfn-local"
	if e.opts.invoke == nil {
		e.opts.invoke = e.invokeHandler
		if len(o.Tasks) > 0 {
			s := &scripted{script: o.Tasks, e: e, used: map[string]int{}, perExecution: true}
			e.opts.invoke = func(ctx context.Context, c call) ([]byte, *stateError) {
				if len(s.script[c.state]) > 0 {
					return s.invoke(ctx, c)
				}
				return e.invokeHandler(ctx, c)
			}
		}
	}
	return e
}

// RegisterHandler routes tasks calling the Lambda function functionName (by
// ARN, or FunctionName of arn:aws:states:::lambda:invoke) to h.
func (e *Engine) RegisterHandler(functionName string, h Handler) {
	e.mu.Lock()
	defer e.mu.Unlock()
	next := map[string]Handler{functionName: h}
	if cur := e.handlers.Load(); cur != nil {
		for k, v := range *cur {
			if k != functionName {
				next[k] = v
			}
		}
	}
	e.handlers.Store(&next)
}

// RegisterIntegration routes tasks calling the service integration resource
// to h. resource names the service and action, as "sqs:sendMessage" or a
// whole resource ARN ("arn:aws:states:::sqs:sendMessage"); it may carry a
// pattern ("ecs:runTask.sync"), and a handler registered with the pattern is
// preferred to one registered without. h receives the task's Parameters as
// JSON and returns the integration's response: for .sync and .sync:2 the
// response of the finished job, for .waitForTaskToken the acknowledgement
// (the task's result then comes from SendTaskSuccess). Lambda's
// arn:aws:states:::lambda:invoke goes to RegisterHandler's handlers instead.
func (e *Engine) RegisterIntegration(resource string, h Handler) {
	if i := strings.Index(resource, ":states:::"); i >= 0 {
		resource = resource[i+len(":states:::"):]
	}
	e.RegisterHandler(resource, h)
}

// CreateStateMachine validates definition and registers it under name. It
// returns the state machine's ARN; creating the same name again replaces the
// definition (new executions use it). An invalid definition returns an
// InvalidDefinition *Error naming the state and the reason.
func (e *Engine) CreateStateMachine(name string, definition []byte) (string, error) {
	if err := checkName(name); err != nil {
		return "", apiErr(CodeInvalidName, "state machine name %q: %v", name, err)
	}
	m, err := compileDefinition(definition)
	if err != nil {
		return "", &Error{Code: CodeInvalidDefinition, Message: err.Error()}
	}
	arn := fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", e.opts.Region, e.opts.Account, name)
	now := e.clk.Now()
	sm := &stateMachine{arn: arn, name: name, definition: append([]byte(nil), definition...), m: m, created: now}
	e.mu.Lock()
	if old := e.machines[arn]; old != nil {
		sm.created, sm.updated, sm.revision = old.created, now, old.revision+1
	}
	e.machines[arn] = sm
	e.mu.Unlock()
	return arn, nil
}

// Validate reports whether definition would load, with the state and reason
// when it would not.
func Validate(definition []byte) error {
	if _, err := compileDefinition(definition); err != nil {
		return &Error{Code: CodeInvalidDefinition, Message: err.Error()}
	}
	return nil
}

func checkName(name string) error {
	if name == "" || len(name) > 80 {
		return fmt.Errorf("must be 1 to 80 characters")
	}
	if strings.ContainsAny(name, " \t\n\r<>{}[]?*\"#%\\^|~`$&,;:/") {
		return fmt.Errorf("must not contain whitespace or any of <>{}[]?*\"#%%\\^|~`$&,;:/")
	}
	for _, r := range name {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return fmt.Errorf("must not contain control characters")
		}
	}
	return nil
}

// StartExecution starts an execution of the state machine smArn named name
// with input (a JSON document; empty means {}). As in Standard workflows, the
// name is the execution's identity: starting a RUNNING execution again with
// the same input returns it; a different input, or a name whose execution has
// stopped, is an ExecutionAlreadyExists *Error. Other errors: InvalidName,
// InvalidExecutionInput, StateMachineDoesNotExist, ExecutionLimitExceeded
// (Options.MaxRunning executions run), StoreFailure.
func (e *Engine) StartExecution(ctx context.Context, smArn, name string, input []byte) (string, error) {
	e.mu.Lock()
	sm := e.machines[smArn]
	e.mu.Unlock()
	if sm == nil {
		return "", apiErr(CodeStateMachineDoesNotExist, "%s", smArn)
	}
	if err := checkName(name); err != nil {
		return "", apiErr(CodeInvalidName, "execution name %q: %v", name, err)
	}
	if len(bytes.TrimSpace(input)) == 0 {
		input = []byte("{}")
	}
	if len(input) > maxPayload {
		return "", apiErr(CodeInvalidExecutionInput, "the input is larger than %d bytes", maxPayload)
	}
	in, err := parseJSON(input)
	if err != nil {
		return "", apiErr(CodeInvalidExecutionInput, "the input is not JSON: %v", err)
	}
	arn := "arn:aws:states:" + e.opts.Region + ":" + e.opts.Account + ":execution:" + sm.name + ":" + name
	now := e.clk.Now()
	rawIn := marshal(in)
	x := e.newExecution(sm.m, ExecutionRecord{
		Execution: Execution{
			ExecutionArn: arn, StateMachineArn: smArn, Name: name, Status: StatusRunning,
			Input: rawIn, StartDate: now,
		},
		Definition: sm.definition,
	}, in)
	x.root = &frameCP{State: sm.m.startAt, Input: rawIn, input: in}
	x.rec.Checkpoint = startCheckpoint(sm.m.startAt, rawIn)
	start := HistoryEvent{Type: "ExecutionStarted", ID: 1, Timestamp: now,
		ExecutionStartedEventDetails: &ExecutionStartedDetails{Input: string(rawIn), RoleArn: e.roleArn}}
	x.nextID = 1
	e.mu.Lock()
	if _, running := e.live[arn]; running {
		e.mu.Unlock()
		return e.existing(ctx, arn, in)
	}
	if e.full() {
		e.mu.Unlock()
		return "", apiErr(CodeExecutionLimitExceeded, "%d executions are running, the most this engine runs at once", len(e.live))
	}
	if e.mem != nil {
		size := int(min(max(sm.m.historyLen.Load(), historyFirstChunk), historyMaxFirst))
		x.mem, err = e.mem.createRunning(x.rec, fullEvent(start), size)
	} else {
		err = e.store.CreateExecution(ctx, x.rec, []HistoryEvent{start})
	}
	if err != nil {
		e.mu.Unlock()
		if errors.Is(err, ErrExists) {
			return e.existing(ctx, arn, in)
		}
		return "", &Error{Code: CodeStore, Message: "start execution " + arn, Err: err}
	}
	e.live[arn] = x
	e.noteExecution(smArn, arn)
	e.mu.Unlock()
	e.launch(x, 1)
	return arn, nil
}

// existing applies the idempotency rule of StartExecution to an ARN in use.
func (e *Engine) existing(ctx context.Context, arn string, in any) (string, error) {
	rec, err := e.store.GetExecution(ctx, arn)
	if err != nil {
		return "", &Error{Code: CodeStore, Message: "start execution " + arn, Err: err}
	}
	prev, _ := parseJSON(rec.Input)
	if rec.Status == StatusRunning && jsonEqual(prev, in) {
		return arn, nil
	}
	if rec.Status != StatusRunning {
		return "", apiErr(CodeExecutionAlreadyExists, "execution %s already exists and is %s", arn, rec.Status)
	}
	return "", apiErr(CodeExecutionAlreadyExists, "execution %s already exists with a different input", arn)
}

// DescribeExecution returns the execution's description. Errors:
// ExecutionDoesNotExist, StoreFailure.
func (e *Engine) DescribeExecution(ctx context.Context, execArn string) (Execution, error) {
	e.mu.Lock()
	x := e.live[execArn]
	e.mu.Unlock()
	if x != nil {
		x.mu.Lock()
		defer x.mu.Unlock()
		return x.rec.Execution, nil
	}
	rec, err := e.store.GetExecution(ctx, execArn)
	if err != nil {
		return Execution{}, e.storeErr(err, execArn)
	}
	return rec.Execution, nil
}

func (e *Engine) storeErr(err error, arn string) error {
	if errors.Is(err, ErrNotFound) {
		return apiErr(CodeExecutionDoesNotExist, "%s", arn)
	}
	return &Error{Code: CodeStore, Message: arn, Err: err}
}

// GetExecutionHistory returns the execution's events in order. Errors:
// ExecutionDoesNotExist, StoreFailure.
func (e *Engine) GetExecutionHistory(ctx context.Context, execArn string) ([]HistoryEvent, error) {
	h, err := e.store.History(ctx, execArn)
	if err != nil {
		return nil, e.storeErr(err, execArn)
	}
	return h, nil
}

// StopExecution aborts a RUNNING execution with the given error and cause; the
// execution ends ABORTED. Stopping a stopped execution does nothing. Errors:
// ExecutionDoesNotExist, StoreFailure.
func (e *Engine) StopExecution(ctx context.Context, execArn, errName, cause string) error {
	e.mu.Lock()
	x := e.live[execArn]
	e.mu.Unlock()
	if x != nil {
		x.stop(StatusAborted, errName, cause)
		<-x.done
		return nil
	}
	rec, err := e.store.GetExecution(ctx, execArn)
	if err != nil {
		return e.storeErr(err, execArn)
	}
	if rec.Status != StatusRunning {
		return nil
	}
	// A RUNNING execution not resumed in this process: close its record.
	x = e.newExecution(nil, rec, nil)
	hist, err := e.store.History(ctx, execArn)
	if err != nil {
		return e.storeErr(err, execArn)
	}
	x.nextID = int64(len(hist))
	x.finish(StatusAborted, nil, errName, cause, 0)
	return nil
}

// Wait blocks until the execution stops, or ctx ends, and returns its
// description. Errors: ExecutionDoesNotExist, StoreFailure, ctx.Err().
func (e *Engine) Wait(ctx context.Context, execArn string) (Execution, error) {
	e.mu.Lock()
	x := e.live[execArn]
	e.mu.Unlock()
	switch {
	case x == nil:
	case ctx.Done() == nil: // a context that never ends: a plain receive
		<-x.done
	default:
		select {
		case <-x.done:
		case <-ctx.Done():
			return Execution{}, ctx.Err()
		}
	}
	return e.DescribeExecution(ctx, execArn)
}

// RedriveExecution restarts a FAILED, TIMED_OUT or ABORTED execution from the
// state that did not finish, with the input it had: inside a Parallel or Map
// only the branches or iterations that did not succeed run again, and retry
// counts start afresh. Errors: ExecutionDoesNotExist, ExecutionNotRedrivable
// (a RUNNING or SUCCEEDED execution, or a state machine not registered in this
// engine), ExecutionLimitExceeded (Options.MaxRunning executions run),
// StoreFailure.
func (e *Engine) RedriveExecution(ctx context.Context, execArn string) error {
	e.mu.Lock()
	if _, running := e.live[execArn]; running {
		e.mu.Unlock()
		return apiErr(CodeExecutionNotRedrivable, "execution %s is RUNNING", execArn)
	}
	e.mu.Unlock()
	rec, err := e.store.GetExecution(ctx, execArn)
	if err != nil {
		return e.storeErr(err, execArn)
	}
	switch rec.Status {
	case StatusFailed, StatusTimedOut, StatusAborted:
	default:
		return apiErr(CodeExecutionNotRedrivable, "execution %s is %s", execArn, rec.Status)
	}
	m, err := compileDefinition(rec.Definition)
	if err != nil {
		return apiErr(CodeExecutionNotRedrivable, "the stored definition no longer loads: %v", err)
	}
	var root frameCP
	if err := json.Unmarshal(rec.Checkpoint, &root); err != nil || root.State == "" {
		return apiErr(CodeExecutionNotRedrivable, "execution %s has no checkpoint to resume from", execArn)
	}
	if err := e.loadParts(ctx, execArn, &root); err != nil {
		var se *Error
		if errors.As(err, &se) {
			return err
		}
		return apiErr(CodeExecutionNotRedrivable, "execution %s: %v", execArn, err)
	}
	hist, err := e.store.History(ctx, execArn)
	if err != nil {
		return e.storeErr(err, execArn)
	}
	root.prepareRedrive()
	now := e.clk.Now()
	rec.Status = StatusRunning
	rec.Output, rec.Error, rec.Cause = nil, "", ""
	rec.StopDate = time.Time{}
	rec.RedriveCount++
	rec.RedriveDate = now
	x := e.newExecution(m, rec, nil)
	x.root = &root
	x.markTree(&root)
	x.nextID = int64(len(hist))
	e.mu.Lock()
	if _, running := e.live[execArn]; running {
		e.mu.Unlock()
		return apiErr(CodeExecutionNotRedrivable, "execution %s is RUNNING", execArn)
	}
	if e.full() {
		e.mu.Unlock()
		return apiErr(CodeExecutionLimitExceeded, "%d executions are running, the most this engine runs at once", len(e.live))
	}
	e.live[execArn] = x
	e.mu.Unlock()
	x.mu.Lock()
	id := x.emitLocked(0, fullEvent(HistoryEvent{Type: "ExecutionRedriven", ExecutionRedrivenEventDetails: &RedrivenDetails{RedriveCount: rec.RedriveCount}}))
	x.mu.Unlock()
	e.launch(x, id)
	return nil
}

// full reports whether Options.MaxRunning executions run. Call with e.mu held.
func (e *Engine) full() bool {
	return e.opts.MaxRunning > 0 && len(e.live) >= e.opts.MaxRunning
}

// loadParts puts back into root the parts a PartStore kept of its checkpoint.
// A failure to read the store is a StoreFailure *Error; a part missing or
// unreadable is a plain error.
func (e *Engine) loadParts(ctx context.Context, execArn string, root *frameCP) error {
	var parts map[string][]byte
	if e.parts != nil {
		var err error
		if parts, err = e.parts.CheckpointParts(ctx, execArn); err != nil {
			return &Error{Code: CodeStore, Message: "checkpoint of " + execArn, Err: err}
		}
	}
	if in, ok := parts[inputPart]; ok && (len(root.Input) == 0 || string(root.Input) == "null") {
		root.Input = in
	}
	return root.loadParts("", parts)
}

// Resume continues, after a restart, every RUNNING execution in the Store: each
// resumes at the state it was in (a task waiting for a token keeps waiting for
// it; a task that was running is invoked again, so handlers must be safe to
// run twice). Register handlers before calling it. Errors: StoreFailure.
func (e *Engine) Resume(ctx context.Context) error {
	recs, err := e.store.RunningExecutions(ctx)
	if err != nil {
		return &Error{Code: CodeStore, Message: "resume", Err: err}
	}
	for _, rec := range recs {
		e.mu.Lock()
		_, running := e.live[rec.ExecutionArn]
		e.mu.Unlock()
		if running {
			continue
		}
		m, err := compileDefinition(rec.Definition)
		var root frameCP
		if err == nil {
			err = json.Unmarshal(rec.Checkpoint, &root)
		}
		if err == nil {
			if err = e.loadParts(ctx, rec.ExecutionArn, &root); errors.As(err, new(*Error)) {
				return err
			}
		}
		hist, herr := e.store.History(ctx, rec.ExecutionArn)
		if herr != nil {
			return &Error{Code: CodeStore, Message: "resume " + rec.ExecutionArn, Err: herr}
		}
		x := e.newExecution(m, rec, nil)
		x.nextID = int64(len(hist))
		x.resumed = true
		e.resuming.Add(1)
		if err != nil || root.State == "" {
			e.log.Error("stepfn: cannot resume execution", "execution", rec.ExecutionArn, "err", err)
			x.finish(StatusFailed, nil, ErrRuntime, "the execution could not be resumed after a restart", 0)
			continue
		}
		root.prepareResume()
		x.root = &root
		x.markTree(&root)
		e.mu.Lock()
		e.live[rec.ExecutionArn] = x
		e.noteExecution(rec.StateMachineArn, rec.ExecutionArn)
		e.mu.Unlock()
		prev := int64(0)
		if len(hist) > 0 {
			prev = hist[len(hist)-1].ID
		}
		e.launch(x, prev)
	}
	return nil
}

// SendTaskSuccess completes the task waiting on token with output (JSON).
// Errors: InvalidOutput, TaskDoesNotExist, TaskTimedOut (the task stopped
// waiting).
func (e *Engine) SendTaskSuccess(ctx context.Context, token string, output []byte) error {
	if len(bytes.TrimSpace(output)) == 0 {
		return apiErr(CodeInvalidOutput, "the output is empty")
	}
	if _, err := parseJSON(output); err != nil {
		return apiErr(CodeInvalidOutput, "the output is not JSON: %v", err)
	}
	return e.settle(token, waitResult{out: append([]byte(nil), output...)})
}

// SendTaskFailure fails the task waiting on token with errName and cause.
// Errors: TaskDoesNotExist, TaskTimedOut.
func (e *Engine) SendTaskFailure(ctx context.Context, token, errName, cause string) error {
	return e.settle(token, waitResult{err: &stateError{Name: errName, Cause: cause}})
}

// resumeGrace is how long settling an unknown token waits for executions
// resumed after a restart to wait on their tokens again: a human's approval
// sent as ora dev starts must not be refused for a task not yet re-entered.
const resumeGrace = 5 * time.Second

func (e *Engine) settle(token string, r waitResult) error {
	for deadline := time.Now().Add(resumeGrace); e.resuming.Load() > 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		e.mu.Lock()
		known := e.tokens[token] != nil || e.doneTokens[token]
		e.mu.Unlock()
		if known {
			break
		}
	}
	e.mu.Lock()
	tw := e.tokens[token]
	done := e.doneTokens[token]
	if tw != nil {
		delete(e.tokens, token)
		e.doneTokens[token] = true
	}
	e.mu.Unlock()
	if tw == nil {
		if done {
			return apiErr(CodeTaskTimedOut, "the task for this token is no longer waiting")
		}
		return apiErr(CodeTaskDoesNotExist, "no task is waiting for this token")
	}
	if !tw.w.deliver(e.clk, r) {
		return apiErr(CodeTaskTimedOut, "the task for this token is no longer waiting")
	}
	return nil
}

// SendTaskHeartbeat tells the task waiting on token that work goes on,
// restarting its HeartbeatSeconds countdown. Errors: TaskDoesNotExist,
// TaskTimedOut.
func (e *Engine) SendTaskHeartbeat(ctx context.Context, token string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	tw := e.tokens[token]
	if tw == nil {
		if e.doneTokens[token] {
			return apiErr(CodeTaskTimedOut, "the task for this token is no longer waiting")
		}
		return apiErr(CodeTaskDoesNotExist, "no task is waiting for this token")
	}
	tw.lastBeat = e.clk.Now()
	return nil
}

// Close stops every execution running in this engine without recording
// anything, as a process exit would: with a durable Store, a new Engine's
// Resume continues them. Close waits for their goroutines to end.
func (e *Engine) Close() error {
	e.mu.Lock()
	xs := make([]*execution, 0, len(e.live))
	for _, x := range e.live {
		xs = append(xs, x)
	}
	e.mu.Unlock()
	for _, x := range xs {
		x.mu.Lock()
		x.shutdown = true
		x.hold()
		x.mu.Unlock()
		x.cancel()
	}
	for _, x := range xs {
		<-x.done
	}
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		e.stopping.Store(true)
		close(e.quit)
		go e.endWorkers()
	}
	e.mu.Unlock()
	return nil
}

// invokeHandler dispatches a task to the handler registered for its function.
func (e *Engine) invokeHandler(ctx context.Context, c call) ([]byte, *stateError) {
	m := e.handlers.Load()
	lookup := func(key string) Handler {
		if m == nil {
			return nil
		}
		return (*m)[key]
	}
	var h Handler
	if c.ig != nil && !c.lambdaInvoke() {
		key := c.ig.service + ":" + c.ig.action
		if c.ig.pattern != "" {
			h = lookup(key + "." + c.ig.pattern)
		}
		if h == nil {
			h = lookup(key)
		}
		if h == nil {
			return nil, &stateError{Name: ErrTaskFailed,
				Cause: fmt.Sprintf("no handler is registered for the integration %s (the task's Resource %s)", key, c.resource)}
		}
	} else if h = lookup(c.function); h == nil {
		return nil, &stateError{Name: "Lambda.ResourceNotFoundException",
			Cause: fmt.Sprintf("Function not found: arn:aws:lambda:%s:%s:function:%s (no handler registered)", e.opts.Region, e.opts.Account, c.function)}
	}
	out, err := safeInvoke(withTaskInfo(ctx, c), h, c.payload)
	if err != nil {
		return nil, handlerError(err)
	}
	if c.lambdaInvoke() {
		return lambdaInvokeResponse(out)
	}
	return out, nil
}

// panicError is what a panicking handler returns, as Lambda reports a panic.
type panicError struct{ msg string }

func (p *panicError) Error() string { return p.msg }

func safeInvoke(ctx context.Context, h Handler, payload []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{msg: fmt.Sprint(r)}
		}
	}()
	return h.Invoke(ctx, payload)
}
