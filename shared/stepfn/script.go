package stepfn

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// ScriptItem is one scripted invocation of a task: a result, a response, or an
// error with a cause, taking DelaySeconds of (virtual) time.
//
// Result is what the task's code returns: a Lambda function's output (for
// arn:aws:states:::lambda:invoke, the Payload the engine wraps in the
// integration's response) or, for any other service integration, the
// integration's response. Response mocks the service integration's whole
// response, used as it is: for lambda:invoke the {StatusCode, Payload,
// ExecutedVersion} object, as AWS's TestState mocks and Step Functions
// Local's mock configurations give it. A plain Lambda function ARN takes only
// Result (AWS gives the function's bare output there). For a
// .waitForTaskToken task, Result and Response alike are the callback's output.
type ScriptItem struct {
	Result       json.RawMessage `json:"result,omitempty"`
	Response     json.RawMessage `json:"response,omitempty"`
	Error        string          `json:"error,omitempty"`
	Cause        string          `json:"cause,omitempty"`
	DelaySeconds float64         `json:"delay_seconds,omitempty"`
}

// TaskScript scripts the Task states of a definition, keyed by state name:
// each invocation of the state takes the next item, and the last item repeats
// once the list is used up. For a .waitForTaskToken task the item is delivered
// through SendTaskSuccess (result) or SendTaskFailure (error, cause).
type TaskScript map[string][]ScriptItem

// Outcome is how a scripted run ended.
type Outcome struct {
	Status  string          `json:"status"`
	Output  json.RawMessage `json:"output,omitempty"`
	Error   string          `json:"error,omitempty"`
	Cause   string          `json:"cause,omitempty"`
	History []HistoryEvent  `json:"history,omitempty"`
}

// ParseTaskScript decodes and checks a tasks file.
func ParseTaskScript(b []byte) (TaskScript, error) {
	var s TaskScript
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("the tasks file is not a JSON object of state name to a list of items: %v", err)
	}
	if s == nil {
		s = TaskScript{}
	}
	return s, nil
}

// check validates the script against the definition: every key names a Task
// state, every list is non-empty, and every item has a JSON result or an error.
func (s TaskScript) check(m *machine) error {
	tasks := map[string]*state{}
	var walk func(m *machine)
	walk = func(m *machine) {
		for n, st := range m.states {
			if st.typ == "Task" {
				tasks[n] = st
			}
			for _, b := range st.branches {
				walk(b)
			}
			if st.processor != nil {
				walk(st.processor)
			}
		}
	}
	walk(m)
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st := tasks[n]
		if st == nil {
			return fmt.Errorf("tasks file: %q is not a Task state of the definition", n)
		}
		if len(s[n]) == 0 {
			return fmt.Errorf("tasks file: %q has no items", n)
		}
		for i, it := range s[n] {
			hasResult, hasResponse := len(it.Result) > 0, len(it.Response) > 0
			set := 0
			for _, b := range []bool{hasResult, hasResponse, it.Error != ""} {
				if b {
					set++
				}
			}
			if set != 1 {
				return fmt.Errorf("tasks file: %q item %d must have exactly one of result, response and error", n, i)
			}
			if hasResponse && !st.integration {
				return fmt.Errorf("tasks file: %q item %d: response mocks a service integration's response, and the state's Resource is a Lambda function ARN, whose task takes the function's output as result", n, i)
			}
			for field, raw := range map[string]json.RawMessage{"result": it.Result, "response": it.Response} {
				if len(raw) == 0 {
					continue
				}
				v, err := parseJSON(raw)
				if err != nil {
					return fmt.Errorf("tasks file: %q item %d: %s is not JSON: %v", n, i, field, err)
				}
				if _, isObject := v.(map[string]any); field == "response" && st.service == "lambda" && !st.waitToken && !isObject {
					return fmt.Errorf("tasks file: %q item %d: the response of lambda:invoke must be an object such as {\"StatusCode\":200,\"Payload\":...}", n, i)
				}
			}
			if it.Cause != "" && it.Error == "" {
				return fmt.Errorf("tasks file: %q item %d: cause without error", n, i)
			}
			if it.DelaySeconds < 0 {
				return fmt.Errorf("tasks file: %q item %d: delay_seconds is negative", n, i)
			}
		}
	}
	return nil
}

// scripted serves task calls from a TaskScript.
type scripted struct {
	script       TaskScript
	e            *Engine
	mu           sync.Mutex
	used         map[string]int
	perExecution bool // count items per execution (Options.Tasks), not per run
}

func (s *scripted) next(exec, state string) (ScriptItem, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	items := s.script[state]
	if len(items) == 0 {
		return ScriptItem{}, false
	}
	key := state
	if s.perExecution {
		key = exec + "\x00" + state
	}
	i := s.used[key]
	s.used[key]++
	if i >= len(items) {
		i = len(items) - 1
	}
	return items[i], true
}

func (s *scripted) invoke(ctx context.Context, c call) ([]byte, *stateError) {
	item, ok := s.next(c.exec, c.state)
	if !ok {
		return nil, &stateError{Name: "Lambda.ResourceNotFoundException", Cause: fmt.Sprintf("the tasks file has no entry for the state %q", c.state)}
	}
	delay := secondsDuration(item.DelaySeconds)
	clk := s.e.clk
	if c.token != "" {
		// The task is acknowledged at once; the item arrives by callback.
		clk.busy()
		go func() {
			defer clk.idle()
			if delay > 0 && sleep(ctx, clk, delay) != nil {
				return
			}
			switch {
			case item.Error != "":
				_ = s.e.SendTaskFailure(ctx, c.token, item.Error, item.Cause)
			case len(item.Response) > 0:
				_ = s.e.SendTaskSuccess(ctx, c.token, item.Response)
			default:
				_ = s.e.SendTaskSuccess(ctx, c.token, item.Result)
			}
		}()
		if c.lambdaInvoke() {
			return lambdaInvokeResponse([]byte("{}"))
		}
		return []byte("{}"), nil
	}
	if delay > 0 && sleep(ctx, clk, delay) != nil {
		return nil, errStopped
	}
	if item.Error != "" {
		return nil, &stateError{Name: item.Error, Cause: item.Cause}
	}
	switch {
	case len(item.Response) > 0:
		return item.Response, nil
	case c.lambdaInvoke():
		return lambdaInvokeResponse(item.Result)
	}
	return item.Result, nil
}

// RunScripted runs definition once with input, its tasks answered by script,
// and returns how it ended with its history. The clock is virtual unless
// Options.Clock is given. err is non-nil only when the definition or the
// script is invalid (an InvalidDefinition *Error, or a plain error naming the
// script's fault), or ctx ends first.
func RunScripted(ctx context.Context, definition, input []byte, script TaskScript, opts ...func(*Options)) (Outcome, error) {
	return RunScriptedChildren(ctx, definition, nil, input, script, opts...)
}
