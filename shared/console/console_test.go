package console_test

import (
	"context"
	"encoding/json"
	"fmt"
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

func entry(t testing.TB, kind ora.EntryKind, q string, v any, meta map[string]string) ora.Entry {
	t.Helper()
	e, err := ora.NewEntry("sig-1", kind, q, v)
	if err != nil {
		t.Fatal(err)
	}
	e.Meta = meta
	return e
}

func history(t testing.TB, events ...map[string]any) []byte {
	t.Helper()
	base := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for i, e := range events {
		e["id"] = i + 1
		e["timestamp"] = base.Add(time.Duration(i) * 100 * time.Millisecond)
	}
	b, _ := json.Marshal(events)
	return b
}

func server(t testing.TB, readAuth bool) (*console.Server, *[]string) {
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
		map[string]any{"type": "TaskStateExited", "stateExitedEventDetails": map[string]string{"name": "Plan observations", "output": `{"plan":{},"token_budget":150000}`}},
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

func get(t testing.TB, h http.Handler, path string, header http.Header) (int, string) {
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
		{"/console/", []string{`href="/console/waves/sig-1"`, "RUNNING", "demo", `class="badge b-low"`}},
		{"/console/?status=SUCCEEDED", []string{"No wave matches these filters"}},
		{"/console/?fragment=rows", []string{`<tbody id="wave-rows">`, "sig-1"}},
		{"/console/waves/sig-1", []string{
			`data-state="Plan observations" data-status="succeeded"`,
			`data-state="Escalate to a human" data-status="running"`,
			`data-state="Act and validate" data-status="not-run"`,
			`data-kind="orientation-packet"`, "40 of 100", "Band identity: 1 facts, 40 tokens",
			"nobody knows this sender", "0.30 (low)", `action="/console/decisions/dec-1/approve"`,
			"150000", // a token budget is a number, not a credential
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

// formSession opens a console page as a browser would and returns its
// session cookie and the form token its forms carry.
func formSession(t *testing.T, h http.Handler) (cookie, token string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/console/approvals", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.Name == "ora_console_session" {
			cookie = c.Name + "=" + c.Value
		}
	}
	body := rec.Body.String()
	const field = `name="csrf" value="`
	i := strings.Index(body, field)
	if cookie == "" || i < 0 {
		t.Fatalf("no session cookie or form token: %v\n%s", rec.Result().Cookies(), body)
	}
	body = body[i+len(field):]
	return cookie, body[:strings.Index(body, `"`)]
}

func TestSettleForm(t *testing.T) {
	tests := []struct {
		name, path, token string
		csrf              string // "ok" the session's, "" none, else that value
		header            map[string]string
		code              int
		settled           bool
	}{
		{"no token", "/console/decisions/dec-1/approve", "", "ok", nil, http.StatusUnauthorized, false},
		{"reader token", "/console/decisions/dec-1/approve", "reader-token-22", "ok", nil, http.StatusForbidden, false},
		{"unknown token", "/console/decisions/dec-1/reject", "who-knows-this", "ok", nil, http.StatusUnauthorized, false},
		{"bad verdict", "/console/decisions/dec-1/maybe", "approver-token-1", "ok", nil, http.StatusBadRequest, false},
		{"approve", "/console/decisions/dec-1/approve", "approver-token-1", "ok", nil, http.StatusSeeOther, true},
		{"reject", "/console/decisions/dec-1/reject", "approver-token-1", "ok", nil, http.StatusSeeOther, true},
		{"no form token", "/console/decisions/dec-1/approve", "approver-token-1", "", nil, http.StatusForbidden, false},
		{"another session's form token", "/console/decisions/dec-1/approve", "approver-token-1", strings.Repeat("ab", 32), nil, http.StatusForbidden, false},
		{"cross-site post", "/console/decisions/dec-1/approve", "approver-token-1", "ok",
			map[string]string{"Origin": "https://attacker.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, settled := server(t, false)
			h := s.Handler()
			cookie, token := formSession(t, h)
			if tt.csrf != "ok" {
				token = tt.csrf
			}
			form := url.Values{"token": {tt.token}, "reason": {"checked"}, "csrf": {token}}
			req := httptest.NewRequest(http.MethodPost, tt.path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Cookie", cookie)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
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

// Signing in takes the session's form token and a token that reads; a page
// elsewhere cannot sign the user in with its own token.
func TestLogin(t *testing.T) {
	tests := []struct {
		name, token string
		csrf        bool
		header      map[string]string
		code        int
		signedIn    bool
	}{
		{"a reader token", "reader-token-22", true, nil, http.StatusSeeOther, true},
		{"an unknown token", "who-knows-this", true, nil, http.StatusUnauthorized, false},
		{"no form token", "reader-token-22", false, nil, http.StatusForbidden, false},
		{"cross-site", "reader-token-22", true, map[string]string{"Origin": "https://attacker.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := server(t, true)
			h := s.Handler()
			req := httptest.NewRequest(http.MethodGet, "/console/", nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req) // 401 and the sign-in form, with a session
			cookie, token := "", ""
			for _, c := range rec.Result().Cookies() {
				cookie = c.Name + "=" + c.Value
			}
			if b := rec.Body.String(); strings.Contains(b, `name="csrf" value="`) {
				b = b[strings.Index(b, `name="csrf" value="`)+len(`name="csrf" value="`):]
				token = b[:strings.Index(b, `"`)]
			}
			form := url.Values{"token": {tt.token}, "next": {"/console/approvals"}}
			if tt.csrf {
				form.Set("csrf", token)
			}
			req = httptest.NewRequest(http.MethodPost, "/console/login", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Cookie", cookie)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			signedIn := false
			for _, c := range rec.Result().Cookies() {
				signedIn = signedIn || (c.Name == "ora_console_token" && c.Value == tt.token)
			}
			if rec.Code != tt.code || signedIn != tt.signedIn {
				t.Errorf("got %d signed in %v, want %d and %v: %s", rec.Code, signedIn, tt.code, tt.signedIn, rec.Body)
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
	g, err := console.Layout(statemachines.Wave, map[string]console.StateRun{"Orient and reason": {Name: "Orient and reason", Status: "succeeded"}}, nil)
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

// A body nested 9,998 levels deep (60 KB) once rendered as 200 MB: the page
// now shows a bounded rendering with a "truncated" marker and a link to the
// raw body, which serves it as stored.
func TestDeepBodyRendersBounded(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 9998) + "1" + strings.Repeat("}", 9998)
	s, _ := server(t, false)
	e, err := ora.NewEntry("deep", ora.KindSignalReceived, "", json.RawMessage(deep))
	if err != nil {
		t.Fatal(err)
	}
	s.Ledger.(ledger).entries["deep"] = []ora.Entry{e}
	s.Waves.(waves)["deep"] = httpapi.Wave{WaveID: "deep", Status: "SUCCEEDED", History: history(t,
		map[string]any{"type": "ExecutionStarted"},
		map[string]any{"type": "TaskStateEntered", "stateEnteredEventDetails": map[string]string{"name": "Plan observations", "input": deep}},
		map[string]any{"type": "TaskStateExited", "stateExitedEventDetails": map[string]string{"name": "Plan observations", "output": `{}`}},
	)}
	h := s.Handler()
	code, body := get(t, h, "/console/waves/deep", nil)
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if len(body) > 1<<20 {
		t.Errorf("the page is %d bytes for a %d-byte body; want under 1 MiB", len(body), len(deep))
	}
	for _, want := range []string{"levels more", "Truncated, " + fmt.Sprint(len(deep)) + " bytes", `href="/console/waves/deep/raw?entry=0"`,
		`href="/console/waves/deep/raw?part=input&amp;state=Plan&#43;observations"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, path := range []string{"/console/waves/deep/raw?entry=0", "/console/waves/deep/raw?state=Plan+observations&part=input"} {
		code, raw := get(t, h, path, nil)
		if code != http.StatusOK || raw != deep {
			t.Errorf("%s: %d, %d bytes; want 200 and the body as stored (%d bytes)", path, code, len(raw), len(deep))
		}
	}
}

// On a loopback dev run the approve form settles as the development
// approver when its token field is empty; its form token is still required.
func TestSettleAsDevApprover(t *testing.T) {
	for _, tt := range []struct {
		name    string
		csrf    bool
		code    int
		settled string
	}{
		{"with the form token", true, http.StatusSeeOther, "dec-1 ann checked"},
		{"without it", false, http.StatusForbidden, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, settled := server(t, false)
			s.DevApprover = "approver-token-1"
			h := s.Handler()
			cookie, token := formSession(t, h)
			if _, page := get(t, h, "/console/waves/sig-1", http.Header{"Cookie": {cookie}}); !strings.Contains(page, "leave empty to settle as the development approver") {
				t.Errorf("the form does not say the token may be left empty")
			}
			form := url.Values{"reason": {"checked"}}
			if tt.csrf {
				form.Set("csrf", token)
			}
			req := httptest.NewRequest(http.MethodPost, "/console/decisions/dec-1/approve", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Cookie", cookie)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.code || strings.Join(*settled, ",") != tt.settled {
				t.Errorf("got %d, settled %v; want %d, %q", rec.Code, *settled, tt.code, tt.settled)
			}
		})
	}
}
