package sfnapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/google/uuid"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// The ARNs the API takes, as AWS shapes them (a region such as ora dev's
// "local" included).
var (
	machineArn   = regexp.MustCompile(`^arn:aws[a-z-]*:states:[a-z0-9-]+:\d{12}:stateMachine:[^:\s]{1,80}$`)
	executionArn = regexp.MustCompile(`^arn:aws[a-z-]*:states:[a-z0-9-]+:\d{12}:(execution|express):[^:\s]{1,80}:[^:\s]{1,80}$`)
)

// State machine types.
const (
	typeStandard = "STANDARD"
	typeExpress  = "EXPRESS"
)

// Page sizes when maxResults is 0, as AWS's.
const (
	defaultListPage    = 100
	defaultHistoryPage = 100
)

// engineFor returns the engine holding the state machine arn.
func (s *Server) engineFor(arn string) (*stepfn.Engine, stepfn.StateMachine, error) {
	if !machineArn.MatchString(arn) {
		return nil, stepfn.StateMachine{}, clientErr(codeInvalidArn, "Invalid Arn: '%s'", arn)
	}
	for _, e := range s.engines {
		if sm, err := e.DescribeStateMachine(arn); err == nil {
			return e, sm, nil
		}
	}
	return nil, stepfn.StateMachine{}, clientErr("StateMachineDoesNotExist", "State Machine Does Not Exist: '%s'", arn)
}

// executionIn returns the engine running or holding the execution arn, and
// its description.
func (s *Server) executionIn(ctx context.Context, arn string) (*stepfn.Engine, stepfn.Execution, error) {
	if !executionArn.MatchString(arn) {
		return nil, stepfn.Execution{}, clientErr(codeInvalidArn, "Invalid Arn: '%s'", arn)
	}
	for _, e := range s.engines {
		x, err := e.DescribeExecution(ctx, arn)
		if err == nil {
			return e, x, nil
		}
		if stepfn.ErrorCode(err) != stepfn.CodeExecutionDoesNotExist {
			return nil, stepfn.Execution{}, err
		}
	}
	return nil, stepfn.Execution{}, clientErr("ExecutionDoesNotExist", "Execution Does Not Exist: '%s'", arn)
}

// metaOf returns the API's record of a state machine (the defaults for one
// not created here).
func (s *Server) metaOf(arn string) machineMeta {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.meta[arn]; ok {
		return m
	}
	return machineMeta{typ: typeStandard, roleArn: s.roleArn}
}

// owned reports whether a state machine was created through this API (and so
// may be updated or deleted here).
func (s *Server) owned(e *stepfn.Engine) bool { return e == s.primary }

func (s *Server) createStateMachine(_ *http.Request, body []byte) (any, error) {
	var in struct {
		Name       string `json:"name"`
		Definition string `json:"definition"`
		RoleArn    string `json:"roleArn"`
		Type       string `json:"type"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if in.Name == "" || in.Definition == "" {
		return nil, validation("name and definition are required")
	}
	if in.Type == "" {
		in.Type = typeStandard
	}
	if in.Type != typeStandard && in.Type != typeExpress {
		return nil, validation("type must be STANDARD or EXPRESS, got %q", in.Type)
	}
	if in.RoleArn == "" {
		in.RoleArn = s.roleArn
	}
	if err := stepfn.Validate([]byte(in.Definition)); err != nil {
		return nil, err
	}
	for _, e := range s.engines {
		for _, sm := range e.ListStateMachines() {
			if sm.Name != in.Name {
				continue
			}
			// Creating the same machine again answers the first creation.
			if e == s.primary && bytes.Equal(sm.Definition, []byte(in.Definition)) && s.metaOf(sm.Arn).typ == in.Type {
				return map[string]any{"stateMachineArn": sm.Arn, "creationDate": at(sm.CreationDate)}, nil
			}
			return nil, clientErr(codeAlreadyExists, "State Machine Already Exists: '%s'", sm.Arn)
		}
	}
	arn, err := s.primary.CreateStateMachine(in.Name, []byte(in.Definition))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.meta[arn] = machineMeta{typ: in.Type, roleArn: in.RoleArn}
	s.mu.Unlock()
	sm, err := s.primary.DescribeStateMachine(arn)
	if err != nil {
		return nil, err
	}
	return map[string]any{"stateMachineArn": arn, "creationDate": at(sm.CreationDate)}, nil
}

func (s *Server) updateStateMachine(_ *http.Request, body []byte) (any, error) {
	var in struct {
		StateMachineArn string `json:"stateMachineArn"`
		Definition      string `json:"definition"`
		RoleArn         string `json:"roleArn"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	e, sm, err := s.engineFor(in.StateMachineArn)
	if err != nil {
		return nil, err
	}
	if !s.owned(e) {
		return nil, validation("%s is one of ora's own state machines: it can be run here, not changed", sm.Arn)
	}
	if in.Definition == "" && in.RoleArn == "" {
		return nil, clientErr("MissingRequiredParameter", "give a definition or a roleArn to update")
	}
	if in.Definition != "" {
		if _, err := e.CreateStateMachine(sm.Name, []byte(in.Definition)); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	m := s.meta[sm.Arn]
	if in.RoleArn != "" {
		m.roleArn = in.RoleArn
	}
	s.meta[sm.Arn] = m
	s.mu.Unlock()
	if sm, err = e.DescribeStateMachine(sm.Arn); err != nil {
		return nil, err
	}
	return map[string]any{"updateDate": at(sm.UpdateDate), "revisionId": revision(sm)}, nil
}

// revision is the state machine's revisionId: a UUID that changes with each
// update of its definition.
func revision(sm stepfn.StateMachine) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(fmt.Sprintf("%s#%d", sm.Arn, sm.Revision))).String()
}

func (s *Server) describeStateMachine(_ *http.Request, body []byte) (any, error) {
	var in struct {
		StateMachineArn string `json:"stateMachineArn"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	_, sm, err := s.engineFor(in.StateMachineArn)
	if err != nil {
		return nil, err
	}
	m := s.metaOf(sm.Arn)
	return map[string]any{
		"stateMachineArn": sm.Arn, "name": sm.Name, "status": "ACTIVE", "definition": string(sm.Definition),
		"roleArn": m.roleArn, "type": m.typ, "creationDate": at(sm.CreationDate), "revisionId": revision(sm),
	}, nil
}

func (s *Server) listStateMachines(_ *http.Request, body []byte) (any, error) {
	var in struct {
		MaxResults int    `json:"maxResults"`
		NextToken  string `json:"nextToken"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	from, size, err := pageStart(in.NextToken, in.MaxResults, defaultListPage)
	if err != nil {
		return nil, err
	}
	var all []stepfn.StateMachine
	for _, e := range s.engines {
		all = append(all, e.ListStateMachines()...)
	}
	type item struct {
		StateMachineArn string `json:"stateMachineArn"`
		Name            string `json:"name"`
		Type            string `json:"type"`
		CreationDate    *epoch `json:"creationDate"`
	}
	items := []item{}
	end, next := page(len(all), from, size)
	for _, sm := range all[min(from, len(all)):end] {
		items = append(items, item{sm.Arn, sm.Name, s.metaOf(sm.Arn).typ, at(sm.CreationDate)})
	}
	return map[string]any{"stateMachines": items, "nextToken": omitEmpty(next)}, nil
}

// omitEmpty is nil for "" so that a JSON field is null, which the SDKs read
// as absent.
func omitEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Server) deleteStateMachine(_ *http.Request, body []byte) (any, error) {
	var in struct {
		StateMachineArn string `json:"stateMachineArn"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	e, sm, err := s.engineFor(in.StateMachineArn)
	if apiCode(err) == "StateMachineDoesNotExist" {
		return struct{}{}, nil // deleting is idempotent, as on AWS
	}
	if err != nil {
		return nil, err
	}
	if !s.owned(e) {
		return nil, validation("%s is one of ora's own state machines: it can be run here, not deleted", sm.Arn)
	}
	if err := e.DeleteStateMachine(sm.Arn); err != nil && stepfn.ErrorCode(err) != stepfn.CodeStateMachineDoesNotExist {
		return nil, err
	}
	s.mu.Lock()
	delete(s.meta, sm.Arn)
	s.mu.Unlock()
	return struct{}{}, nil
}

// apiCode is the API error code of err, "" when it is not an *apiError.
func apiCode(err error) string {
	if ae, ok := err.(*apiError); ok {
		return ae.code
	}
	return ""
}

// startIn is StartExecution's and StartSyncExecution's request.
type startIn struct {
	StateMachineArn string  `json:"stateMachineArn"`
	Name            string  `json:"name"`
	Input           *string `json:"input"`
}

// start starts an execution as StartExecution does and returns its engine.
func (s *Server) start(ctx context.Context, body []byte) (*stepfn.Engine, string, error) {
	var in startIn
	if err := decode(body, &in); err != nil {
		return nil, "", err
	}
	e, _, err := s.engineFor(in.StateMachineArn)
	if err != nil {
		return nil, "", err
	}
	if in.Name == "" {
		in.Name = uuid.NewString()
	}
	input := []byte("{}")
	if in.Input != nil {
		input = []byte(*in.Input)
	}
	arn, err := e.StartExecution(ctx, in.StateMachineArn, in.Name, input)
	return e, arn, err
}

func (s *Server) startExecution(r *http.Request, body []byte) (any, error) {
	e, arn, err := s.start(context.WithoutCancel(r.Context()), body)
	if err != nil {
		return nil, err
	}
	x, err := e.DescribeExecution(r.Context(), arn)
	if err != nil {
		return nil, err
	}
	return map[string]any{"executionArn": arn, "startDate": at(x.StartDate)}, nil
}

func (s *Server) startSyncExecution(r *http.Request, body []byte) (any, error) {
	var in startIn
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if _, _, err := s.engineFor(in.StateMachineArn); err != nil {
		return nil, err
	}
	if s.metaOf(in.StateMachineArn).typ != typeExpress {
		return nil, clientErr(codeTypeNotSupported, "StartSyncExecution runs EXPRESS state machines; %s is STANDARD", in.StateMachineArn)
	}
	e, arn, err := s.start(context.WithoutCancel(r.Context()), body)
	if err != nil {
		return nil, err
	}
	x, err := e.Wait(r.Context(), arn)
	if err != nil {
		return nil, err
	}
	d := describe(x)
	d.RedriveStatus = ""
	return d, nil
}

// execIn is the field of a request naming an execution.
type execIn struct {
	ExecutionArn string `json:"executionArn"`
}

func (x *execIn) arn() string { return x.ExecutionArn }

// decodeExecution decodes a request naming an execution into in, and finds
// the execution.
func (s *Server) decodeExecution(r *http.Request, body []byte, in interface{ arn() string }) (*stepfn.Engine, stepfn.Execution, error) {
	if err := decode(body, in); err != nil {
		return nil, stepfn.Execution{}, err
	}
	return s.executionIn(r.Context(), in.arn())
}

func (s *Server) describeExecution(r *http.Request, body []byte) (any, error) {
	_, x, err := s.decodeExecution(r, body, &execIn{})
	if err != nil {
		return nil, err
	}
	return describe(x), nil
}

func (s *Server) listExecutions(r *http.Request, body []byte) (any, error) {
	var in struct {
		StateMachineArn string `json:"stateMachineArn"`
		StatusFilter    string `json:"statusFilter"`
		MaxResults      int    `json:"maxResults"`
		NextToken       string `json:"nextToken"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	from, size, err := pageStart(in.NextToken, in.MaxResults, defaultListPage)
	if err != nil {
		return nil, err
	}
	e, _, err := s.engineFor(in.StateMachineArn)
	if err != nil {
		return nil, err
	}
	switch in.StatusFilter {
	case "", stepfn.StatusRunning, stepfn.StatusSucceeded, stepfn.StatusFailed, stepfn.StatusTimedOut, stepfn.StatusAborted, "PENDING_REDRIVE":
	default:
		return nil, validation("statusFilter %q is not an execution status", in.StatusFilter)
	}
	all, err := e.ListExecutions(r.Context(), in.StateMachineArn)
	if err != nil {
		return nil, err
	}
	if in.StatusFilter != "" {
		kept := all[:0]
		for _, x := range all {
			if x.Status == in.StatusFilter {
				kept = append(kept, x)
			}
		}
		all = kept
	}
	items := []executionDoc{}
	end, next := page(len(all), from, size)
	for _, x := range all[min(from, len(all)):end] {
		items = append(items, listItem(x))
	}
	return map[string]any{"executions": items, "nextToken": omitEmpty(next)}, nil
}

func (s *Server) getExecutionHistory(r *http.Request, body []byte) (any, error) {
	var in struct {
		execIn
		MaxResults           int    `json:"maxResults"`
		NextToken            string `json:"nextToken"`
		ReverseOrder         bool   `json:"reverseOrder"`
		IncludeExecutionData *bool  `json:"includeExecutionData"`
	}
	e, _, err := s.decodeExecution(r, body, &in)
	if err != nil {
		return nil, err
	}
	from, size, err := pageStart(in.NextToken, in.MaxResults, defaultHistoryPage)
	if err != nil {
		return nil, err
	}
	hist, err := e.GetExecutionHistory(r.Context(), in.ExecutionArn)
	if err != nil {
		return nil, err
	}
	if in.ReverseOrder {
		for i, j := 0, len(hist)-1; i < j; i, j = i+1, j-1 {
			hist[i], hist[j] = hist[j], hist[i]
		}
	}
	events := []eventDoc{}
	end, next := page(len(hist), from, size)
	for _, ev := range hist[min(from, len(hist)):end] {
		if in.IncludeExecutionData != nil && !*in.IncludeExecutionData {
			ev = withoutData(ev)
		}
		events = append(events, eventDoc{HistoryEvent: ev, Timestamp: at(ev.Timestamp)})
	}
	return map[string]any{"events": events, "nextToken": omitEmpty(next)}, nil
}

func (s *Server) stopExecution(r *http.Request, body []byte) (any, error) {
	var in struct {
		execIn
		Error string `json:"error"`
		Cause string `json:"cause"`
	}
	e, _, err := s.decodeExecution(r, body, &in)
	if err != nil {
		return nil, err
	}
	if err := e.StopExecution(r.Context(), in.ExecutionArn, in.Error, in.Cause); err != nil {
		return nil, err
	}
	x, err := e.DescribeExecution(r.Context(), in.ExecutionArn)
	if err != nil {
		return nil, err
	}
	return map[string]any{"stopDate": at(x.StopDate)}, nil
}

func (s *Server) redriveExecution(r *http.Request, body []byte) (any, error) {
	var in execIn
	e, _, err := s.decodeExecution(r, body, &in)
	if err != nil {
		return nil, err
	}
	if err := e.RedriveExecution(context.WithoutCancel(r.Context()), in.ExecutionArn); err != nil {
		return nil, err
	}
	x, err := e.DescribeExecution(r.Context(), in.ExecutionArn)
	if err != nil {
		return nil, err
	}
	return map[string]any{"redriveDate": at(x.RedriveDate)}, nil
}

// tokenIn is the request of SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat.
type tokenIn struct {
	TaskToken string `json:"taskToken"`
	Output    string `json:"output"`
	Error     string `json:"error"`
	Cause     string `json:"cause"`
}

// settle decodes a task token request and runs fn on each engine until one
// knows the token.
func (s *Server) settle(body []byte, fn func(e *stepfn.Engine, in tokenIn) error) (any, error) {
	var in tokenIn
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if in.TaskToken == "" {
		return nil, clientErr(codeInvalidToken, "the taskToken is empty")
	}
	var err error
	for _, e := range s.engines {
		if err = fn(e, in); stepfn.ErrorCode(err) != stepfn.CodeTaskDoesNotExist {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

func (s *Server) sendTaskSuccess(r *http.Request, body []byte) (any, error) {
	return s.settle(body, func(e *stepfn.Engine, in tokenIn) error {
		return e.SendTaskSuccess(r.Context(), in.TaskToken, []byte(in.Output))
	})
}

func (s *Server) sendTaskFailure(r *http.Request, body []byte) (any, error) {
	return s.settle(body, func(e *stepfn.Engine, in tokenIn) error {
		return e.SendTaskFailure(r.Context(), in.TaskToken, in.Error, in.Cause)
	})
}

func (s *Server) sendTaskHeartbeat(r *http.Request, body []byte) (any, error) {
	return s.settle(body, func(e *stepfn.Engine, in tokenIn) error { return e.SendTaskHeartbeat(r.Context(), in.TaskToken) })
}

func (s *Server) testState(r *http.Request, body []byte) (any, error) {
	var in struct {
		Definition      string `json:"definition"`
		Input           string `json:"input"`
		InspectionLevel string `json:"inspectionLevel"`
		StateName       string `json:"stateName"`
		Mock            *struct {
			Result      *string `json:"result"`
			ErrorOutput *struct {
				Error string `json:"error"`
				Cause string `json:"cause"`
			} `json:"errorOutput"`
		} `json:"mock"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if in.Definition == "" {
		return nil, validation("definition is required")
	}
	req := stepfn.TestStateRequest{Definition: []byte(in.Definition), StateName: in.StateName,
		Input: []byte(in.Input), InspectionLevel: in.InspectionLevel}
	if in.Mock != nil {
		req.Mock = &stepfn.TestStateMock{}
		if in.Mock.Result != nil {
			req.Mock.Result, _ = json.Marshal(*in.Mock.Result) // a string holding JSON, as AWS sends it
		}
		if eo := in.Mock.ErrorOutput; eo != nil {
			req.Mock.ErrorOutput = &struct {
				Error string `json:"error"`
				Cause string `json:"cause"`
			}{eo.Error, eo.Cause}
		}
	}
	res, err := stepfn.TestState(r.Context(), req)
	if err != nil {
		if stepfn.ErrorCode(err) != "" {
			return nil, err
		}
		// TestState's other errors are plain, each naming what is wrong.
		switch msg := err.Error(); {
		case strings.HasPrefix(msg, "the definition"):
			return nil, clientErr(codeInvalidDefinition, "%s", msg)
		case strings.HasPrefix(msg, "the input"):
			return nil, clientErr("InvalidExecutionInput", "%s", msg)
		default:
			return nil, validation("%s", msg)
		}
	}
	out := map[string]any{"status": res.Status}
	if len(res.Output) > 0 {
		out["output"] = string(res.Output)
	}
	for k, v := range map[string]string{"nextState": res.NextState, "error": res.Error, "cause": res.Cause} {
		if v != "" {
			out[k] = v
		}
	}
	if d := res.InspectionData; d != nil {
		// AWS sends each document of the data flow as a string of JSON.
		b, _ := json.Marshal(d)
		var fields map[string]json.RawMessage
		_ = json.Unmarshal(b, &fields)
		data := map[string]string{}
		for k, v := range fields {
			if k != "request" && k != "response" {
				data[k] = string(v)
			}
		}
		out["inspectionData"] = data
	}
	return out, nil
}

func (s *Server) validateDefinition(_ *http.Request, body []byte) (any, error) {
	var in struct {
		Definition string `json:"definition"`
		Type       string `json:"type"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if in.Definition == "" {
		return nil, validation("definition is required")
	}
	if in.Type != "" && in.Type != typeStandard && in.Type != typeExpress {
		return nil, validation("type must be STANDARD or EXPRESS, got %q", in.Type)
	}
	type diagnostic struct {
		Severity string `json:"severity"`
		Code     string `json:"code"`
		Message  string `json:"message"`
	}
	diags := []diagnostic{}
	result := "OK"
	if err := stepfn.Validate([]byte(in.Definition)); err != nil {
		msg := err.Error()
		var se *stepfn.Error
		if errors.As(err, &se) {
			msg = se.Message
		}
		result = "FAIL"
		diags = append(diags, diagnostic{Severity: "ERROR", Code: "SCHEMA_VALIDATION_FAILED", Message: msg})
	}
	return map[string]any{"result": result, "diagnostics": diags, "truncated": false}, nil
}
