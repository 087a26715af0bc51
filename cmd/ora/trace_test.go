package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/")

const traceSignal = "sig_trace_0001"

var traceT0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// seedWave appends a whole escalated, approved and validated wave to the
// stub API's ledger, each entry at a fixed time.
func seedWave(t *testing.T, api *stubAPI) {
	t.Helper()
	raw := []byte(`{"type":"deploy.finished","service":"billing"}`)
	sig := ora.NormalizedSignal{
		ID: traceSignal, Source: ora.Source{Type: ora.SourceWebhook, Name: "demo", Provider: "hmac", EventType: "deploy.finished"},
		Timestamp: traceT0, Payload: raw, NormalizedAt: traceT0, DedupKey: "d-1", RawDigest: ora.Digest(raw),
	}
	dec := ora.ReasonerDecision{
		ID: "dec_0001", SignalID: traceSignal, ActionType: "notify", Confidence: 0.42, Reasoning: "deploys of billing\nneed a human",
		AuthorType: ora.AuthorArchitect, Scope: ora.Scope{AllowedOperations: []string{"notify"}}, Tier: 2, Timestamp: traceT0,
		Actions: []ora.Action{{Type: "notify"}, {Type: "commitment.open"}},
	}
	entries := []struct {
		kind      ora.EntryKind
		qualifier string
		author    ora.AuthorType
		body      any
	}{
		{ora.KindSignalReceived, "", ora.AuthorObserver, sig},
		{ora.KindObservedFact, "recent-actions/facts-000", "", orient.JobFacts{JobID: "recent-actions", JobKind: orient.JobRecentActions, Facts: []ora.Fact{
			{ID: "recent-actions/00000", WaveID: traceSignal, SourceType: "recent-actions", SourceRef: "ledger:a/execution-evidence/0", Utility: 0.7, EstimatedTokens: 40},
			{ID: "recent-actions/00001", WaveID: traceSignal, SourceType: "recent-actions", SourceRef: "ledger:b/execution-evidence/0", Utility: 0.55, EstimatedTokens: 35}}}},
		{ora.KindOrientationPacket, "", "", ora.OrientationPacket{ID: "pkt_01", WaveID: traceSignal, TokenBudget: 150000, TokenUsed: 420,
			Bands: []ora.PacketBand{{Facts: []ora.Fact{{ID: "fact_01"}}}, {}}, Digest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}},
		{ora.KindReasonerDecision, "dec_0001", ora.AuthorArchitect, dec},
		{ora.KindArchitectIntent, "dec_0001/ab12", ora.AuthorArchitect, map[string]any{"decision_id": "dec_0001", "actions": dec.Actions, "confidence": 0.42, "requires_human_audit": true, "task_token": "tok"}},
		{ora.KindHumanVerdict, "dec_0001", ora.AuthorHuman, map[string]any{"verdict": "approved", "reason": "expected deploy", "by": "developer"}},
		{ora.KindExecutionEvidence, "0", ora.AuthorExecutor, map[string]any{"index": 0, "type": "notify", "outcome": "success", "targets": []string{"log"}}},
		{ora.KindExecutionEvidence, "1", ora.AuthorExecutor, map[string]any{"index": 1, "type": "commitment.open", "outcome": "success"}},
		{ora.KindValidatorResult, "technical", "", ora.ValidatorResult{Validator: ora.ValidatorTechnical, Verdict: ora.Pass, Summary: "2 actions, 2 receipts", Timestamp: traceT0}},
		{ora.KindValidatorResult, "safety", "", ora.ValidatorResult{Validator: ora.ValidatorSafety, Verdict: ora.Pass, Summary: "scope held", Timestamp: traceT0}},
		{ora.KindWitnessResult, "witness", "", ora.ValidatorResult{Validator: ora.ValidatorWitness, Verdict: ora.Pass, Summary: "raw signal re-normalizes to the recorded one", Timestamp: traceT0}},
		{ora.KindFinalVerdict, "", "", map[string]any{"outcome": "completed", "decision_id": "dec_0001", "validators": []ora.ValidatorResult{
			{Validator: ora.ValidatorTechnical, Verdict: ora.Pass, Summary: "ok"}, {Validator: ora.ValidatorSafety, Verdict: ora.Pass, Summary: "ok"}, {Validator: ora.ValidatorWitness, Verdict: ora.Pass, Summary: "ok"}}}},
	}
	for i, e := range entries {
		entry, err := ora.NewEntry(traceSignal, e.kind, e.qualifier, e.body)
		if err != nil {
			t.Fatal(err)
		}
		entry.AuthorType, entry.CreatedAt = e.author, traceT0.Add(time.Duration(i)*250*time.Millisecond)
		if _, err := api.Ledger.Append(context.Background(), entry); err != nil {
			t.Fatalf("append %s: %v", e.kind, err)
		}
	}
}

func traceWave(id string) (httpapi.Wave, error) {
	if id != traceSignal {
		return httpapi.Wave{}, ora.Errorf(ora.ENOTFOUND, "no wave %s", id)
	}
	var history []map[string]any
	states := []string{"Plan", "Fetch observations", "Fetch one", "Fetch one", "Compile", "Reason", "Route on confidence", "Escalate", "Act", "Validate", "Record"}
	history = append(history, map[string]any{"id": 1, "type": "ExecutionStarted", "timestamp": traceT0})
	for i, s := range states {
		history = append(history, map[string]any{"id": i + 2, "type": "TaskStateEntered", "timestamp": traceT0.Add(time.Duration(i+1) * 200 * time.Millisecond),
			"stateEnteredEventDetails": map[string]any{"name": s, "input": "{}"}})
	}
	history = append(history, map[string]any{"id": len(states) + 2, "type": "ExecutionSucceeded", "timestamp": traceT0.Add(2750 * time.Millisecond)})
	b, err := json.Marshal(history)
	if err != nil {
		return httpapi.Wave{}, err
	}
	return httpapi.Wave{WaveID: id, Status: "SUCCEEDED", Output: json.RawMessage(`{"final":"completed"}`), History: b}, nil
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", p, got, want)
	}
}

func TestTrace(t *testing.T) {
	api := newStubAPI(t)
	api.Wave = traceWave
	seedWave(t, api)

	code, stdout, stderr := runOra(t, "trace", traceSignal, "--config", api.Config)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr %q, want nothing", stderr)
	}
	golden(t, "trace.golden", stdout)

	reqs := api.Requests()
	var paths []string
	for _, r := range reqs {
		paths = append(paths, r.Method+" "+r.Path)
		// The default token is the first config token with orientation.read.
		if got := r.Header.Get("Authorization"); got != "Bearer reader-token-1" {
			t.Errorf("%s %s: Authorization %q, want the reader token", r.Method, r.Path, got)
		}
	}
	if want := "GET /signals/" + traceSignal + ",GET /waves/" + traceSignal; strings.Join(paths, ",") != want {
		t.Errorf("requests %v, want %s", paths, want)
	}
}

func TestTraceJSON(t *testing.T) {
	api := newStubAPI(t)
	api.Wave = traceWave
	seedWave(t, api)
	code, stdout, stderr := runOra(t, "trace", "--json", "--url", api.URL, traceSignal, "--token", "approver-token-1")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var got struct {
		Signal  ora.NormalizedSignal `json:"signal"`
		Entries []ora.Entry          `json:"entries"`
		Wave    httpapi.Wave         `json:"wave"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if got.Signal.ID != traceSignal || len(got.Entries) != 12 || got.Wave.Status != "SUCCEEDED" {
		t.Errorf("--json = signal %q, %d entries, wave %q; want %s, 12, SUCCEEDED", got.Signal.ID, len(got.Entries), got.Wave.Status, traceSignal)
	}
	if got.Entries[0].Kind != ora.KindSignalReceived || got.Entries[11].Kind != ora.KindFinalVerdict {
		t.Errorf("entries run %s..%s, want signal-received..final-verdict", got.Entries[0].Kind, got.Entries[11].Kind)
	}
	if h := api.Requests()[0].Header.Get("Authorization"); h != "Bearer approver-token-1" {
		t.Errorf("Authorization %q, want the --token", h)
	}
}

func TestTraceFailures(t *testing.T) {
	api := newStubAPI(t)
	seedWave(t, api) // no Wave: every wave is unknown
	noRead := writeCLIConfig(t, "sources:\n  - {name: demo, type: none}\ntokens:\n  - {token: approve-only-1, subject: a, scopes: [ora.approve]}\n")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "wave not found still traces", args: []string{"trace", traceSignal, "--config", api.Config}, wantCode: 0, wantStdout: "wave " + traceSignal + ": not found"},
		{name: "unknown signal", args: []string{"trace", "sig_nope", "--config", api.Config}, wantCode: 1, wantStderr: "404 Not Found"},
		{name: "no read token", args: []string{"trace", traceSignal, "--config", noRead, "--url", api.URL}, wantCode: 1, wantStderr: "401 Unauthorized"},
		{name: "unknown token", args: []string{"trace", traceSignal, "--url", api.URL, "--token", "nope-nope-nope"}, wantCode: 1, wantStderr: "unknown bearer token"},
		{name: "no id", args: []string{"trace"}, wantCode: 2, wantStderr: "want one SIGNAL_ID"},
		{name: "two ids", args: []string{"trace", "a", "b"}, wantCode: 2, wantStderr: "got 2"},
		{name: "help", args: []string{"trace", "--help"}, wantCode: 0, wantStderr: "usage: ora trace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runOra(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
			if !strings.Contains(stdout, tt.wantStdout) {
				t.Errorf("stdout %q, want it to contain %q", stdout, tt.wantStdout)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr, tt.wantStderr)
			}
		})
	}
}

func TestSummarizeEntry(t *testing.T) {
	tests := []struct {
		name string
		kind ora.EntryKind
		body string
		want string
	}{
		{name: "review requested", kind: ora.KindReviewRequested, body: `{"reason":"confidence 0.62 is in the medium band: executed and logged for review"}`,
			want: "review requested: confidence 0.62 is in the medium band: executed and logged for review"},
		{name: "failed action", kind: ora.KindExecutionEvidence, body: `{"index":0,"type":"http.request","outcome":"failure","error_type":"ScopeViolation","error":"host evil.example is not allowed"}`,
			want: "action 0 http.request: failure (ScopeViolation: host evil.example is not allowed)"},
		{name: "failing validator", kind: ora.KindValidatorResult, body: `{"validator":"safety","verdict":"FAIL","summary":"wrote under a forbidden path","attribution":{"author_type":"auditor","responsible_for":"scope"}}`,
			want: "safety FAIL: wrote under a forbidden path (responsible: auditor)"},
		{name: "operator decision", kind: ora.KindOperatorDecision, body: `{"classification":"app","taxonomy":"scope","failure":{"Error":"ScopeViolation","Cause":"forbidden path"}}`,
			want: "app failure (scope): ScopeViolation: forbidden path"},
		{name: "rejected", kind: ora.KindFinalVerdict, body: `{"outcome":"rejected","reason":"rejected by ada: wrong channel"}`,
			want: "rejected: rejected by ada: wrong channel"},
		{name: "failed", kind: ora.KindFinalVerdict, body: `{"outcome":"failed","error":"ActionFailed"}`, want: "failed (ActionFailed)"},
		{name: "human rejection", kind: ora.KindHumanVerdict, body: `{"verdict":"rejected","by":"ada"}`, want: "rejected by ada"},
		{name: "decision under an app patch", kind: ora.KindReasonerDecision, body: `{"action_type":"notify","confidence":0.9,"tier":1,"reasoning":"high","app_patch":{"kind":"input","target":"confidence","value":"high","digest":"3f2a9c0d1e7b5a6c"}}`,
			want: "notify, confidence 0.90 (high band), tier 1, decided under the operator's input patch of confidence (sha256 3f2a9c0d1e7b): high"},
		{name: "body that does not decode", kind: ora.KindReasonerDecision, body: `{"confidence":"high"}`, want: `body: {"confidence":"high"}`},
		{name: "long body is clipped", kind: ora.KindObservedFact, body: `{"fact_id":5,"pad":"` + strings.Repeat("x", 300) + `"}`, want: "body: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarizeEntry(ora.Entry{Kind: tt.kind, Body: json.RawMessage(tt.body)})
			if tt.name == "long body is clipped" {
				if n := len([]rune(got)); n > 140 || !strings.HasSuffix(got, "...") {
					t.Errorf("summary of %d runes %q, want at most 140 ending in ...", n, got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("summarizeEntry = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWaveStatesSummary(t *testing.T) {
	_, err := traceWave("other")
	if ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Fatalf("traceWave(other) error %v, want ENOTFOUND", err)
	}
	w, _ := traceWave(traceSignal)
	states, took := waveStates(w.History)
	if want := "Plan > Fetch observations > Fetch one (x2) > Compile > Reason > Route on confidence > Escalate > Act > Validate > Record"; states != want {
		t.Errorf("states %q, want %q", states, want)
	}
	if took != 2750*time.Millisecond {
		t.Errorf("took %s, want 2.75s", took)
	}
	if s, d := waveStates(json.RawMessage(`not json`)); s != "" || d != 0 {
		t.Errorf("waveStates(not json) = %q, %s; want nothing", s, d)
	}
}

func TestAwaitingHuman(t *testing.T) {
	intent := ora.Entry{Kind: ora.KindArchitectIntent, Body: json.RawMessage(`{"decision_id":"dec_1","requires_human_audit":true}`)}
	tests := []struct {
		name    string
		entries []ora.Entry
		want    string
	}{
		{name: "escalated", entries: []ora.Entry{intent}, want: "dec_1"},
		{name: "settled by a human", entries: []ora.Entry{intent, {Kind: ora.KindHumanVerdict, Body: json.RawMessage(`{}`)}}, want: ""},
		{name: "timed out", entries: []ora.Entry{intent, {Kind: ora.KindFinalVerdict, Body: json.RawMessage(`{"outcome":"rejected"}`)}}, want: ""},
		{name: "intent without audit", entries: []ora.Entry{{Kind: ora.KindArchitectIntent, Body: json.RawMessage(`{"decision_id":"dec_2"}`)}}, want: ""},
		{name: "nothing", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := awaitingHuman(tt.entries); got != tt.want {
				t.Errorf("awaitingHuman = %q, want %q", got, tt.want)
			}
		})
	}
}

// A signal whose payload nests 9,998 levels deep (stored before ingest
// bounded depth) once failed `ora trace` with "exceeded max depth"; the API
// now serves such a body as a short marker, and trace prints a bounded
// summary, --json too.
func TestTraceDeepBody(t *testing.T) {
	api := newStubAPI(t)
	seedSignal(t, api, json.RawMessage(strings.Repeat(`{"a":`, 9998)+"1"+strings.Repeat("}", 9998)))
	for _, args := range [][]string{{"trace", traceSignal}, {"trace", "--json", traceSignal}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := runOra(t, append(args, "--config", api.Config)...)
			if code != 0 || strings.Contains(stderr, "max depth") {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if len(stdout) > 16<<10 || !strings.Contains(stdout, "nested deeper than") {
				t.Errorf("stdout is %d bytes, want a bounded summary saying the body is too deep:\n%.2000s", len(stdout), stdout)
			}
		})
	}
}

// trace --json prints an answer nesting deeper than ingest allows as the API
// answered it, not indented (which grows with depth times lines).
func TestTraceJSONDeepIsCompact(t *testing.T) {
	api := newStubAPI(t)
	seedSignal(t, api, json.RawMessage(strings.Repeat(`[`, 300)+"1"+strings.Repeat("]", 300)))
	code, stdout, stderr := runOra(t, "trace", "--json", traceSignal, "--config", api.Config)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !json.Valid([]byte(stdout)) || strings.Count(stdout, "\n") > 1 || len(stdout) > 8<<10 {
		t.Errorf("stdout is %d bytes on %d lines; want one line of valid JSON", len(stdout), strings.Count(stdout, "\n"))
	}
}

// seedSignal records a signal-received entry of payload, as a store written
// before ingest bounded depth may hold.
func seedSignal(t *testing.T, api *stubAPI, payload json.RawMessage) {
	t.Helper()
	sig := ora.NormalizedSignal{ID: traceSignal, Source: ora.Source{Type: ora.SourceWebhook, Name: "demo", Provider: "hmac", EventType: "deep"},
		Timestamp: traceT0, Payload: payload, NormalizedAt: traceT0, DedupKey: "d-deep", RawDigest: ora.Digest(payload)}
	entry, err := ora.NewEntry(traceSignal, ora.KindSignalReceived, "", sig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Ledger.Append(context.Background(), entry); err != nil {
		t.Fatal(err)
	}
}
