package telemetry_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/ora-runtime/ora/shared/telemetry"
)

// lines decodes the JSON lines logged to buf.
func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not one JSON object: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestLoggerKeys(t *testing.T) {
	var buf bytes.Buffer
	log := telemetry.NewLogger(&buf, "ora-test")
	ctx := telemetry.WithInvocation(context.Background(), telemetry.Invocation{
		FunctionName: "ora-plan", RequestID: "req-1", TraceID: "Root=1-abc", ColdStart: true,
	})
	ctx = telemetry.WithFields(ctx, telemetry.KeySignalID, "sig-1", telemetry.KeyDecisionID, "dec-1", telemetry.KeyPacketID, "")
	log.InfoContext(ctx, "hello", "n", 3)
	got := lines(t, &buf)
	if len(got) != 1 {
		t.Fatalf("got %d lines, want 1", len(got))
	}
	want := map[string]any{
		"level": "INFO", "message": "hello", "service": "ora-test", "cold_start": true,
		"function_name": "ora-plan", "function_request_id": "req-1", "xray_trace_id": "Root=1-abc",
		"signal_id": "sig-1", "decision_id": "dec-1", "n": float64(3),
	}
	for k, v := range want {
		if got[0][k] != v {
			t.Errorf("%s = %v, want %v", k, got[0][k], v)
		}
	}
	if _, ok := got[0]["timestamp"].(string); !ok {
		t.Errorf("timestamp missing: %v", got[0])
	}
	for _, k := range []string{"msg", "time", "packet_id"} {
		if _, ok := got[0][k]; ok {
			t.Errorf("unexpected key %s in %v", k, got[0])
		}
	}
}

func TestLoggerRedacts(t *testing.T) {
	const secret, token, sig = "whsec-planted-0001", "bearer-planted-0002", "sha256=planted0003"
	var buf bytes.Buffer
	log := telemetry.NewLogger(&buf, "ora-test", func(o *telemetry.LogOptions) {
		o.Secrets = []string{secret, token}
	})
	tests := []struct {
		name string
		log  func()
	}{
		{"secret-named attribute", func() { log.Info("config", "signing_secret", "anything-at-all") }},
		{"task token", func() { log.Info("escalate", "task_token", "AAAA-task-token") }},
		{"signature header", func() { log.Info("webhook", "X-Hub-Signature-256", sig) }},
		{"authorization header", func() { log.Info("request", "Authorization", "Bearer "+token) }},
		{"known secret inside a message", func() { log.Error("bad secret " + secret) }},
		{"known token inside a value", func() { log.Warn("refused", "detail", "token "+token+" unknown") }},
		{"known secret inside an error", func() { log.Error("failed", "err", fmt.Errorf("sign with %s: %w", secret, errors.New("boom"))) }},
		{"grouped header", func() { log.Info("req", slog.Group("headers", "x-ora-signature", sig)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf.Reset()
			tt.log()
			out := buf.String()
			for _, planted := range []string{secret, token, sig, "anything-at-all", "AAAA-task-token"} {
				if strings.Contains(out, planted) {
					t.Errorf("planted %q logged: %s", planted, out)
				}
			}
			if !strings.Contains(out, telemetry.Redacted) {
				t.Errorf("no %s marker: %s", telemetry.Redacted, out)
			}
		})
	}
}

// recorder is a Metrics that remembers every call.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) rec(kind, name string, v float64, labels []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("%s %s %v %v", kind, name, labels, v))
}
func (r *recorder) Add(n string, v float64, l ...string)     { r.rec("add", n, v, l) }
func (r *recorder) Observe(n string, v float64, l ...string) { r.rec("observe", n, v, l) }
func (r *recorder) Set(n string, v float64, l ...string)     { r.rec("set", n, v, l) }

// TransientError stands for a taskerr type.
type TransientError struct{ Message string }

func (e *TransientError) Error() string { return e.Message }

func TestTaskMetricsByStage(t *testing.T) {
	tests := []struct {
		stage, in, out string
		want           []string // calls beyond the stage duration
	}{
		{"plan", `{"signal_id":"s"}`, `{"jobs_bucket":"b","jobs_key":"k","job_count":2}`, []string{"add ora_waves_started_total [] 1", "add ora_orientation_jobs_total [] 2"}},
		{"fetch", `{"signal_id":"s"}`, `{"job_id":"j","facts":5}`, []string{"add ora_orientation_facts_total [] 5"}},
		{"compile", `{"signal_id":"s"}`, `{"packet_id":"p","token_used":500,"token_budget":1000}`, []string{"observe ora_packet_tokens [] 500", "observe ora_orientation_budget_ratio [] 0.5"}},
		{"reason", `{"signal_id":"s"}`, `{"decision_id":"d","band":"high","confidence":0.9,"input_tokens":10,"output_tokens":4,"cost_usd":0.01}`, []string{
			"add ora_decisions_total [band high author_type rules] 1", "observe ora_decision_confidence [band high] 0.9",
			"add ora_model_tokens_total [direction input] 10", "add ora_model_tokens_total [direction output] 4", "add ora_model_cost_usd_total [] 0.01"}},
		{"reason", `{"signal_id":"s"}`, `{"decision_id":"d","band":"high","confidence":0.9,"input_tokens":10,"output_tokens":4,"cost_usd":0.01,"crystallization_reason":"HighConfidence","chain_length":2}`, []string{
			"add ora_decisions_total [band high author_type rules] 1", "observe ora_decision_confidence [band high] 0.9",
			"add ora_model_tokens_total [direction input] 10", "add ora_model_tokens_total [direction output] 4", "add ora_model_cost_usd_total [] 0.01",
			"add ora_model_chains_total [crystallization_reason HighConfidence stages 2] 1"}},
		{"reason", `{"signal_id":"s"}`, `{"decision_id":"d","band":"high","confidence":0.9,"crystallization_reason":"PatternMatch"}`, []string{
			"add ora_decisions_total [band high author_type rules] 1", "observe ora_decision_confidence [band high] 0.9",
			"add ora_model_chains_total [crystallization_reason PatternMatch stages 0] 1"}},
		// A wave waiting for its reason batch has no decision to count yet.
		{"reason", `{"signal_id":"s"}`, `{"batch_wait":{"batch_id":"s0@1","closes_at":"2026-11-26T10:00:01Z","seconds":1}}`, nil},
		{"act", `{"signal_id":"s","decision_id":"d"}`, `{"outcome":"executed"}`, []string{"add ora_actions_total [type any outcome executed] 1"}},
		{"witness", `{"signal_id":"s"}`, `{"validator":"witness","verdict":"pass"}`, []string{"add ora_validator_verdicts_total [validator witness verdict pass] 1"}},
		{"validate-safety", `{"signal_id":"s"}`, `{"validator":"safety","verdict":"fail"}`, []string{"add ora_validator_verdicts_total [validator safety verdict fail] 1"}},
		{"escalate", `{"signal_id":"s","task_token":"t"}`, `{"status":"awaiting-approval"}`, []string{"add ora_escalations_total [] 1"}},
		{"record", `{"signal_id":"s"}`, `{"final":"completed"}`, []string{"add ora_waves_total [outcome completed] 1"}},
		{"operate", `{"signal_id":"s","failure":{"Error":"ScopeViolation"}}`, `{"error":"x"}`, []string{"add ora_incidents_total [class app] 1", "add ora_waves_total [outcome failed] 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.stage, func(t *testing.T) {
			m := &recorder{}
			var buf bytes.Buffer
			h := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(tt.out), nil
			}
			task := telemetry.Task(tt.stage, h, telemetry.NewLogger(&buf, "ora"), m, func(o *telemetry.TaskOptions) {
				o.AuthorType = "rules"
				o.Classify = func(string) string { return "app" }
			})
			if _, err := task.Invoke(context.Background(), []byte(tt.in)); err != nil {
				t.Fatal(err)
			}
			if len(m.calls) == 0 || !strings.HasPrefix(m.calls[0], "observe ora_stage_duration_seconds [stage "+tt.stage+" outcome ok]") {
				t.Fatalf("first call %v, want the stage duration", m.calls)
			}
			if got := m.calls[1:]; strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("calls\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestTaskLogsOneLinePerOutcome(t *testing.T) {
	var buf bytes.Buffer
	m := &recorder{}
	fail := true
	h := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		if fail {
			return nil, &TransientError{"ledger throttled"}
		}
		return json.RawMessage(`{"decision_id":"dec-9","band":"low"}`), nil
	}
	task := telemetry.Task("reason", h, telemetry.NewLogger(&buf, "ora"), m)
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-7"})
	//lint:ignore SA1029 aws-lambda-go puts the trace header under this very string key
	ctx = context.WithValue(ctx, "x-amzn-trace-id", "Root=1-trace")
	in := []byte(`{"signal_id":"sig-3","task_token":"planted-task-token"}`)
	if _, err := task.Invoke(ctx, in); err == nil {
		t.Fatal("want the handler's error")
	}
	fail = false
	if _, err := task.Invoke(ctx, in); err != nil {
		t.Fatal(err)
	}
	got := lines(t, &buf)
	if len(got) != 2 {
		t.Fatalf("got %d lines, want 2: %s", len(got), buf.String())
	}
	if strings.Contains(buf.String(), "planted-task-token") {
		t.Errorf("task token logged: %s", buf.String())
	}
	checks := []struct {
		line      int
		key, want any
	}{
		{0, "message", "stage failed"}, {0, "level", "ERROR"}, {0, "error_code", "TransientError"},
		{0, "signal_id", "sig-3"}, {0, "wave_id", "sig-3"}, {0, "function_request_id", "req-7"},
		{0, "xray_trace_id", "Root=1-trace"}, {0, "stage", "reason"},
		{1, "message", "stage ok"}, {1, "error_code", ""}, {1, "decision_id", "dec-9"}, {1, "cold_start", false},
	}
	for _, c := range checks {
		if got[c.line][c.key.(string)] != c.want {
			t.Errorf("line %d %s = %v, want %v", c.line, c.key, got[c.line][c.key.(string)], c.want)
		}
	}
	if _, ok := got[1]["latency_ms"].(float64); !ok {
		t.Errorf("latency_ms missing: %v", got[1])
	}
	if !strings.Contains(strings.Join(m.calls, "\n"), "add ora_stage_failures_total [stage reason error_code TransientError] 1") {
		t.Errorf("failure not counted: %v", m.calls)
	}
}

func TestCatalogLabels(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range telemetry.Catalog {
		if seen[d.Name] {
			t.Errorf("%s listed twice", d.Name)
		}
		seen[d.Name] = true
		if !strings.HasPrefix(d.Name, "ora_") {
			t.Errorf("%s lacks the ora_ prefix", d.Name)
		}
		if (d.Kind == telemetry.Counter) != strings.HasSuffix(d.Name, "_total") {
			t.Errorf("%s: counters, and only counters, end in _total", d.Name)
		}
		for _, l := range d.Labels {
			if strings.HasSuffix(l, "_id") {
				t.Errorf("%s: label %s is an id", d.Name, l)
			}
		}
	}
}

// TestREADMEDocumentsEveryMetric: docs/observability.md's metrics table lists every
// catalogued metric with its type.
func TestREADMEDocumentsEveryMetric(t *testing.T) {
	b, err := os.ReadFile("../../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range telemetry.Catalog {
		row := fmt.Sprintf("| `%s` | %s |", d.Name, d.Kind)
		if !strings.Contains(string(b), row) {
			t.Errorf("docs/observability.md lacks the row %q", row)
		}
	}
}

// A Distributed Map batch carries the wave's keys in its BatchInput; the
// stage line has them.
func TestTaskLogsABatchsWaveKeys(t *testing.T) {
	var buf bytes.Buffer
	h := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"jobs":2,"facts":3}`), nil
	}
	task := telemetry.Task("fetch", h, telemetry.NewLogger(&buf, "ora"), &recorder{})
	if _, err := task.Invoke(context.Background(), []byte(`{"BatchInput":{"signal_id":"sig-4"},"Items":[{"job":{}},{"job":{}}]}`)); err != nil {
		t.Fatal(err)
	}
	got := lines(t, &buf)
	if len(got) != 1 || got[0]["signal_id"] != "sig-4" || got[0]["wave_id"] != "sig-4" {
		t.Errorf("got %v, want one line with signal_id and wave_id sig-4", got)
	}
}

// Keys that name credentials are sensitive; a model's token counts and
// budgets are numbers a reader needs (the console showed the packet's budget
// blank).
func TestSensitiveKeys(t *testing.T) {
	for key, want := range map[string]bool{
		"task_token": true, "taskToken": true, "TaskToken": true, "access_token": true, "refresh_token": true,
		"id_token": true, "token": true, "bearer_token": true, "client_secret": true, "api_key": true,
		"X-Hub-Signature-256": true, "Authorization": true, "password": true, "input_tokens_secret": true,
		"token_budget": false, "token_used": false, "estimated_tokens": false, "max_tokens": false,
		"inputTokens": false, "outputTokens": false, "totalTokens": false, "cacheReadInputTokens": false,
		"tokens_used": false, "band": false, "utility": false,
	} {
		if got := telemetry.Sensitive(key); got != want {
			t.Errorf("Sensitive(%q) = %v, want %v", key, got, want)
		}
	}
}
