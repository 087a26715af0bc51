package stepfn

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// RunScriptedChildren runs definition as RunScripted does, with child state
// machines: children maps a state machine name to its definition, each
// registered in the same engine (ARN arn:aws:states:<region>:<account>:
// stateMachine:<name>). A states:startExecution task (.sync or .sync:2) the
// script has no entry for runs the child its StateMachineArn names, its tasks
// answered by the same script, and answers as Step Functions does: the
// child's DescribeExecution (Output as JSON for .sync:2) when it succeeds,
// States.TaskFailed with that DescribeExecution as the cause when it does not.
// The Outcome's History is the parent's events followed by each child's, in
// the order they ran.
func RunScriptedChildren(ctx context.Context, definition []byte, children map[string][]byte, input []byte, script TaskScript, opts ...func(*Options)) (Outcome, error) {
	m, err := compileDefinition(definition)
	if err != nil {
		return Outcome{}, &Error{Code: CodeInvalidDefinition, Message: err.Error()}
	}
	all := &machine{states: map[string]*state{}}
	for n, st := range m.states {
		all.states[n] = st
	}
	names := make([]string, 0, len(children))
	for n := range children {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cm, err := compileDefinition(children[n])
		if err != nil {
			return Outcome{}, &Error{Code: CodeInvalidDefinition, Message: fmt.Sprintf("child %s: %v", n, err)}
		}
		for sn, st := range cm.states {
			all.states[sn] = st
		}
	}
	if err := script.check(all); err != nil {
		return Outcome{}, err
	}
	s := &scripted{script: script, used: map[string]int{}}
	var ran []string // child executions, in order
	base := s.invoke
	invoke := func(ctx context.Context, c call) ([]byte, *stateError) {
		if c.ig == nil || c.ig.service != "states" || c.ig.action != "startExecution" || len(s.script[c.state]) > 0 {
			return base(ctx, c)
		}
		var p struct {
			StateMachineArn string          `json:"StateMachineArn"`
			Input           json.RawMessage `json:"Input"`
		}
		if err := json.Unmarshal(c.payload, &p); err != nil {
			return nil, runtimeErr("startExecution: %v", err)
		}
		s.mu.Lock()
		name := fmt.Sprintf("child-%d", len(ran)+1)
		s.mu.Unlock()
		arn, err := s.e.StartExecution(ctx, p.StateMachineArn, name, p.Input)
		if err != nil {
			return nil, &stateError{Name: "StepFunctions." + ErrorCode(err) + "Exception", Cause: err.Error()}
		}
		s.mu.Lock()
		ran = append(ran, arn)
		s.mu.Unlock()
		c.sub.submit(SubmittedOutput(arn, s.e.clk.Now()))
		x, err := s.e.WaitFromTask(ctx, arn)
		if err != nil {
			return nil, errStopped
		}
		d := map[string]any{"ExecutionArn": x.ExecutionArn, "StateMachineArn": x.StateMachineArn, "Name": x.Name,
			"Status": x.Status, "Input": string(x.Input)}
		if x.Status != StatusSucceeded {
			d["Error"], d["Cause"] = x.Error, x.Cause
			b, _ := json.Marshal(d)
			return nil, &stateError{Name: ErrTaskFailed, Cause: string(b)}
		}
		if c.ig.pattern == patternSync2 {
			d["Output"] = json.RawMessage(x.Output)
		} else {
			d["Output"] = string(x.Output)
		}
		b, _ := json.Marshal(d)
		return b, nil
	}
	opt := append([]func(*Options){func(o *Options) {
		o.Clock = NewVirtualClock(time.Now().UTC().Truncate(time.Millisecond))
	}}, opts...)
	opt = append(opt, func(o *Options) { o.invoke = invoke })
	e := NewEngine(opt...)
	defer e.Close()
	s.e = e
	for _, n := range names {
		if _, err := e.CreateStateMachine(n, children[n]); err != nil {
			return Outcome{}, err
		}
	}
	arn, err := e.CreateStateMachine("scripted", definition)
	if err != nil {
		return Outcome{}, err
	}
	execArn, err := e.StartExecution(ctx, arn, "run", input)
	if err != nil {
		return Outcome{}, err
	}
	x, err := e.Wait(ctx, execArn)
	if err != nil {
		_ = e.StopExecution(context.Background(), execArn, "States.Aborted", "the run was cancelled")
		return Outcome{}, err
	}
	h, err := e.GetExecutionHistory(ctx, execArn)
	if err != nil {
		return Outcome{}, err
	}
	s.mu.Lock()
	kids := append([]string(nil), ran...)
	s.mu.Unlock()
	for _, k := range kids {
		ch, err := e.GetExecutionHistory(ctx, k)
		if err != nil {
			return Outcome{}, err
		}
		h = append(h, ch...)
	}
	return Outcome{Status: x.Status, Output: x.Output, Error: x.Error, Cause: x.Cause, History: h}, nil
}
