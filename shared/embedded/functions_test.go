package embedded

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/ora"
)

const reportRule = `
  - name: write-report
    description: A report request runs the user's report function.
    when:
      all:
        - field: source.provider
          in: [hmac, none]
        - field: payload.kind
          equals: report
    then:
      action: function.invoke
      parameters:
        function: report
        payload:
          issue: "{{ payload.issue }}"
      confidence: 0.95
      tier: 1
      author_type: architect
      scope:
        allowed_operations: [function.invoke]
      reasoning: A report was asked for.
`

// ora dev wires the configured functions: a rule's function.invoke reaches
// the URL with the invocation event, and the wave ends with the function's
// answer as evidence.
func TestFunctionInvokeThroughTheRuntime(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var events []act.FunctionEvent
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev act.FunctionEvent
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &ev)
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
		_, _ = w.Write([]byte(`{"report":"reports/42.md"}`))
	}))
	t.Cleanup(fn.Close)
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Functions = map[string]act.FunctionConfig{"report": {URL: fn.URL + "/report", TimeoutSeconds: 5}}
	cfg.RulesFile = filepath.Join(dir, "rules.yaml")
	rules := strings.Replace(string(defaultrules.Default), "\nrules:\n", "\nrules:\n"+reportRule, 1)
	if err := os.WriteFile(cfg.RulesFile, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(srv.Close)
	rec := send(t, r, srv.URL, "report-1", `{"kind":"report","issue":42}`)
	waitOperator(t, r, rec.SignalID, "SUCCESS")
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 || events[0].WaveID != rec.SignalID || events[0].Function != "report" || string(events[0].Payload) != `{"issue":42}` ||
		events[0].IdempotencyKey != events[0].DecisionID+"/0" {
		t.Fatalf("the function got %+v, want one event for wave %s with issue 42", events, rec.SignalID)
	}
	entries, err := r.ledger.Entries(ctx, rec.SignalID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Kind != ora.KindExecutionEvidence {
			continue
		}
		var ev act.Evidence
		if err := json.Unmarshal(e.Body, &ev); err != nil || ev.Receipt == nil || ev.Receipt.Output != `{"report":"reports/42.md"}` {
			t.Errorf("evidence %s (%v), want the function's answer", e.Body, err)
		}
		return
	}
	t.Error("no execution evidence")
}
