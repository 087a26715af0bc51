package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/sqlite"
)

func writeEnvelope(t *testing.T, env ora.ReasoningEnvelope) string {
	t.Helper()
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "envelope.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReasonCommand(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	env := ora.ReasoningEnvelope{
		EnvelopeID: "env-cli", Timestamp: time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC),
		ProgramID: ora.ProgramPhaseTransitionValidator, Goal: "may phase 28 start?",
		KernelStateRef: ora.KernelStateRef{Mode: "ok", RealitySummary: map[string]any{"reality_green": true}},
		ToolsAllowed:   []string{},
	}
	red := env
	red.KernelStateRef = ora.KernelStateRef{Mode: "red", RealitySummary: map[string]any{"reality_green": false}}
	reply := bedrocktest.Reply{
		ToolUses: []bedrocktest.ToolUse{{ToolUseID: "t1", Name: reason.ObservationTool, Input: json.RawMessage(`{"confidence":0.9,"layers":["TESTS","DOCS"],"content":"e2e is red","decision":{"transition_status":"NOT_READY","missing_criteria":["e2e green"]}}`)}},
		Usage:    &bedrocktest.Usage{InputTokens: 1000, OutputTokens: 200, CacheWriteInputTokens: 3000},
	}
	haiku := reason.DefaultPrices()[reason.DefaultFallbackModel]
	tests := []struct {
		name     string
		env      ora.ReasoningEnvelope
		model    string
		wantCode int
		status   ora.ReasoningStatus
		price    reason.Price
	}{
		{"default model", env, "", 0, ora.ReasoningOK, reason.DefaultPrices()[reason.DefaultModel]},
		{"model flag", env, reason.DefaultFallbackModel, 0, ora.ReasoningOK, haiku},
		{"blocked in diagnostic mode", red, "", 1, ora.ReasoningBlocked, reason.Price{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var srv *bedrocktest.Server
			if tc.status == ora.ReasoningBlocked {
				srv = bedrocktest.New(t)
			} else {
				srv = bedrocktest.New(t, reply)
			}
			args := []string{"reason", "--envelope", writeEnvelope(t, tc.env), "--bedrock-endpoint", srv.URL}
			if tc.model != "" {
				args = append(args, "--model", tc.model)
			}
			var stdout, stderr bytes.Buffer
			code := dispatch(context.Background(), args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.wantCode, stderr.String())
			}
			var got struct {
				ora.ReasoningResult
				Model ora.ModelTrace `json:"model"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("output %q: %v", stdout.String(), err)
			}
			if got.Status != tc.status || got.EnvelopeID != "env-cli" {
				t.Fatalf("result = %+v, want status %s", got.ReasoningResult, tc.status)
			}
			if tc.status == ora.ReasoningBlocked {
				if len(srv.Requests()) != 0 || len(got.Decision) != 0 {
					t.Errorf("blocked run called the model %d times, decision %s", len(srv.Requests()), got.Decision)
				}
				return
			}
			model := tc.model
			if model == "" {
				model = reason.DefaultModel
			}
			wantCost := tc.price.Cost(ora.Usage{InputTokens: 1000, OutputTokens: 200, CacheWriteTokens: 3000})
			if !strings.Contains(string(got.Decision), "NOT_READY") || got.Model.ChainLength != 1 || got.Model.CrystallizationReason != "LowComplexity" || got.Model.Usage.CacheWriteTokens != 3000 || got.Model.ModelID != model || got.Model.CostUSD < wantCost-1e-9 || got.Model.CostUSD > wantCost+1e-9 {
				t.Errorf("decision %s, model trace = %+v, want model %s cost %v", got.Decision, got.Model, model, wantCost)
			}
			if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].ModelID != model {
				t.Errorf("model called = %+v", reqs)
			}
		})
	}
}

func TestReasonCommandUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no envelope", nil, 2},
		{"missing file", []string{"--envelope", filepath.Join(t.TempDir(), "nope.json")}, 1},
		{"bad flag", []string{"--nope"}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := dispatch(context.Background(), append([]string{"reason"}, tc.args...), &stdout, &stderr); code != tc.code {
				t.Errorf("exit %d, want %d (stderr %s)", code, tc.code, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

// TestReasonCommandUsesTheLedger: with --ledger, `ora reason` records its
// spend, honours the daily cap and keeps patterns, as the pipeline does.
func TestReasonCommandUsesTheLedger(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	env := ora.ReasoningEnvelope{
		EnvelopeID: "env-ledger", Timestamp: time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC),
		ProgramID: ora.ProgramPhaseTransitionValidator, Goal: "may phase 28 start?",
		KernelStateRef: ora.KernelStateRef{Mode: "ok", RealitySummary: map[string]any{"reality_green": true}},
		ToolsAllowed:   []string{},
	}
	reply := bedrocktest.Reply{
		ToolUses: []bedrocktest.ToolUse{{ToolUseID: "t1", Name: reason.ObservationTool, Input: json.RawMessage(`{"confidence":0.97,"layers":["TESTS"],"content":"red","decision":{"transition_status":"NOT_READY","missing_criteria":["e2e green"]}}`)}},
		Usage:    &bedrocktest.Usage{InputTokens: 1000, OutputTokens: 200},
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	srv := bedrocktest.New(t, reply)
	file := writeEnvelope(t, env)
	var stdout, stderr bytes.Buffer
	if code := dispatch(context.Background(), []string{"reason", "--envelope", file, "--bedrock-endpoint", srv.URL, "--ledger", path}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	day := reason.Day(time.Now())
	spent, err := db.Spend().Total(context.Background(), day)
	if err != nil || spent <= 0 {
		t.Fatalf("spend recorded = %v (%v), want the run's cost", spent, err)
	}
	// Over the cap, the next run calls no model and is BLOCKED.
	if _, err := db.Spend().Add(context.Background(), day, 100); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := dispatch(context.Background(), []string{"reason", "--envelope", file, "--bedrock-endpoint", srv.URL, "--ledger", path}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d over the cap, want 1: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), reason.DiagSpendCap) || len(srv.Requests()) != 1 {
		t.Errorf("over the cap: %d model calls, output %s", len(srv.Requests()), stdout.String())
	}
}

// The README's offline recipe: the sample envelope through the tests' fake
// Bedrock, with no AWS credentials at all.
func TestReasonFakeBedrock(t *testing.T) {
	noAWSCredentials(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{name: "sample envelope", args: []string{"--envelope", "../../events/reason/envelope.json", "--fake-bedrock"},
			wantCode: 0, want: []string{`"status": "OK"`, `"allowed_action": "PROCEED"`, `"crystallization_reason": "HighConfidence"`, `"chain_length": 1`}},
		{name: "fake and endpoint together", args: []string{"--envelope", "../../events/reason/envelope.json", "--fake-bedrock", "--bedrock-endpoint", "http://127.0.0.1:1"},
			wantCode: 2, want: []string{"exclude each other"}},
		{name: "no envelope", args: []string{"--fake-bedrock"}, wantCode: 2, want: []string{"want --envelope FILE", "usage: ora reason"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runReason(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, tt.wantCode, stdout.String(), stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String()+stderr.String(), w) {
					t.Errorf("output lacks %q:\nstdout %s\nstderr %s", w, stdout.String(), stderr.String())
				}
			}
		})
	}
	for program := range fakeDecisions {
		t.Run(string(program), func(t *testing.T) {
			env := ora.ReasoningEnvelope{EnvelopeID: "e", Timestamp: time.Now(), ProgramID: program, Goal: "g",
				KernelStateRef: ora.KernelStateRef{Mode: "ok", RealitySummary: map[string]any{"reality_green": true}}, ToolsAllowed: []string{}}
			var stdout, stderr bytes.Buffer
			if code := runReason(context.Background(), []string{"--envelope", writeEnvelope(t, env), "--fake-bedrock"}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d; stdout %s stderr %s", code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), `"status": "OK"`) {
				t.Errorf("stdout %s, want an OK result", stdout.String())
			}
		})
	}
}
