package stepfn

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The TestState API run locally: one state, its input, a mock of its task,
// and, by inspection level, the data flow inside the state.

// Inspection levels of TestState.
const (
	InspectionInfo  = "INFO"
	InspectionDebug = "DEBUG"
	InspectionTrace = "TRACE"
)

// TestState statuses, as AWS's TestState reports them.
const (
	TestStateSucceeded   = "SUCCEEDED"
	TestStateFailed      = "FAILED"
	TestStateCaughtError = "CAUGHT_ERROR"
	TestStateRetriable   = "RETRIABLE"
)

// TestStateMock mocks a Task state's answer, as TestState's mock does: a
// result (the service integration's response; a plain Lambda ARN's output),
// given as JSON or as a string holding JSON, or an error output.
type TestStateMock struct {
	Result      json.RawMessage `json:"result,omitempty"`
	ErrorOutput *struct {
		Error string `json:"error"`
		Cause string `json:"cause"`
	} `json:"errorOutput,omitempty"`
}

// TestStateRequest is what TestState runs.
type TestStateRequest struct {
	Definition      []byte         // a state machine (StateName picks the state) or one state's definition
	StateName       string         // the state to test; default: StartAt of a state machine, "TestState" for one state
	Input           []byte         // the state's input
	Mock            *TestStateMock // required for a Task state
	InspectionLevel string         // INFO (default), DEBUG or TRACE
}

// InspectionData is the data flow inside the state (DEBUG and TRACE).
type InspectionData struct {
	Input               json.RawMessage `json:"input"`
	AfterInputPath      json.RawMessage `json:"afterInputPath,omitempty"`
	AfterParameters     json.RawMessage `json:"afterParameters,omitempty"`
	AfterArguments      json.RawMessage `json:"afterArguments,omitempty"`
	Result              json.RawMessage `json:"result,omitempty"`
	AfterResultSelector json.RawMessage `json:"afterResultSelector,omitempty"`
	AfterResultPath     json.RawMessage `json:"afterResultPath,omitempty"`
	Variables           json.RawMessage `json:"variables,omitempty"`
	Request             json.RawMessage `json:"request,omitempty"`  // TRACE: what the task was sent
	Response            json.RawMessage `json:"response,omitempty"` // TRACE: what the task answered
}

// TestStateResult is TestState's answer.
type TestStateResult struct {
	Status         string          `json:"status"`
	Output         json.RawMessage `json:"output,omitempty"`
	NextState      string          `json:"nextState,omitempty"`
	Error          string          `json:"error,omitempty"`
	Cause          string          `json:"cause,omitempty"`
	InspectionData *InspectionData `json:"inspectionData,omitempty"`
}

// TestState runs one state with its input and its mock, as AWS's TestState
// API does: SUCCEEDED with the output and the next state, FAILED, CAUGHT_ERROR
// (a Catcher took the error: the output is the Catcher's and the next state
// its Next) or RETRIABLE (a Retrier matches the error; nothing is retried).
// err is non-nil when the request is invalid: the definition, the state name,
// the input, a missing mock for a Task state, or the inspection level.
func TestState(ctx context.Context, req TestStateRequest) (TestStateResult, error) {
	level := req.InspectionLevel
	if level == "" {
		level = InspectionInfo
	}
	if level != InspectionInfo && level != InspectionDebug && level != InspectionTrace {
		return TestStateResult{}, fmt.Errorf("the inspection level %q is not INFO, DEBUG or TRACE", level)
	}
	if len(req.Input) == 0 {
		req.Input = []byte("{}")
	}
	input, err := parseJSON(req.Input)
	if err != nil {
		return TestStateResult{}, fmt.Errorf("the input is not valid JSON: %v", err)
	}
	raw, err := parseJSON(req.Definition)
	if err != nil {
		return TestStateResult{}, fmt.Errorf("the definition is not valid JSON: %v", err)
	}
	dm, ok := raw.(map[string]any)
	if !ok {
		return TestStateResult{}, fmt.Errorf("the definition must be a JSON object")
	}
	name, stDef := req.StateName, dm
	ql, _ := dm["QueryLanguage"].(string)
	if states, isMachine := dm["States"].(map[string]any); isMachine {
		if name == "" {
			name, _ = dm["StartAt"].(string)
		}
		if stDef, ok = states[name].(map[string]any); !ok {
			return TestStateResult{}, fmt.Errorf("the definition has no state %q", name)
		}
	} else {
		ql = ""
		if name == "" {
			name = "TestState"
		}
	}
	// A machine of the state alone, each of its transitions ending in a
	// Succeed state named after the target.
	states := map[string]any{name: stDef}
	for _, t := range stateTargets(stDef) {
		if t != name {
			states[t] = map[string]any{"Type": "Succeed"}
		}
	}
	wrapper := map[string]any{"StartAt": name, "States": states}
	if ql != "" {
		wrapper["QueryLanguage"] = ql
	}
	def := marshal(wrapper)
	m, err := compileDefinition(def)
	if err != nil {
		return TestStateResult{}, &Error{Code: CodeInvalidDefinition, Message: err.Error()}
	}
	st := m.states[name]
	script := TaskScript{}
	var mockResult any
	if st.typ == "Task" {
		if req.Mock == nil || (len(req.Mock.Result) == 0) == (req.Mock.ErrorOutput == nil) {
			return TestStateResult{}, fmt.Errorf("the Task state %q needs a mock with exactly one of result and errorOutput", name)
		}
		item := ScriptItem{}
		if e := req.Mock.ErrorOutput; e != nil {
			if e.Error == "" {
				return TestStateResult{}, fmt.Errorf("the mock's errorOutput needs an error name")
			}
			item.Error, item.Cause = e.Error, e.Cause
			serr := &stateError{Name: e.Error, Cause: e.Cause}
			for _, r := range st.retry {
				if serr.matches(r.errorEquals) && r.maxAttempts > 0 {
					res := TestStateResult{Status: TestStateRetriable, Error: e.Error, Cause: e.Cause}
					if level != InspectionInfo {
						res.InspectionData = &InspectionData{Input: marshal(input)}
					}
					return res, nil
				}
			}
		} else {
			body := req.Mock.Result
			var s string
			if json.Unmarshal(body, &s) == nil && json.Valid([]byte(s)) {
				body = []byte(s) // TestState gives the result as a string holding JSON
			}
			if mockResult, err = parseJSON(body); err != nil {
				return TestStateResult{}, fmt.Errorf("the mock's result is not JSON: %v", err)
			}
			if st.integration {
				item.Response = body
			} else {
				item.Result = body
			}
		}
		script[name] = []ScriptItem{item}
	} else if req.Mock != nil {
		return TestStateResult{}, fmt.Errorf("the state %q is a %s state: only a Task state takes a mock", name, st.typ)
	}
	out, err := RunScripted(ctx, def, marshal(input), script)
	if err != nil {
		return TestStateResult{}, err
	}
	res := TestStateResult{Status: TestStateSucceeded}
	switch out.Status {
	case StatusSucceeded:
		res.Output = out.Output
		for _, ev := range out.History {
			if strings.HasSuffix(ev.Type, "StateEntered") && ev.StateEnteredEventDetails != nil && ev.StateEnteredEventDetails.Name != name {
				res.NextState = ev.StateEnteredEventDetails.Name
			}
		}
		if req.Mock != nil && req.Mock.ErrorOutput != nil {
			res.Status, res.Error, res.Cause = TestStateCaughtError, req.Mock.ErrorOutput.Error, req.Mock.ErrorOutput.Cause
		}
	default:
		res.Status, res.Error, res.Cause = TestStateFailed, out.Error, out.Cause
	}
	if level != InspectionInfo {
		res.InspectionData = inspect(st, name, input, mockResult, req.Mock, level)
	}
	return res, nil
}

// stateTargets lists the states a state's definition can go to.
func stateTargets(st map[string]any) []string {
	seen := map[string]bool{}
	add := func(v any) {
		if s, ok := v.(string); ok && s != "" {
			seen[s] = true
		}
	}
	add(st["Next"])
	add(st["Default"])
	for _, key := range []string{"Choices", "Catch"} {
		list, _ := st[key].([]any)
		for _, e := range list {
			if m, ok := e.(map[string]any); ok {
				add(m["Next"])
			}
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// inspect replays the data flow of a JSONPath state on its success path (or as
// far as an error or a JSONata state lets it), for DEBUG and TRACE.
func inspect(st *state, name string, input, mockResult any, mock *TestStateMock, level string) *InspectionData {
	d := &InspectionData{Input: marshal(input)}
	ctxObj := &lazyContext{v: map[string]any{
		"Execution": map[string]any{"Input": input},
		"State":     map[string]any{"Name": name, "RetryCount": int64(0)},
	}}
	if st.jx != nil {
		env := &jenv{states: map[string]any{"input": input, "context": ctxObj.v}}
		args := input
		if st.jx.arguments != nil {
			if v, serr := st.jx.arguments.eval(env); serr == nil {
				args = v
				d.AfterArguments = marshal(v)
			}
		}
		if level == InspectionTrace && st.typ == "Task" {
			d.Request = marshal(args)
		}
		if mockResult != nil {
			d.Result = marshal(mockResult)
			env.states["result"] = mockResult
			if level == InspectionTrace {
				d.Response = marshal(mockResult)
			}
		}
		if st.jx.assign != nil {
			if v, serr := st.jx.assign.eval(env); serr == nil {
				d.Variables = marshal(v)
			}
		}
		return d
	}
	eff := input
	if st.inputNull {
		eff = map[string]any{}
	} else if st.inputPath != nil {
		v, ok := st.inputPath.get(input, ctxObj)
		if !ok {
			return d
		}
		eff = v
	}
	d.AfterInputPath = marshal(eff)
	payload := eff
	if st.hasParameters {
		v, serr := evalTemplate(st.parameters, eff, ctxObj)
		if serr != nil {
			return d
		}
		payload = v
		d.AfterParameters = marshal(v)
	}
	if level == InspectionTrace && st.typ == "Task" {
		d.Request = marshal(payload)
	}
	var result any
	switch {
	case st.typ == "Pass" && st.hasResult:
		result = st.result
	case st.typ == "Pass":
		result = payload
	case st.typ == "Task" && mock != nil && mock.ErrorOutput == nil:
		result = mockResult
		if level == InspectionTrace {
			d.Response = marshal(mockResult)
		}
	default:
		return d
	}
	d.Result = marshal(result)
	if st.hasResultSelector {
		v, serr := evalTemplate(st.resultSelector, result, ctxObj)
		if serr != nil {
			return d
		}
		result = v
		d.AfterResultSelector = marshal(v)
	}
	if st.assign != nil {
		if vals, serr := evalAssign(st.assign, result, ctxObj); serr == nil {
			d.Variables = marshal(vals)
		}
	}
	out := input
	if !st.resultNull {
		v, serr := setResult(st.resultPath, input, result)
		if serr != nil {
			return d
		}
		out = v
	}
	d.AfterResultPath = marshal(out)
	return d
}
