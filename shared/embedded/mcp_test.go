package embedded

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/mcp/mcptest"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// TestMCPServersConfig: mcp_servers takes stdio and streamable HTTP
// servers in ora dev, and names the entry and key of a bad one.
func TestMCPServersConfig(t *testing.T) {
	const src = "sources:\n  - {name: ci, type: hmac, secret: ci-secret-1}\n"
	load := func(t *testing.T, body string) (Config, error) {
		t.Helper()
		p := filepath.Join(t.TempDir(), "ora.yaml")
		if err := os.WriteFile(p, []byte(src+body), 0o600); err != nil {
			t.Fatal(err)
		}
		return LoadConfig(p)
	}
	c, err := load(t, `mcp_servers:
  - name: files
    command: [npx, -y, "@modelcontextprotocol/server-filesystem", ./docs]
    env: {LOG_LEVEL: warn}
  - name: tracker
    url: https://mcp.example.com/mcp
    connection: tracker
    timeout_seconds: 20
    max_result_bytes: 32768
    reasoner_write_tools: [add_comment]
    act_tools: [add_label, add_comment]
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.MCPServers) != 2 || c.MCPServers[0].Command[2] != "@modelcontextprotocol/server-filesystem" || c.MCPServers[0].Env["LOG_LEVEL"] != "warn" ||
		c.MCPServers[1].Connection != "tracker" || !c.MCPServers[1].ActAllows("add_label") || !c.MCPServers[1].ReasonerMayWrite("add_comment") {
		t.Errorf("servers %+v", c.MCPServers)
	}
	bad := map[string]struct{ body, want string }{
		"both transports": {"mcp_servers:\n  - {name: x, command: [a], url: 'https://h/mcp'}\n", "mcp_servers[0]"},
		"no transport":    {"mcp_servers:\n  - {name: x}\n", "mcp_servers[0]"},
		"unknown key":     {"mcp_servers:\n  - {name: x, url: 'https://h/mcp', act_tool: [a]}\n", "mcp_servers[0].act_tool"},
		"a name twice":    {"mcp_servers:\n  - {name: x, url: 'https://h/mcp'}\n  - {name: x, url: 'https://i/mcp'}\n", "mcp_servers[1].name"},
	}
	for name, tt := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := load(t, tt.body); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want one naming %s", err, tt.want)
			}
		})
	}
}

const labelRule = `
  - name: label-issue
    description: Label the issue the payload names, through the tracker's MCP server.
    when:
      all:
        - field: payload.label
          exists: true
    then:
      action: mcp.call
      parameters:
        server: tracker
        tool: add_label
        arguments:
          number: "{{ payload.number }}"
          label: "{{ payload.label }}"
      confidence: 0.95
      tier: 1
      author_type: auditor
      scope:
        allowed_operations: [mcp.call]
      reasoning: The signal asks for a label; labelling is reversible.
`

// TestWaveCallsAnMCPTool: a wave of ora dev whose decision is an mcp.call
// calls the tool of a streamable HTTP MCP server once, with the action's
// idempotency key in _meta, and ends SUCCEEDED with the tool's result as
// evidence (the technical validator checked it).
func TestWaveCallsAnMCPTool(t *testing.T) {
	dir := t.TempDir()
	srv, url := mcptest.HTTP(t)
	cfg := testConfig(t, dir)
	cfg.MCPServers = []mcp.ServerConfig{{Name: "tracker", URL: url, ActTools: []string{"add_label"}}}
	cfg.RulesFile = filepath.Join(dir, "rules.yaml")
	rules := strings.Replace(string(defaultrules.Default), "\nrules:\n", "\nrules:\n"+labelRule, 1)
	if err := os.WriteFile(cfg.RulesFile, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	decision, _, evs := runWave(t, cfg, `{"number":7,"label":"bug"}`)
	calls := srv.Calls()
	if len(calls) != 1 || calls[0].Tool != "add_label" || calls[0].Meta[mcp.MetaIdempotencyKey] != decision+"/0" || calls[0].Arguments["label"] != "bug" {
		t.Fatalf("the server got %+v, want one add_label with key %s/0", calls, decision)
	}
	if len(evs) != 1 || evs[0].Outcome != act.OutcomeSuccess || evs[0].Receipt == nil || !strings.Contains(string(evs[0].Receipt.Output), `"labels":["bug"]`) {
		t.Errorf("evidence %+v, want success with the tool's result", evs)
	}
}

// runWave runs one demo webhook's wave on a runtime of cfg to SUCCEEDED and
// returns its decision, the decision's entry and its evidence.
func runWave(t *testing.T, cfg Config, payload string) (string, ora.ReasonerDecision, []act.Evidence) {
	t.Helper()
	ctx := context.Background()
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src, _ := cfg.Source("demo")
	h, _ := observe.SignDelivery(src, []byte(payload), time.Now(), "mcp-1")
	rec, err := r.observer.Webhook(ctx, "demo", h, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	w, err := waves{r}.Wave(ctx, rec.WaveID)
	for deadline := time.Now().Add(30 * time.Second); err == nil && w.Status == "RUNNING" && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		w, err = waves{r}.Wave(ctx, rec.WaveID)
	}
	if err != nil || w.Status != "SUCCEEDED" {
		t.Fatalf("wave: %+v, %v; want SUCCEEDED", w, err)
	}
	entries, _ := r.ledger.Entries(ctx, rec.SignalID)
	var id string
	var d ora.ReasonerDecision
	var evs []act.Evidence
	for _, e := range entries {
		switch e.Kind {
		case ora.KindReasonerDecision:
			id = e.Qualifier
			_ = json.Unmarshal(e.Body, &d)
		case ora.KindExecutionEvidence:
			var ev act.Evidence
			_ = json.Unmarshal(e.Body, &ev)
			evs = append(evs, ev)
		}
	}
	return id, d, evs
}

// TestBedrockReasonerUsesMCPTools: in ora dev with the Bedrock reasoner (a
// fake Converse server), the model reads an issue through the tracker's
// read-only MCP tool, decides an mcp.call that labels it, and the actor
// makes that call: the read is in the decision's trace, the write has the
// action's idempotency key.
func TestBedrockReasonerUsesMCPTools(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-the-fake-bedrock")
	srv, url := mcptest.HTTP(t)
	decide := map[string]any{
		"allowed_action": "PROCEED", "safety_check_summary": "adds a label, reversible",
		"action": map[string]any{
			"type": "mcp.call", "parameters": map[string]any{"server": "tracker", "tool": "add_label", "arguments": map[string]any{"number": 7, "label": "bug"}},
			"tier": 1, "allowed_operations": []string{"mcp.call"}, "forbidden_paths": []string{}, "author_type": "auditor",
		},
		"then": []any{},
	}
	fake := bedrocktest.New(t,
		bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{{ToolUseID: "tu-1", Name: "mcp_tracker_get_issue", Input: json.RawMessage(`{"number":7}`)}}},
		bedrocktest.Tool(reason.ObservationTool, map[string]any{"confidence": 0.97, "layers": []string{"C01", "C02", "C03"}, "content": "issue 7 is a bug", "decision": decide}),
	)
	cfg := testConfig(t, t.TempDir())
	cfg.Reasoner.Kind, cfg.Reasoner.BedrockEndpoint, cfg.Reasoner.Region = "bedrock", fake.URL, "us-east-1"
	cfg.Reasoner.Bedrock.ToolsAllowed = []string{"mcp.tracker.get_issue"}
	// The operator's policy lets a model decide mcp.call and run it without
	// a human.
	maxConf := 0.95
	cfg.Reasoner.Bedrock.Policy = reason.Policy{Rules: []reason.PolicyRule{{Name: "label", Actions: []string{act.TypeMCPCall}, MaxConfidence: &maxConf}}}
	cfg.MCPServers = []mcp.ServerConfig{{Name: "tracker", URL: url, ActTools: []string{"add_label"}}}
	id, d, evs := runWave(t, cfg, `{"number":7}`)
	calls := srv.Calls()
	if len(calls) != 2 || calls[0].Tool != "get_issue" || calls[1].Tool != "add_label" || calls[1].Meta[mcp.MetaIdempotencyKey] != id+"/0" {
		t.Fatalf("the server got %+v, want get_issue (the reasoner) then add_label with key %s/0 (the actor)", calls, id)
	}
	if d.Model == nil || len(d.Model.ToolCalls) != 1 || d.Model.ToolCalls[0].Tool != "mcp.tracker.get_issue" {
		t.Errorf("decision trace %+v, want the get_issue call", d.Model)
	}
	if len(evs) != 1 || evs[0].Outcome != act.OutcomeSuccess {
		t.Errorf("evidence %+v, want the add_label call's success", evs)
	}
	// The model was offered add_label with its own arguments' schema (the
	// fake refuses an answer that breaks it: JSON text would).
	reqs := fake.Requests()
	spec := reqs[len(reqs)-1].Tool(reason.ObservationTool)
	if spec == nil {
		t.Fatal("the last request offers no decision tool")
	}
	if s := string(spec.InputSchema.JSON); !strings.Contains(s, `"tool":{"type":"string","const":"add_label"}`) || !strings.Contains(s, `"label":{"type":"string"}`) {
		t.Errorf("the decision schema does not type add_label's arguments:\n%s", s)
	}
}
