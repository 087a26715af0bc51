package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/console"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/statemachines"
)

// ledger is a hand-written fake of console.Ledger over fixed entries.
type ledger struct {
	entries   map[string][]ora.Entry
	decisions map[string]ora.DecisionState
}

func (l ledger) Entries(_ context.Context, id string) ([]ora.Entry, error) {
	if es, ok := l.entries[id]; ok {
		return es, nil
	}
	return nil, ora.Errorf(ora.ENOTFOUND, "no signal %s", id)
}

func (l ledger) Recent(_ context.Context, kind ora.EntryKind, _, _ time.Time, _ int) ([]ora.Entry, error) {
	var out []ora.Entry
	for _, es := range l.entries {
		for _, e := range es {
			if e.Kind == kind {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

func (l ledger) Decision(_ context.Context, id string) (ora.DecisionState, error) {
	if d, ok := l.decisions[id]; ok {
		return d, nil
	}
	return ora.DecisionState{}, ora.Errorf(ora.ENOTFOUND, "no decision %s", id)
}

type waves map[string]httpapi.Wave

func (w waves) Wave(_ context.Context, id string) (httpapi.Wave, error) {
	if x, ok := w[id]; ok {
		return x, nil
	}
	return httpapi.Wave{}, ora.Errorf(ora.ENOTFOUND, "no wave %s", id)
}

type verdicts struct{ settled *[]string }

func (v verdicts) Settle(_ context.Context, id string, approve bool, by, reason string) (ora.DecisionState, error) {
	*v.settled = append(*v.settled, id+" "+by+" "+reason)
	st := ora.StatusRejected
	if approve {
		st = ora.StatusApproved
	}
	return ora.DecisionState{DecisionID: id, SignalID: "sig-1", Status: st}, nil
}

type metrics map[string]float64

func (m metrics) Value(name string, _ ...string) float64 { return m[name] }

func entry(t *testing.T, kind ora.EntryKind, q string, v any, meta map[string]string) ora.Entry {
	t.Helper()
	e, err := ora.NewEntry("sig-1", kind, q, v)
	if err != nil {
		t.Fatal(err)
	}
	e.Meta = meta
	return e
}

func history(t *testing.T, events ...map[string]any) []byte {
	t.Helper()
	base := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for i, e := range events {
		e["id"] = i + 1
		e["timestamp"] = base.Add(time.Duration(i) * 100 * time.Millisecond)
	}
	b, _ := json.Marshal(events)
	return b
}

func server(t *testing.T, readAuth bool) (*console.Server, *[]string) {
	t.Helper()
	dec := ora.ReasonerDecision{ID: "dec-1", SignalID: "sig-1", ActionType: "notify", Confidence: 0.3, Reasoning: "nobody knows this sender"}
	l := ledger{
		entries: map[string][]ora.Entry{"sig-1": {
			entry(t, ora.KindSignalReceived, "", map[string]string{"note": "hi"}, map[string]string{"source": "demo"}),
			entry(t, ora.KindOrientationPacket, "", ora.OrientationPacket{ID: "pkt-1", TokenBudget: 100, TokenUsed: 40, Bands: []ora.PacketBand{{BandBudget: ora.BandBudget{Band: "identity", MaxTokens: 50}, UsedTokens: 40, Facts: []ora.Fact{{SourceType: "ledger", EstimatedTokens: 40, Utility: 0.7}}}}}, nil),
			entry(t, ora.KindReasonerDecision, "dec-1", dec, nil),
			entry(t, ora.KindArchitectIntent, "dec-1/abc", map[string]string{"task_token": "planted-task-token"}, map[string]string{"decision_id": "dec-1"}),
		}},
		decisions: map[string]ora.DecisionState{"dec-1": {DecisionID: "dec-1", SignalID: "sig-1", Status: ora.StatusAwaitingApproval}},
	}
	w := waves{"sig-1": {WaveID: "sig-1", Status: "RUNNING", History: history(t,
		map[string]any{"type": "ExecutionStarted"},
		map[string]any{"type": "TaskStateEntered", "stateEnteredEventDetails": map[string]string{"name": "Plan observations", "input": `{"signal_id":"sig-1"}`}},
		map[string]any{"type": "TaskStateExited", "stateExitedEventDetails": map[string]string{"name": "Plan observations", "output": `{"plan":{}}`}},
		map[string]any{"type": "TaskStateEntered", "stateEnteredEventDetails": map[string]string{"name": "Escalate to a human", "input": `{"task_token":"planted-task-token"}`}},
	)}}
	var settled []string
	return &console.Server{
		Ledger: l, Waves: w, Verdicts: verdicts{&settled},
		Authorize:  httpapi.StaticTokens([]httpapi.Token{{Token: "approver-token-1", Subject: "ann", Scopes: []string{httpapi.ScopeApprove, httpapi.ScopeRead}}, {Token: "reader-token-22", Subject: "rita", Scopes: []string{httpapi.ScopeRead}}}),
		ReadAuth:   readAuth,
		Definition: statemachines.Wave,
		Metrics:    metrics{"ora_waves_started_total": 7},
	}, &settled
}

func get(t *testing.T, h http.Handler, path string, header http.Header) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

func TestPagesRender(t *testing.T) {
	s, _ := server(t, false)
	h := s.Handler()
	tests := []struct {
		path string
		want []string
	}{
		{"/console/", []string{`href="/console/waves/sig-1"`, "RUNNING", "demo", "<td>low</td>"}},
		{"/console/?status=SUCCEEDED", []string{"No waves yet"}},
		{"/console/?fragment=rows", []string{`<tbody id="wave-rows">`, "sig-1"}},
		{"/console/waves/sig-1", []string{
			`data-state="Plan observations" data-status="succeeded"`,
			`data-state="Escalate to a human" data-status="running"`,
			`data-state="Act and validate" data-status="not-run"`,
			`data-kind="orientation-packet"`, "40 of 100", "Band identity: 1 facts, 40 tokens",
			"nobody knows this sender", "0.30 (low)", `action="/console/decisions/dec-1/approve"`,
		}},
		{"/console/approvals", []string{"dec-1", "nobody knows this sender", `formaction="/console/decisions/dec-1/reject"`}},
		{"/console/metrics", []string{"Waves started", "<td>7</td>", "ora_stage_duration_seconds"}},
		{"/console/static/console.css", []string{".node.st-succeeded"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			code, body := get(t, h, tt.path, nil)
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("lacks %q", w)
				}
			}
			if strings.Contains(body, "planted-task-token") {
				t.Errorf("a task token is shown")
			}
		})
	}
	if code, _ := get(t, h, "/console/waves/nope", nil); code != http.StatusNotFound {
		t.Errorf("unknown wave: %d, want 404", code)
	}
}

func TestReadNeedsTokenOffLoopback(t *testing.T) {
	s, _ := server(t, true)
	h := s.Handler()
	if code, body := get(t, h, "/console/", nil); code != http.StatusUnauthorized || !strings.Contains(body, `action="/console/login"`) {
		t.Errorf("no token: %d, want 401 and the sign-in form", code)
	}
	if code, _ := get(t, h, "/console/", http.Header{"Authorization": {"Bearer reader-token-22"}}); code != http.StatusOK {
		t.Errorf("reader token: %d, want 200", code)
	}
	if code, _ := get(t, h, "/console/", http.Header{"Cookie": {"ora_console_token=reader-token-22"}}); code != http.StatusOK {
		t.Errorf("login cookie: %d, want 200", code)
	}
}

func TestSettleForm(t *testing.T) {
	tests := []struct {
		name, path, token string
		code              int
		settled           bool
	}{
		{"no token", "/console/decisions/dec-1/approve", "", http.StatusUnauthorized, false},
		{"reader token", "/console/decisions/dec-1/approve", "reader-token-22", http.StatusForbidden, false},
		{"unknown token", "/console/decisions/dec-1/reject", "who-knows-this", http.StatusUnauthorized, false},
		{"bad verdict", "/console/decisions/dec-1/maybe", "approver-token-1", http.StatusBadRequest, false},
		{"approve", "/console/decisions/dec-1/approve", "approver-token-1", http.StatusSeeOther, true},
		{"reject", "/console/decisions/dec-1/reject", "approver-token-1", http.StatusSeeOther, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, settled := server(t, false)
			form := url.Values{"token": {tt.token}, "reason": {"checked"}}
			req := httptest.NewRequest(http.MethodPost, tt.path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Errorf("status %d, want %d: %s", rec.Code, tt.code, rec.Body)
			}
			if got := len(*settled) == 1; got != tt.settled {
				t.Errorf("settled %v, want %v", *settled, tt.settled)
			}
			if tt.settled && !strings.HasPrefix(rec.Header().Get("Location"), "/console/waves/sig-1?settled=") {
				t.Errorf("Location %q", rec.Header().Get("Location"))
			}
		})
	}
}

// TestGraphDrawsEveryState lays out the real definition: every state, nested
// ones too, is a node, and no two nodes overlap.
func TestGraphDrawsEveryState(t *testing.T) {
	var def struct {
		States map[string]json.RawMessage
	}
	_ = json.Unmarshal(statemachines.Wave, &def)
	g, err := console.Layout(statemachines.Wave, map[string]console.StateRun{"Orient and reason": {Name: "Orient and reason", Status: "succeeded"}})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]console.Node{}
	for _, n := range g.Nodes {
		names[n.Name] = n
	}
	for name := range def.States {
		if _, ok := names[name]; !ok {
			t.Errorf("state %q is not drawn", name)
		}
	}
	for _, want := range []string{"Fetch"} { // inside Fetch observations' processor
		if _, ok := names[want]; !ok {
			t.Errorf("nested state %q is not drawn", want)
		}
	}
	if names["Orient and reason"].Status != "succeeded" || names["Act and validate"].Status != "not-run" {
		t.Errorf("statuses: Orient and reason %q, Act and validate %q", names["Orient and reason"].Status, names["Act and validate"].Status)
	}
	for i, a := range g.Nodes {
		for _, b := range g.Nodes[i+1:] {
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				t.Errorf("%q and %q overlap", a.Name, b.Name)
			}
		}
		if a.X < 0 || a.Y < 0 || a.X+a.W > g.Width || a.Y+a.H > g.Height {
			t.Errorf("%q is outside the canvas", a.Name)
		}
	}
	if len(g.Edges) < len(def.States) {
		t.Errorf("%d edges for %d states", len(g.Edges), len(def.States))
	}
}
