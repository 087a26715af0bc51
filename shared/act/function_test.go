package act_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/bodystore"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// helperEnv marks the test binary run as a function by the Command target.
const helperEnv = "ORA_TEST_FUNCTION_HELPER"

// TestFunctionHelperProcess is not a test: run as a command by function
// tests (with helperEnv set), it plays the user's function. Its first
// argument after "--" is the mode: ok (print what it received and log the
// idempotency key in its working directory), fail (exit 3 with a message on
// stderr), hang (never answer), big (print 10 KiB).
func TestFunctionHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	args := os.Args[slices.Index(os.Args, "--")+1:]
	var ev act.FunctionEvent
	if err := json.NewDecoder(os.Stdin).Decode(&ev); err != nil {
		fmt.Fprintln(os.Stderr, "bad event:", err)
		os.Exit(2)
	}
	switch args[0] {
	case "ok":
		f, err := os.OpenFile("keys.log", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			os.Exit(4)
		}
		fmt.Fprintln(f, ev.IdempotencyKey)
		f.Close()
		cwd, _ := os.Getwd()
		var names []string
		for _, kv := range os.Environ() {
			names = append(names, strings.SplitN(kv, "=", 2)[0])
		}
		_ = json.NewEncoder(os.Stdout).Encode(map[string]any{
			"args": args, "cwd": cwd, "env": names, "event": ev,
			"env_key": os.Getenv(act.EnvFunctionIdempotencyKey),
		})
	case "fail":
		fmt.Fprintln(os.Stderr, "the report template is missing")
		os.Exit(3)
	case "hang":
		select {}
	case "big":
		fmt.Print(strings.Repeat("x", 10<<10))
	}
	os.Exit(0)
}

// helperCommand is the configured command running the helper process.
func helperCommand(t *testing.T, timeoutSeconds int) act.FunctionConfig {
	t.Helper()
	t.Setenv(helperEnv, "1")
	t.Setenv("ORA_TEST_SECRET_TOKEN", "must-not-leak")
	return act.FunctionConfig{
		Command:        []string{os.Args[0], "-test.run=^TestFunctionHelperProcess$", "--", "{{ payload.mode }}", "title={{ payload.title }}"},
		Env:            []string{helperEnv},
		TimeoutSeconds: timeoutSeconds,
	}
}

var functionScope = ora.Scope{AllowedOperations: []string{act.TypeFunctionInvoke}, ForbiddenPaths: []string{"function/forbidden"}}

type functionFixture struct {
	db      ora.Ledger
	svc     *act.Service
	dataDir string
	bodies  bodystore.Folder
}

func newFunctionFixture(t *testing.T, build func(dataDir string) map[string]act.Function) *functionFixture {
	t.Helper()
	db := acttest.DB(t)
	f := &functionFixture{db: db, dataDir: t.TempDir(), bodies: bodystore.Folder{Root: t.TempDir()}}
	f.svc = act.New(db, functionRegistry(t, build(f.dataDir), f.bodies), acttest.Once(db), func(o *act.Options) { o.Log = quiet })
	return f
}

// localTargets builds ora dev's targets of funcs, signed with secret.
func localTargets(funcs map[string]act.FunctionConfig, dataDir string) (map[string]act.Function, error) {
	return act.LocalFunctions(funcs, dataDir, secret, nil)
}

// functionRegistry registers function.invoke over funcs.
func functionRegistry(t *testing.T, funcs map[string]act.Function, bodies ora.BodyStore) *act.Registry {
	t.Helper()
	invoke, err := act.NewFunctionInvoke(funcs, bodies)
	if err != nil {
		t.Fatal(err)
	}
	reg := act.NewRegistry()
	reg.Register(act.TypeFunctionInvoke, invoke)
	return reg
}

// local builds ora dev's targets of funcs for newFunctionFixture.
func local(t *testing.T, funcs map[string]act.FunctionConfig, signingSecret string) func(dataDir string) map[string]act.Function {
	t.Helper()
	return func(dataDir string) map[string]act.Function {
		out, err := act.LocalFunctions(funcs, dataDir, signingSecret, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

func invokeAction(t *testing.T, function string, payload map[string]any) ora.Action {
	t.Helper()
	return ora.Action{Type: act.TypeFunctionInvoke, Parameters: acttest.Params(t, map[string]any{"function": function, "payload": payload})}
}

// run records a one-action decision and acts on it.
func (f *functionFixture) run(t *testing.T, a ora.Action) (act.Result, act.Evidence, ora.DecisionStatus, error) {
	t.Helper()
	acttest.Record(t, f.db, acttest.Decision("d1", "s1", functionScope, a))
	res, err := f.svc.Act(context.Background(), "s1", "d1")
	w, lerr := act.LoadWave(context.Background(), f.db, "s1", "d1")
	if lerr != nil {
		t.Fatal(lerr)
	}
	return res, w.Evidence[0], acttest.Status(t, f.db, "d1"), err
}

func isFailed(err error) bool { var e *taskerr.ActionFailed; return errors.As(taskerr.From(err), &e) }
func isUnknown(err error) bool {
	var e *taskerr.OutcomeUnknown
	return errors.As(taskerr.From(err), &e)
}
func isTransient(err error) bool {
	var e *taskerr.TransientError
	return errors.As(taskerr.From(err), &e)
}
func isScopeRefusal(err error) bool {
	var e *taskerr.ScopeViolation
	return errors.As(taskerr.From(err), &e)
}

// A local command gets the event on stdin, its argv templated from the
// payload (one item stays one argument), only the allowed environment plus
// the event's ids, and a working directory under the data dir; its stdout is
// the evidence.
func TestFunctionCommandSuccess(t *testing.T) {
	cfg := helperCommand(t, 20)
	f := newFunctionFixture(t, local(t, map[string]act.FunctionConfig{"report": cfg}, ""))
	res, ev, st, err := f.run(t, invokeAction(t, "report", map[string]any{"mode": "ok", "title": "two words; rm -rf /"}))
	if err != nil || res.Outcome != act.OutcomeSuccess || st != ora.StatusExecuted {
		t.Fatalf("Act: %+v, %v, status %s; want success, executed", res, err, st)
	}
	var got struct {
		Args   []string          `json:"args"`
		Cwd    string            `json:"cwd"`
		Env    []string          `json:"env"`
		Event  act.FunctionEvent `json:"event"`
		EnvKey string            `json:"env_key"`
	}
	if ev.Receipt == nil || json.Unmarshal([]byte(ev.Receipt.Output), &got) != nil {
		t.Fatalf("receipt %+v: output is not the command's JSON", ev.Receipt)
	}
	if want := []string{"ok", "title=two words; rm -rf /"}; !slices.Equal(got.Args, want) {
		t.Errorf("argv after --: got %q, want %q", got.Args, want)
	}
	if want := filepath.Join(f.dataDir, "functions", "report"); got.Cwd != want {
		t.Errorf("working directory: got %s, want %s", got.Cwd, want)
	}
	if slices.Contains(got.Env, "ORA_TEST_SECRET_TOKEN") {
		t.Errorf("environment %v holds a variable not on the allow-list", got.Env)
	}
	for _, want := range []string{helperEnv, act.EnvFunctionDecisionID, act.EnvFunctionWaveID, act.EnvFunctionActionIndex, act.EnvFunctionIdempotencyKey, act.EnvFunctionName} {
		if !slices.Contains(got.Env, want) {
			t.Errorf("environment %v lacks %s", got.Env, want)
		}
	}
	wantEvent := act.FunctionEvent{DecisionID: "d1", WaveID: "s1", ActionIndex: 0, IdempotencyKey: "d1/0", Function: "report"}
	if got.Event.DecisionID != wantEvent.DecisionID || got.Event.WaveID != wantEvent.WaveID || got.Event.IdempotencyKey != wantEvent.IdempotencyKey || got.Event.Function != wantEvent.Function || got.EnvKey != "d1/0" {
		t.Errorf("event %+v (env key %q), want %+v", got.Event, got.EnvKey, wantEvent)
	}
	if ev.Receipt.Digest != ora.Digest([]byte(ev.Receipt.Output)) || ev.Receipt.Target != "function/report" {
		t.Errorf("receipt %+v: want the output's digest and target function/report", ev.Receipt)
	}
}

// Each way a command can end, and the outcome it is recorded as.
func TestFunctionCommandOutcomes(t *testing.T) {
	cfg, short := helperCommand(t, 20), helperCommand(t, 1)
	missing := act.FunctionConfig{Command: []string{filepath.Join(t.TempDir(), "no-such-program")}, TimeoutSeconds: 1}
	tests := []struct {
		name        string
		function    string
		payload     map[string]any
		wantErr     func(error) bool
		wantOutcome string
		wantStatus  ora.DecisionStatus
		wantInError string
	}{
		{"non-zero exit fails with stderr", "report", map[string]any{"mode": "fail", "title": "x"}, isFailed, act.OutcomeFailure, ora.StatusFailed, "the report template is missing"},
		{"timeout is unknown", "short", map[string]any{"mode": "hang", "title": "x"}, isUnknown, act.OutcomeUnknown, ora.StatusUnknown, "timeout"},
		{"program missing fails, never ran", "missing", map[string]any{}, isFailed, act.OutcomeFailure, ora.StatusFailed, "no-such-program"},
		{"template naming nothing fails before running", "report", map[string]any{"mode": "ok"}, isFailed, act.OutcomeFailure, ora.StatusFailed, "payload.title"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFunctionFixture(t, local(t, map[string]act.FunctionConfig{"report": cfg, "short": short, "missing": missing}, ""))
			_, ev, st, err := f.run(t, invokeAction(t, tt.function, tt.payload))
			if !tt.wantErr(err) {
				t.Fatalf("Act: %T %v", err, err)
			}
			if ev.Outcome != tt.wantOutcome || st != tt.wantStatus || !strings.Contains(ev.Error, tt.wantInError) {
				t.Errorf("evidence %s %q, status %s; want %s naming %q, %s", ev.Outcome, ev.Error, st, tt.wantOutcome, tt.wantInError, tt.wantStatus)
			}
			if tt.name == "template naming nothing fails before running" {
				if _, err := os.Stat(filepath.Join(f.dataDir, "functions", "report", "keys.log")); err == nil {
					t.Errorf("the command ran")
				}
			}
		})
	}
}

// An output longer than the inline bound is kept in the body store under
// its content address; the evidence names it.
func TestFunctionLargeOutputByReference(t *testing.T) {
	cfg := helperCommand(t, 20)
	f := newFunctionFixture(t, local(t, map[string]act.FunctionConfig{"report": cfg}, ""))
	_, ev, _, err := f.run(t, invokeAction(t, "report", map[string]any{"mode": "big", "title": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	r := ev.Receipt
	if r.Output != "" || r.OutputRef != ora.BodyKey(r.Digest) || r.OutputBytes != 10<<10 {
		t.Fatalf("receipt output %d bytes inline, ref %q, size %d; want none inline, ref %s, 10240", len(r.Output), r.OutputRef, r.OutputBytes, ora.BodyKey(r.Digest))
	}
	b, err := f.bodies.GetBody(context.Background(), r.OutputRef)
	if err != nil || ora.Digest(b) != r.Digest {
		t.Errorf("stored output: %d bytes, %v; want the output with digest %s", len(b), err, r.Digest)
	}
}

// A URL function receives the event as a signed POST with the idempotency
// key; its answer decides the outcome.
func TestFunctionURLOutcomes(t *testing.T) {
	hang := make(chan struct{})
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
		switch r.URL.Path {
		case "/ok":
			_, _ = w.Write([]byte(`{"report":"written"}`))
		case "/bad":
			http.Error(w, `{"error":"payload.title is required"}`, http.StatusUnprocessableEntity)
		case "/down":
			http.Error(w, "upstream failed", http.StatusBadGateway)
		case "/hang":
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hang) })
	closed := closedURL(t) + "/fn"

	tests := []struct {
		name        string
		url         string
		wantErr     func(error) bool
		wantOutcome string
		wantStatus  ora.DecisionStatus
	}{
		{"2xx succeeds", srv.URL + "/ok", func(err error) bool { return err == nil }, act.OutcomeSuccess, ora.StatusExecuted},
		{"4xx fails", srv.URL + "/bad", isFailed, act.OutcomeFailure, ora.StatusFailed},
		{"5xx is unknown", srv.URL + "/down", isUnknown, act.OutcomeUnknown, ora.StatusUnknown},
		{"no answer is unknown", srv.URL + "/hang", isUnknown, act.OutcomeUnknown, ora.StatusUnknown},
		{"nobody listens fails", closed, isFailed, act.OutcomeFailure, ora.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := map[string]act.FunctionConfig{"report": {URL: tt.url, TimeoutSeconds: 1}}
			f := newFunctionFixture(t, local(t, cfg, secret))
			_, ev, st, err := f.run(t, invokeAction(t, "report", map[string]any{"title": "t"}))
			if !tt.wantErr(err) {
				t.Fatalf("Act: %T %v", err, err)
			}
			if ev.Outcome != tt.wantOutcome || st != tt.wantStatus {
				t.Errorf("evidence %s (%s), status %s; want %s, %s", ev.Outcome, ev.Error, st, tt.wantOutcome, tt.wantStatus)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	for i, r := range got {
		var ev act.FunctionEvent
		if err := json.Unmarshal(bodies[i], &ev); err != nil || ev.IdempotencyKey != "d1/0" || ev.Function != "report" || string(ev.Payload) != `{"title":"t"}` {
			t.Errorf("%s: event %s (%v)", r.URL.Path, bodies[i], err)
		}
		if r.Header.Get(act.HeaderIdempotencyKey) != "d1/0" || r.Header.Get(act.HeaderSignature) != act.Sign(secret, bodies[i]) || r.Method != http.MethodPost {
			t.Errorf("%s: %s with key %q, signature %q", r.URL.Path, r.Method, r.Header.Get(act.HeaderIdempotencyKey), r.Header.Get(act.HeaderSignature))
		}
	}
}

// fakeLambda speaks the Lambda Invoke REST shape
// (POST /2015-03-31/functions/{name}/invocations): a function's answer, a
// function error (X-Amz-Function-Error), or a service error
// (X-Amzn-ErrorType and a JSON body).
type fakeLambda struct {
	mu       sync.Mutex
	calls    []string // function names
	payloads [][]byte
	answer   func(w http.ResponseWriter, r *http.Request)
}

func (f *fakeLambda) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/2015-03-31/functions/")
	name, ok2 := strings.CutSuffix(rest, "/invocations")
	if !ok || !ok2 || r.Method != http.MethodPost || r.Header.Get("X-Amz-Invocation-Type") != "RequestResponse" {
		http.Error(w, `{"message":"unexpected request"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, name)
	f.payloads = append(f.payloads, b)
	answer := f.answer
	f.mu.Unlock()
	answer(w, r)
}

func lambdaServiceError(status int, code, message string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", code)
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"Type":"User","message":%q}`, message)
	}
}

func lambdaClient(url string) *lambda.Client {
	return lambda.New(lambda.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(url),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		RetryMaxAttempts: 1,
	})
}

const reportARN = "arn:aws:lambda:us-east-1:123456789012:function:report:live"

// A Lambda function's answers: success (its payload is the evidence), a
// function error (failed), throttling and service faults (transient: nothing
// stored, the Act task's retry runs it again under the same key), a missing
// function (failed), no answer (unknown).
func TestFunctionLambdaOutcomes(t *testing.T) {
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	tests := []struct {
		name        string
		answer      func(http.ResponseWriter, *http.Request)
		wantErr     func(error) bool
		wantOutcome string // "" when nothing is recorded
		wantStatus  ora.DecisionStatus
	}{
		{"success", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Amz-Executed-Version", "7")
			_, _ = w.Write([]byte(`{"report":"s3://reports/42.md"}`))
		}, func(err error) bool { return err == nil }, act.OutcomeSuccess, ora.StatusExecuted},
		{"function error fails", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			w.Header().Set("X-Amz-Executed-Version", "7")
			_, _ = w.Write([]byte(`{"errorType":"ValueError","errorMessage":"no template for label bug","stackTrace":[]}`))
		}, isFailed, act.OutcomeFailure, ora.StatusFailed},
		{"throttled is retried", lambdaServiceError(http.StatusTooManyRequests, "TooManyRequestsException", "Rate Exceeded."), isTransient, "", ora.StatusExecuting},
		{"service fault is retried", lambdaServiceError(http.StatusInternalServerError, "ServiceException", "internal"), isTransient, "", ora.StatusExecuting},
		{"missing function fails", lambdaServiceError(http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+reportARN), isFailed, act.OutcomeFailure, ora.StatusFailed},
		{"no answer is unknown", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}, isUnknown, act.OutcomeUnknown, ora.StatusUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeLambda{answer: tt.answer}
			srv := httptest.NewServer(fake)
			t.Cleanup(srv.Close)
			cfg := map[string]act.FunctionConfig{"report": {ARN: reportARN, TimeoutSeconds: 1}}
			f := newFunctionFixture(t, func(string) map[string]act.Function {
				funcs, err := act.LambdaFunctions(cfg, lambdaClient(srv.URL), "")
				if err != nil {
					t.Fatal(err)
				}
				return funcs
			})
			res, ev, st, err := f.run(t, invokeAction(t, "report", map[string]any{"issue": 42}))
			if !tt.wantErr(err) {
				t.Fatalf("Act: %T %v", err, err)
			}
			if ev.Outcome != tt.wantOutcome || st != tt.wantStatus {
				t.Errorf("evidence %q (%s), status %s; want %q, %s", ev.Outcome, ev.Error, st, tt.wantOutcome, tt.wantStatus)
			}
			fake.mu.Lock()
			calls, payloads := fake.calls, fake.payloads
			fake.mu.Unlock()
			if len(calls) != 1 || !strings.Contains(calls[0], "report") {
				t.Fatalf("Lambda saw %v, want one invoke of %s", calls, reportARN)
			}
			var sent act.FunctionEvent
			if err := json.Unmarshal(payloads[0], &sent); err != nil || sent.IdempotencyKey != "d1/0" || string(sent.Payload) != `{"issue":42}` {
				t.Errorf("event %s (%v)", payloads[0], err)
			}
			switch tt.name {
			case "success":
				if ev.Receipt.Output != `{"report":"s3://reports/42.md"}` || ev.Receipt.ID != "7" || res.Actions[0].Outcome != act.OutcomeSuccess {
					t.Errorf("receipt %+v, result %+v; want the payload and version 7", ev.Receipt, res)
				}
			case "function error fails":
				if !strings.Contains(ev.Error, "ValueError") || !strings.Contains(ev.Error, "no template for label bug") {
					t.Errorf("error %q, want the function's errorType and errorMessage", ev.Error)
				}
			case "throttled is retried":
				// The retry, once Lambda takes it, runs the function under the
				// same idempotency key.
				fake.mu.Lock()
				fake.answer = tests[0].answer
				fake.mu.Unlock()
				if _, err := f.svc.Act(context.Background(), "s1", "d1"); err != nil {
					t.Fatalf("retry: %v", err)
				}
				fake.mu.Lock()
				defer fake.mu.Unlock()
				var again act.FunctionEvent
				if len(fake.payloads) != 2 || json.Unmarshal(fake.payloads[1], &again) != nil || again.IdempotencyKey != "d1/0" {
					t.Errorf("retry sent %d invokes, key %q; want 2, d1/0", len(fake.payloads), again.IdempotencyKey)
				}
			}
		})
	}
}

// A payload that breaks the function's schema, a function that is not
// configured and a forbidden function are refused before anything runs.
func TestFunctionRefusedBeforeRunning(t *testing.T) {
	fake := &fakeLambda{answer: func(http.ResponseWriter, *http.Request) {}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	schema := map[string]any{"type": "object", "properties": map[string]any{"issue": map[string]any{"type": "integer"}}, "required": []any{"issue"}}
	cfg := map[string]act.FunctionConfig{
		"report":    {ARN: reportARN, PayloadSchema: schema},
		"forbidden": {ARN: reportARN},
	}
	tests := []struct {
		name   string
		action ora.Action
	}{
		{"payload breaks the schema", invokeAction(t, "report", map[string]any{"issue": "forty-two"})},
		{"function not configured", invokeAction(t, "deploy", map[string]any{})},
		{"function in forbidden_paths", invokeAction(t, "forbidden", map[string]any{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFunctionFixture(t, func(string) map[string]act.Function {
				funcs, err := act.LambdaFunctions(cfg, lambdaClient(srv.URL), "")
				if err != nil {
					t.Fatal(err)
				}
				return funcs
			})
			_, ev, st, err := f.run(t, tt.action)
			if !isScopeRefusal(err) || ev.ErrorType != "ScopeViolation" || st != ora.StatusFailed {
				t.Errorf("Act: %v, evidence %+v, status %s; want a ScopeViolation", err, ev, st)
			}
		})
	}
	if len(fake.calls) != 0 {
		t.Errorf("Lambda was invoked %d times", len(fake.calls))
	}
}

// function.invoke describes itself from the configuration: the functions as
// an enum, a branch per function when one declares its payload's schema, and
// the functions as bounds.
func TestFunctionDescribe(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"issue": map[string]any{"type": "integer"}}, "required": []any{"issue"}, "additionalProperties": false}
	tests := []struct {
		name      string
		funcs     map[string]act.FunctionConfig
		wantEnums [][]string
		wantIssue bool
	}{
		{"no schema", map[string]act.FunctionConfig{"b": {URL: "http://x/b"}, "a": {URL: "http://x/a", Description: "writes the report"}}, [][]string{{"a", "b"}}, false},
		{"one schema", map[string]act.FunctionConfig{"b": {URL: "http://x/b"}, "a": {URL: "http://x/a", PayloadSchema: schema}}, [][]string{{"a"}, {"b"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := functionRegistry(t, local(t, tt.funcs, "")(t.TempDir()), nil).Catalogue()
			if len(cat) != 1 || cat[0].Type != act.TypeFunctionInvoke || !cat[0].SideEffect {
				t.Fatalf("catalogue %+v", cat)
			}
			var s struct {
				AnyOf []json.RawMessage `json:"anyOf"`
			}
			branches := []json.RawMessage{cat[0].Parameters}
			if json.Unmarshal(cat[0].Parameters, &s) == nil && len(s.AnyOf) > 0 {
				branches = s.AnyOf
			}
			var enums [][]string
			sawIssue := false
			for _, b := range branches {
				var br struct {
					Properties struct {
						Function struct {
							Enum []string `json:"enum"`
						} `json:"function"`
						Payload struct {
							Properties map[string]any `json:"properties"`
						} `json:"payload"`
					} `json:"properties"`
					Required []string `json:"required"`
				}
				if err := json.Unmarshal(b, &br); err != nil {
					t.Fatalf("branch %s: %v", b, err)
				}
				enums = append(enums, br.Properties.Function.Enum)
				sawIssue = sawIssue || br.Properties.Payload.Properties["issue"] != nil
				if !slices.Equal(br.Required, []string{"function", "payload"}) {
					t.Errorf("required %v", br.Required)
				}
			}
			if fmt.Sprint(enums) != fmt.Sprint(tt.wantEnums) || sawIssue != tt.wantIssue {
				t.Errorf("enums %v (payload schema shown %v), want %v (%v)", enums, sawIssue, tt.wantEnums, tt.wantIssue)
			}
			if len(cat[0].Bounds) == 0 || cat[0].Bounds[0] != "functions: a, b" {
				t.Errorf("bounds %q", cat[0].Bounds)
			}
		})
	}
}

func TestExpandArgs(t *testing.T) {
	event := []byte(`{"decision_id":"d1","wave_id":"s1","action_index":2,"idempotency_key":"d1/2","function":"f","payload":{"n":12345678901234567890,"s":"a b","o":{"k":[1,2]},"z":null,"ok":true}}`)
	tests := []struct {
		name    string
		argv    []string
		want    []string
		wantErr bool
	}{
		{"verbatim", []string{"/bin/report", "--flag"}, []string{"/bin/report", "--flag"}, false},
		{"string stays one argument", []string{"{{ payload.s }}"}, []string{"a b"}, false},
		{"number keeps its digits", []string{"n={{payload.n}}"}, []string{"n=12345678901234567890"}, false},
		{"object as JSON", []string{"{{ payload.o }}"}, []string{`{"k":[1,2]}`}, false},
		{"null as nothing, bool as JSON", []string{"[{{ payload.z }}]", "{{ payload.ok }}"}, []string{"[]", "true"}, false},
		{"event ids", []string{"{{ decision_id }}:{{ action_index }}:{{ idempotency_key }}"}, []string{"d1:2:d1/2"}, false},
		{"missing field", []string{"{{ payload.nope }}"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := act.ExpandArgs(tt.argv, event)
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("got %q, %v; want %q (error %v)", got, err, tt.want, tt.wantErr)
			}
			if err != nil && ora.ErrorCode(err) != ora.EINVALID {
				t.Errorf("error kind %s, want EINVALID", ora.ErrorCode(err))
			}
		})
	}
}

func TestValidateFunctions(t *testing.T) {
	tests := []struct {
		name  string
		funcs map[string]act.FunctionConfig
		field string // "" when valid
	}{
		{"valid", map[string]act.FunctionConfig{"report": {Command: []string{"./report.sh"}}, "hook": {URL: "http://127.0.0.1:9/x"}, "fn": {ARN: reportARN}}, ""},
		{"no target", map[string]act.FunctionConfig{"report": {}}, "functions.report"},
		{"not a Lambda ARN", map[string]act.FunctionConfig{"report": {ARN: "arn:aws:sqs:us-east-1:123456789012:queue"}}, "functions.report.arn"},
		{"two targets", map[string]act.FunctionConfig{"report": {URL: "http://x", ARN: reportARN}}, "functions.report"},
		{"bad name", map[string]act.FunctionConfig{"a b": {URL: "http://x"}}, "functions.a b"},
		{"timeout over the limit", map[string]act.FunctionConfig{"r": {URL: "http://x", TimeoutSeconds: 61}}, "functions.r.timeout_seconds"},
		{"schema that does not compile", map[string]act.FunctionConfig{"r": {URL: "http://x", PayloadSchema: map[string]any{"type": 12}}}, "functions.r.payload_schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := act.ValidateFunctions(tt.funcs)
			if tt.field == "" {
				if err != nil {
					t.Errorf("got %v, want valid", err)
				}
				return
			}
			if ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("got %v, want EINVALID naming %s", err, tt.field)
			}
		})
	}
}

// The CDK context and ORA_FUNCTIONS name a function by its ARN alone, or
// give its whole configuration.
func TestFunctionsFromEnv(t *testing.T) {
	env := map[string]string{act.EnvFunctions: `{"report":"` + reportARN + `","triage":{"arn":"arn:aws:lambda:us-east-1:123456789012:function:triage","timeout_seconds":20}}`}
	funcs, err := act.FunctionsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if funcs["report"].ARN != reportARN || funcs["triage"].TimeoutSeconds != 20 || len(funcs) != 2 {
		t.Errorf("got %+v", funcs)
	}
	if _, err := act.LocalFunctions(funcs, t.TempDir(), "", nil); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("ora dev took an ARN-only function: %v", err)
	}
	if _, err := act.LambdaFunctions(map[string]act.FunctionConfig{"r": {Command: []string{"x"}}}, nil, ""); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("the act Lambda took a command: %v", err)
	}
	if got, err := act.FunctionsFromEnv(func(string) string { return "" }); err != nil || len(got) != 0 {
		t.Errorf("unset: %v, %v; want none", got, err)
	}
}

// A process that dies while a function runs (it ran, the result was never
// saved) leaves the action's lock; once it expires, the retry runs the
// function again with the same idempotency key in its event, so a function
// that honours the key acts once. The command logs each key it gets in its
// working directory; the URL's server logs the header.
func TestFunctionCrashMidAction(t *testing.T) {
	cmd := helperCommand(t, 20)
	log := &keyLog{}
	srv := httptest.NewServer(log)
	t.Cleanup(srv.Close)
	fake := &fakeLambda{answer: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"ok":true}`)) }}
	lambdaSrv := httptest.NewServer(fake)
	t.Cleanup(lambdaSrv.Close)
	tests := []struct {
		name  string
		cfg   act.FunctionConfig
		build func(map[string]act.FunctionConfig, string) (map[string]act.Function, error)
		keys  func(dataDir string) []string
	}{
		{"command", cmd, localTargets, func(dataDir string) []string {
			b, _ := os.ReadFile(filepath.Join(dataDir, "functions", "report", "keys.log"))
			return strings.Fields(string(b))
		}},
		{"url", act.FunctionConfig{URL: srv.URL + "/fn", TimeoutSeconds: 20}, localTargets, func(string) []string {
			keys, _ := log.snapshot()
			return keys
		}},
		{"lambda", act.FunctionConfig{ARN: reportARN, TimeoutSeconds: 20}, func(c map[string]act.FunctionConfig, _ string) (map[string]act.Function, error) {
			return act.LambdaFunctions(c, lambdaClient(lambdaSrv.URL), "")
		}, func(string) []string {
			fake.mu.Lock()
			defer fake.mu.Unlock()
			var keys []string
			for _, p := range fake.payloads {
				var ev act.FunctionEvent
				_ = json.Unmarshal(p, &ev)
				keys = append(keys, ev.IdempotencyKey)
			}
			return keys
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := acttest.DB(t)
			once, clk := clockedOnce(db)
			dataDir := t.TempDir()
			funcs, err := tt.build(map[string]act.FunctionConfig{"report": tt.cfg}, dataDir)
			if err != nil {
				t.Fatal(err)
			}
			reg := functionRegistry(t, funcs, nil)
			acttest.Record(t, db, acttest.Decision("d1", "s1", functionScope, invokeAction(t, "report", map[string]any{"mode": "ok", "title": "t"})))

			ran := make(chan struct{})
			go func() {
				_, _ = act.New(db, reg, dying(once, ran), func(o *act.Options) { o.Log = quiet }).Act(context.Background(), "s1", "d1")
			}()
			<-ran
			svc := act.New(db, reg, once, func(o *act.Options) { o.Log = quiet })
			if _, err := svc.Act(context.Background(), "s1", "d1"); !isTransient(err) {
				t.Fatalf("retry while the lock holds: %v, want a TransientError", err)
			}
			clk.Add(20*time.Second + act.LockMargin + time.Second)
			res, err := svc.Act(context.Background(), "s1", "d1")
			if err != nil || res.Outcome != act.OutcomeSuccess {
				t.Fatalf("retry after the lock expired: %+v, %v", res, err)
			}
			if got := tt.keys(dataDir); !slices.Equal(got, []string{"d1/0", "d1/0"}) {
				t.Errorf("the function got keys %v, want d1/0 twice", got)
			}
			if got := acttest.Status(t, db, "d1"); got != ora.StatusExecuted {
				t.Errorf("status %s, want executed", got)
			}
		})
	}
}
