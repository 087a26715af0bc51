package console_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
)

// consoleCanary is a registered secret (a token of the config) that a
// sender pasted into a signal and an operator into an MCP server's
// configuration and a form.
const consoleCanary = "canary-console-secret-4471"

// panelState is a state panel of the wave page: its key names the raw
// input and output routes.
var panelState = regexp.MustCompile(`<section class="state-panel" data-state="([^"]+)"`)

// A registered secret in a signal's payload and in an MCP server's
// configuration, carried through a wave that fails at Act, pauses and is
// resumed, appears on no console page: the waves list, the wave's page
// (its decision card, its states' panels), every raw body of its entries
// and states (the trace), the incidents and their pages, the motor page
// with a version's gate replay, approvals, orientation, metrics, and a
// refused form that carried it. On SQLite and on DynamoDB Local.
func TestConsoleShowsNoSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ora dev; skipped with -short")
	}
	for _, store := range []string{"sqlite", "dynamodb"} {
		t.Run(store, func(t *testing.T) { testConsoleShowsNoSecret(t, store) })
	}
}

func testConsoleShowsNoSecret(t *testing.T, store string) {
	extra := strings.Replace(operatorExtra, "faults:", "  - {token: "+consoleCanary+", subject: canary, scopes: [ora.read]}\nfaults:", 1) + `mcp_servers:
  - name: tracker
    command: [/nonexistent/tracker-mcp, --token, ` + consoleCanary + `]
    env: {TRACKER_TOKEN: ` + consoleCanary + `}
`
	if store == "dynamodb" {
		name := dynamotest.TableName("console-secrets")
		extra += fmt.Sprintf("store:\n  kind: dynamodb\n  dynamodb: {endpoint: %q, table: %s, idempotency_table: %s-idem, create_tables: true}\n",
			dynamotest.Endpoint(t), name, name)
	}
	base := startDev(t, extra)
	wave := send(t, base, `{"confidence":"high","note":"the key is `+consoleCanary+`"}`)
	waveState(t, base, wave, "PAUSED")
	var w struct {
		Operator struct {
			IncidentID string `json:"incident_id"`
		}
	}
	api(t, http.MethodGet, base+"/waves/"+wave, "", "", &w)
	inc := w.Operator.IncidentID

	// A refused resume naming the secret, and a proposed version the
	// motor page replays through the gate (which lists the MCP tools).
	cc := newConsoleClient(t, base, "/console/incidents/"+inc)
	pages := map[string]string{}
	code, body := cc.do(http.MethodPost, "/console/waves/"+wave+"/resume", url.Values{"token": {operatorToken}, "incident": {inc}, "motor": {consoleCanary}, "patch_target": {consoleCanary}})
	if code < 400 || !strings.Contains(body, `id="refused"`) {
		t.Fatalf("a resume under motor %q: %d, want a refusal", consoleCanary, code)
	}
	pages["refused resume"] = body
	rulesText := regexp.MustCompile(`(?m)^version: .*$`).ReplaceAllString(string(defaultrules.Default), `version: "1.0.3"`)
	bundle, _ := json.Marshal(map[string]any{"version": "1.0.3", "rules": rulesText, "model": map[string]string{"profile": "rules"},
		"orientation": map[string]int{"token_budget": 150000}, "changelog": "renumbered"})
	if code := api(t, http.MethodPost, base+"/motor/versions", operatorToken, string(bundle), nil); code != http.StatusCreated {
		t.Fatalf("propose motor 1.0.3: %d", code)
	}

	// Resumed as is, the wave goes on to Validate (where the witness may
	// fail it for the secret in its payload) and ends.
	var resumed struct{ Error string }
	for i := 0; i < 100; i++ {
		code := api(t, http.MethodPost, base+"/waves/"+wave+"/resume", operatorToken, `{"as_is":true}`, &resumed)
		if code == http.StatusOK || !strings.Contains(resumed.Error, "pausing") {
			if code != http.StatusOK {
				t.Fatalf("resume as is: %d %s", code, resumed.Error)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var st struct {
		Status   string
		Operator struct{ State string }
	}
	// It ends, or pauses again (the witness's failure is the operator's).
	var seen []string
	for i := 0; i < 600; i++ {
		api(t, http.MethodGet, base+"/waves/"+wave, "", "", &st)
		if len(seen) == 0 || seen[len(seen)-1] != st.Operator.State {
			seen = append(seen, st.Operator.State)
		}
		if st.Status != "RUNNING" || len(seen) > 1 && st.Operator.State == "PAUSED" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the wave is %s, its operator states %v", st.Status, seen)
	read := func(path string) string {
		t.Helper()
		code, body := cc.do(http.MethodGet, path, nil)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d", path, code)
		}
		pages["GET "+path] = body
		return body
	}
	for _, p := range []string{"/console/", "/console/approvals", "/console/metrics", "/console/incidents", "/console/incidents/" + inc,
		"/console/motor", "/console/orientation"} {
		read(p)
	}
	page := read("/console/waves/" + wave)
	if !strings.Contains(page, "kind-reasoner-decision") {
		t.Errorf("the wave's page has no decision card")
	}
	states := panelState.FindAllStringSubmatch(page, -1)
	if len(states) < 4 {
		t.Fatalf("the wave's page has %d state panels", len(states))
	}
	for _, m := range states {
		key := html.UnescapeString(m[1])
		for _, part := range []string{"input", "output"} {
			read("/console/waves/" + wave + "/raw?" + url.Values{"state": {key}, "part": {part}}.Encode())
		}
	}
	entries := 0
	for ; ; entries++ {
		code, body := cc.do(http.MethodGet, "/console/waves/"+wave+"/raw?entry="+strconv.Itoa(entries), nil)
		if code == http.StatusNotFound {
			break
		}
		pages["raw entry "+strconv.Itoa(entries)] = body
	}
	t.Logf("%d pages read, %d ledger entries", len(pages), entries)
	if entries < 5 {
		t.Errorf("the wave has %d ledger entries, want its whole record", entries)
	}
	// The secret reached the pages' sources: the markers say so.
	all := strings.Join(func() []string {
		var out []string
		for _, b := range pages {
			out = append(out, b)
		}
		return out
	}(), "\n")
	if !strings.Contains(all, "[redacted:tokens[5]]") {
		t.Errorf("no page shows the secret's redaction marker: it reached none of them, the test checks nothing")
	}
	for where, body := range pages {
		if strings.Contains(body, consoleCanary) {
			i := strings.Index(body, consoleCanary)
			t.Errorf("%s shows the secret: …%s…", where, body[max(i-120, 0):min(i+60, len(body))])
		}
	}
}

// The raw bodies (an entry's, a state's input and output) pass through the
// registry like every page: a secret the registry holds is replaced by its
// marker, whatever wrote it there.
func TestRawBodiesAreRedacted(t *testing.T) {
	s, _ := server(t, false)
	s.Secrets = ora.NewSecrets()
	s.Secrets.Add("connection:tracker", consoleCanary)
	e, err := ora.NewEntry("leaky", ora.KindSignalReceived, "", map[string]string{"note": "the key is " + consoleCanary})
	if err != nil {
		t.Fatal(err)
	}
	s.Ledger.(ledger).entries["leaky"] = []ora.Entry{e}
	s.Waves.(waves)["leaky"] = httpapi.Wave{WaveID: "leaky", Status: "SUCCEEDED", History: history(t,
		map[string]any{"type": "ExecutionStarted"},
		map[string]any{"type": "TaskStateEntered", "stateEnteredEventDetails": map[string]string{"name": "Plan observations", "input": `{"note":"` + consoleCanary + `"}`}},
		map[string]any{"type": "TaskStateExited", "stateExitedEventDetails": map[string]string{"name": "Plan observations", "output": `{"echo":"` + consoleCanary + `"}`}},
	)}
	h := s.Handler()
	for _, path := range []string{"/console/waves/leaky", "/console/waves/leaky/raw?entry=0", "/console/waves/leaky/raw?state=Plan+observations&part=input",
		"/console/waves/leaky/raw?state=Plan+observations&part=output"} {
		t.Run(path, func(t *testing.T) {
			code, body := get(t, h, path, nil)
			if code != http.StatusOK || strings.Contains(body, consoleCanary) || !strings.Contains(body, "[redacted:connection:tracker]") {
				t.Errorf("%d: %s; want 200 and the secret's marker in its place", code, body)
			}
		})
	}
}
