package stepfn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
)

// call is one task invocation.
type call struct {
	exec, state, resource, function string
	ig                              *integration // a service integration's parts, nil for a Lambda function ARN
	payload                         []byte
	token                           string
	sub                             *submitter // a .sync startExecution task's TaskSubmitted, else nil
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

func (f *frame) task(ctx context.Context, st *state, eff any) (any, *stateError) {
	e := f.x.e
	clk := e.clk
	waitToken, integration := st.waitToken, st.integration
	token := f.cp.Token
	if waitToken && token == "" {
		token = uuid.NewString() + "." + uuid.NewString()
	}
	now := f.takeEntered() // the first attempt starts as the state is entered
	if (f.cp.TaskStart.IsZero() || (waitToken && f.cp.Token == "")) && integration {
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
		scheduled := storedEvent{kind: evLambdaScheduled, st: st, val: payloadV, num: int32(timeout)}
		if timeout > math.MaxInt32 {
			scheduled = fullEvent(HistoryEvent{Type: "LambdaFunctionScheduled", LambdaFunctionScheduledEventDetails: &LambdaScheduledDetails{
				Resource: st.resource, Input: compactJSON(payloadV), TimeoutInSeconds: timeout}})
		}
		// The task's start in the checkpoint and its two events, under
		// one hold of the lock.
		x := f.x
		x.mu.Lock()
		if f.cp.TaskStart.IsZero() || (waitToken && f.cp.Token == "") {
			f.cp.TaskStart, f.cp.Token = now, token
		}
		x.markDirty(f.part)
		f.last = x.emitLockedAt(f.last, scheduled, now)
		f.last = x.emitLockedAt(f.last, storedEvent{kind: evLambdaStarted}, now)
		x.mu.Unlock()
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
		v, canonical, serr := handlerValue(out)
		if serr != nil {
			return nil, serr
		}
		// The history shows the handler's output as it is when it is compact
		// JSON: kept as the value when that renders to the same bytes, else
		// as a copy (a handler may reuse its bytes: aws-lambda-go's are a
		// pooled buffer).
		ev := storedEvent{kind: evLambdaSucceeded, val: v}
		if canonical || marshalsTo(v, out) {
			f.resSize = len(out) // the result's JSON size, exactly
		} else {
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
		f.x.resumeReady()
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
		if st.service == "states" && st.action == "startExecution" && (st.pattern == patternSync || st.pattern == patternSync2) {
			c.sub = &submitter{f: f, resourceType: resourceType, name: resource, open: true}
		}
		out, serr := f.invoke(ctx, c, remaining())
		c.sub.close()
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
	v, _, serr := handlerValue(out)
	return v, serr
}

// handlerValue is handlerOutput, and reports besides whether out is exactly
// what marshal renders of the value (see fastParseCanonical).
func handlerValue(out []byte) (v any, canonical bool, serr *stateError) {
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, false, nil
	}
	if len(out) > maxPayload {
		return nil, false, &stateError{Name: ErrDataLimitExceeded, Cause: "The task returned a result with a size exceeding the maximum number of bytes service limit."}
	}
	if v, canonical, ok := fastParseCanonical(out); ok {
		return v, canonical, nil
	}
	v, err := ojgParse(out)
	if err != nil {
		return nil, false, runtimeErr("The task returned a result that is not JSON: %v", err)
	}
	return v, false, nil
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

// rawOutput is the handler's output as the history shows it: its own bytes
// when they are compact JSON already.
func rawOutput(out []byte) string {
	if json.Valid(out) && !bytes.ContainsAny(out, " \t\n\r") {
		return string(out)
	}
	v, _ := handlerOutput(out) // it parsed when the task ran
	return compactJSON(v)
}
