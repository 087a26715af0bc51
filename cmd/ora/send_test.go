package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/ora-runtime/ora/shared/embedded"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
)

// The test config: the server and the CLI read the same file unless a test
// gives the CLI another.
const stubConfig = `listen: %s
data_dir: %s
sources:
  - {name: demo, type: hmac, secret: test-demo-secret, header: X-Ora-Signature, hash: sha256}
  - {name: github, type: github, secret: test-github-secret}
  - {name: stripe, type: stripe, secret: whsec_test_secret}
tokens:
  - {token: reader-token-1, subject: reader, scopes: [orientation.read]}
  - {token: approver-token-1, subject: approver, scopes: [orientation.read, ora.approve]}
`

// stubRequest is one request the test API received.
type stubRequest struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// stubSettle is one Settle the test API's verdicts received.
type stubSettle struct {
	DecisionID string
	Approve    bool
	By, Reason string
}

// stubAPI is ora's real HTTP API (shared/httpapi) on an httptest server: the
// webhook route verifies signatures with the observer (shared/observe) over a
// real SQLite ledger, the read routes read that ledger, and waves and verdicts
// are fakes with function fields. It records every request.
type stubAPI struct {
	URL    string
	Config string // the config file's path
	Ledger *sqlite.DB

	// Wave answers GET /waves/{id}; default ENOTFOUND.
	Wave func(id string) (httpapi.Wave, error)
	// Settle answers approve and reject; default an approved or rejected state.
	Settle func(c stubSettle) (ora.DecisionState, error)

	mu       sync.Mutex
	requests []stubRequest
	settles  []stubSettle
	started  []string
}

type starterFunc func(ctx context.Context, id string, input []byte) error

func (f starterFunc) StartWave(ctx context.Context, id string, input []byte) error {
	return f(ctx, id, input)
}

type webhooksFunc func(ctx context.Context, source string, h http.Header, body []byte) (httpapi.WebhookReceipt, error)

func (f webhooksFunc) Webhook(ctx context.Context, source string, h http.Header, body []byte) (httpapi.WebhookReceipt, error) {
	return f(ctx, source, h, body)
}

type wavesFunc func(ctx context.Context, id string) (httpapi.Wave, error)

func (f wavesFunc) Wave(ctx context.Context, id string) (httpapi.Wave, error) { return f(ctx, id) }

type verdictsFunc func(ctx context.Context, id string, approve bool, by, reason string) (ora.DecisionState, error)

func (f verdictsFunc) Settle(ctx context.Context, id string, approve bool, by, reason string) (ora.DecisionState, error) {
	return f(ctx, id, approve, by, reason)
}

func newStubAPI(t *testing.T) *stubAPI {
	t.Helper()
	dir := t.TempDir()
	a := &stubAPI{}
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatalf("open ledger: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	a.Ledger = db

	srv := httptest.NewUnstartedServer(nil)
	a.Config = writeCLIConfig(t, fmt.Sprintf(stubConfig, srv.Listener.Addr(), dir))
	cfg, err := embedded.LoadConfig(a.Config)
	if err != nil {
		t.Fatalf("load the test config: %v", err)
	}
	start := starterFunc(func(_ context.Context, id string, _ []byte) error {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.started = append(a.started, id)
		return nil
	})
	obs, err := observe.New(db, start, cfg.Sources, func(o *observe.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		t.Fatalf("observer: %v", err)
	}
	api := &httpapi.Server{
		Webhooks: webhooksFunc(func(ctx context.Context, source string, h http.Header, body []byte) (httpapi.WebhookReceipt, error) {
			r, err := obs.Webhook(ctx, source, h, body)
			return httpapi.WebhookReceipt(r), err
		}),
		Entries: db,
		Waves: wavesFunc(func(_ context.Context, id string) (httpapi.Wave, error) {
			if a.Wave == nil {
				return httpapi.Wave{}, ora.Errorf(ora.ENOTFOUND, "no wave %s", id)
			}
			return a.Wave(id)
		}),
		Verdicts: verdictsFunc(func(_ context.Context, id string, approve bool, by, reason string) (ora.DecisionState, error) {
			c := stubSettle{id, approve, by, reason}
			a.mu.Lock()
			a.settles = append(a.settles, c)
			a.mu.Unlock()
			if a.Settle != nil {
				return a.Settle(c)
			}
			st := ora.DecisionState{DecisionID: id, SignalID: "sig-1", Status: ora.StatusRejected, Reason: reason, Version: 2}
			if approve {
				st.Status = ora.StatusApproved
			}
			return st, nil
		}),
		Authorize: httpapi.StaticTokens(cfg.Tokens),
		ReadAuth:  true,
	}
	h := api.Handler()
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.requests = append(a.requests, stubRequest{r.Method, r.URL.EscapedPath(), r.Header.Clone(), body})
		a.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

func (a *stubAPI) Requests() []stubRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]stubRequest(nil), a.requests...)
}

func (a *stubAPI) Started() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.started...)
}

func (a *stubAPI) Settles() []stubSettle {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]stubSettle(nil), a.settles...)
}

func writeCLIConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ora.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeBody(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runOra runs an ora command line and returns its exit code and output.
func runOra(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errw bytes.Buffer
	code = dispatch(context.Background(), args, &out, &errw)
	return code, out.String(), errw.String()
}

type sendReceipt struct {
	SignalID  string `json:"signal_id"`
	WaveID    string `json:"wave_id"`
	Duplicate bool   `json:"duplicate"`
}

func decodeReceipt(t *testing.T, stdout string) sendReceipt {
	t.Helper()
	var r sendReceipt
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout %q is not a receipt: %v", stdout, err)
	}
	return r
}

func TestSend(t *testing.T) {
	api := newStubAPI(t)
	file := writeBody(t, `{"type":"deploy.finished","service":"billing"}`)

	// The default URL is the config's listen address: no --url.
	code, stdout, stderr := runOra(t, "send", "demo", file, "--config", api.Config)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	rec := decodeReceipt(t, stdout)
	if rec.SignalID == "" || rec.WaveID != rec.SignalID || rec.Duplicate {
		t.Errorf("receipt %+v, want a new signal whose wave has its id", rec)
	}
	reqs := api.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/webhooks/demo" {
		t.Errorf("request %s %s, want POST /webhooks/demo", r.Method, r.Path)
	}
	if string(r.Body) != `{"type":"deploy.finished","service":"billing"}` {
		t.Errorf("body %q, want the file's bytes", r.Body)
	}
	if _, err := uuid.Parse(r.Header.Get("Idempotency-Key")); err != nil {
		t.Errorf("Idempotency-Key %q is not a UUID: %v", r.Header.Get("Idempotency-Key"), err)
	}
	if r.Header.Get("X-Ora-Signature") == "" {
		t.Errorf("no X-Ora-Signature header; headers %v", r.Header)
	}
	// The observer verified the signature and captured the signal.
	entries, err := api.Ledger.Entries(context.Background(), rec.SignalID)
	if err != nil || len(entries) != 1 || entries[0].Kind != ora.KindSignalReceived {
		t.Errorf("ledger entries of %s = %v, %v; want its signal-received entry", rec.SignalID, entries, err)
	}
	if started := api.Started(); len(started) != 1 || started[0] != rec.SignalID {
		t.Errorf("waves started %v, want [%s]", started, rec.SignalID)
	}
}

func TestSendRedelivery(t *testing.T) {
	api := newStubAPI(t)
	body := `{"zen":"Keep it logically awesome.","hook_id":1}`
	sendStdin = strings.NewReader(body)
	t.Cleanup(func() { sendStdin = os.Stdin })
	code, stdout, stderr := runOra(t, "send", "--url", api.URL, "github", "-", "--config", api.Config, "--delivery", "d-42")
	if code != 0 {
		t.Fatalf("first delivery: exit %d, stderr %q", code, stderr)
	}
	first := decodeReceipt(t, stdout)

	sendStdin = strings.NewReader(body)
	code, stdout, stderr = runOra(t, "send", "github", "-", "--url", api.URL+"/", "--config", api.Config, "--delivery", "d-42")
	if code != 0 {
		t.Fatalf("redelivery: exit %d, stderr %q", code, stderr)
	}
	second := decodeReceipt(t, stdout)
	if !second.Duplicate || second.SignalID != first.SignalID {
		t.Errorf("redelivery receipt %+v, want a duplicate of %s", second, first.SignalID)
	}
	for i, r := range api.Requests() {
		if r.Header.Get("X-GitHub-Delivery") != "d-42" || r.Header.Get("Idempotency-Key") != "d-42" {
			t.Errorf("request %d: X-GitHub-Delivery %q, Idempotency-Key %q, want d-42 both", i, r.Header.Get("X-GitHub-Delivery"), r.Header.Get("Idempotency-Key"))
		}
		if string(r.Body) != body {
			t.Errorf("request %d body %q, want stdin's %q", i, r.Body, body)
		}
	}
	// The observer may ask again to start the wave (starting is idempotent by
	// name); a redelivery never starts a wave of another signal.
	for _, id := range api.Started() {
		if id != first.SignalID {
			t.Errorf("a redelivery started wave %s, want only %s", id, first.SignalID)
		}
	}
}

func TestSendStripe(t *testing.T) {
	api := newStubAPI(t)
	file := writeBody(t, `{"id":"evt_1","object":"event","type":"payment_intent.succeeded","created":1795176000,"data":{"object":{"id":"pi_1"}}}`)
	code, stdout, stderr := runOra(t, "send", "stripe", file, "--config", api.Config, "--url", api.URL)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if rec := decodeReceipt(t, stdout); rec.SignalID == "" {
		t.Errorf("receipt %q has no signal id", stdout)
	}
	if h := api.Requests()[0].Header.Get("Stripe-Signature"); !strings.HasPrefix(h, "t=") || !strings.Contains(h, ",v1=") {
		t.Errorf("Stripe-Signature %q, want t=...,v1=...", h)
	}
}

func TestSendRefused(t *testing.T) {
	api := newStubAPI(t)
	file := writeBody(t, `{"type":"x"}`)
	other := writeCLIConfig(t, "sources:\n  - {name: other, type: hmac, secret: other-secret}\n")
	forged := writeCLIConfig(t, "sources:\n  - {name: demo, type: hmac, secret: not-the-secret, header: X-Ora-Signature}\n")
	tests := []struct {
		name         string
		args         []string
		wantCode     int
		wantStderr   string
		wantRequests int
	}{
		{name: "forged signature", args: []string{"send", "demo", file, "--config", forged, "--url", api.URL}, wantCode: 1, wantStderr: "401 Unauthorized", wantRequests: 1},
		{name: "not JSON", args: []string{"send", "demo", writeBody(t, "not json"), "--config", api.Config}, wantCode: 1, wantStderr: "400 Bad Request", wantRequests: 1},
		{name: "source unknown to the server", args: []string{"send", "other", file, "--config", other, "--url", api.URL}, wantCode: 1, wantStderr: "404 Not Found", wantRequests: 1},
		{name: "source not in the config", args: []string{"send", "slack", file, "--config", api.Config}, wantCode: 1, wantStderr: `no source "slack" in the config (sources: demo, github, stripe)`},
		{name: "missing file", args: []string{"send", "demo", filepath.Join(t.TempDir(), "none.json"), "--config", api.Config}, wantCode: 1, wantStderr: "no such file"},
		{name: "bad config", args: []string{"send", "demo", file, "--config", writeCLIConfig(t, "listen: [\n")}, wantCode: 1, wantStderr: "config"},
		{name: "bad url", args: []string{"send", "demo", file, "--url", "ftp://x"}, wantCode: 1, wantStderr: "not an http(s) URL"},
		{name: "no arguments", args: []string{"send"}, wantCode: 2, wantStderr: "usage: ora send"},
		{name: "one argument", args: []string{"send", "demo"}, wantCode: 2, wantStderr: "want SOURCE and FILE"},
		{name: "three arguments", args: []string{"send", "demo", file, "extra"}, wantCode: 2, wantStderr: "got 3"},
		{name: "unknown flag", args: []string{"send", "demo", file, "--secret", "x"}, wantCode: 2, wantStderr: "ora send: unknown flag -secret"},
		{name: "help", args: []string{"send", "-h"}, wantCode: 0, wantStderr: "usage: ora send SOURCE FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(api.Requests())
			code, stdout, stderr := runOra(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr, tt.wantStderr)
			}
			if tt.wantCode != 0 && stdout != "" {
				t.Errorf("stdout %q, want nothing on failure", stdout)
			}
			if got := len(api.Requests()) - before; got != tt.wantRequests {
				t.Errorf("%d requests, want %d", got, tt.wantRequests)
			}
		})
	}
	if started := api.Started(); len(started) != 0 {
		t.Errorf("refused deliveries started waves %v", started)
	}
}

func TestListenURL(t *testing.T) {
	tests := []struct{ listen, want string }{
		{"127.0.0.1:8080", "http://127.0.0.1:8080"},
		{":8080", "http://127.0.0.1:8080"},
		{"0.0.0.0:9000", "http://127.0.0.1:9000"},
		{"[::]:9000", "http://127.0.0.1:9000"},
		{"localhost:8080", "http://localhost:8080"},
		{"[::1]:8080", "http://[::1]:8080"},
	}
	for _, tt := range tests {
		t.Run(tt.listen, func(t *testing.T) {
			if got := listenURL(tt.listen); got != tt.want {
				t.Errorf("listenURL(%q) = %q, want %q", tt.listen, got, tt.want)
			}
		})
	}
}

func TestParseInterleaved(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantPos  string
		wantURL  string
		wantCode int
	}{
		{name: "flags first", args: []string{"--url", "http://a", "x", "y"}, wantPos: "x y", wantURL: "http://a", wantCode: -1},
		{name: "flags between", args: []string{"x", "--url=http://b", "y"}, wantPos: "x y", wantURL: "http://b", wantCode: -1},
		{name: "flags last", args: []string{"x", "-", "--url", "http://c"}, wantPos: "x -", wantURL: "http://c", wantCode: -1},
		{name: "double dash ends flags", args: []string{"x", "--", "--url", "y"}, wantPos: "x --url y", wantCode: -1},
		{name: "bad flag", args: []string{"x", "--nope"}, wantCode: 2},
		{name: "help", args: []string{"-help"}, wantCode: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			u := fs.String("url", "", "")
			pos, code := parseInterleaved(fs, tt.args, "usage\n", io.Discard)
			if code != tt.wantCode {
				t.Fatalf("code %d, want %d", code, tt.wantCode)
			}
			if got := strings.Join(pos, " "); got != tt.wantPos || *u != tt.wantURL {
				t.Errorf("positional %q, url %q; want %q, %q", got, *u, tt.wantPos, tt.wantURL)
			}
		})
	}
}

// ora send EVENTS FILE signs FILE as the config's events source and posts it
// to /events, where the observer verifies it: CloudWatch's alarm event, as
// EventBridge delivers it, is captured once; sent again it is a duplicate
// (the event keeps its own id).
func TestSendEvents(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatalf("open ledger: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	srv := httptest.NewUnstartedServer(nil)
	config := writeCLIConfig(t, fmt.Sprintf("listen: %s\nsources:\n  - {name: demo, type: hmac, secret: test-demo-secret}\nevents: {secret: test-events-secret, header: X-Ora-Signature}\n", srv.Listener.Addr()))
	cfg, err := embedded.LoadConfig(config)
	if err != nil {
		t.Fatalf("load the test config: %v", err)
	}
	start := starterFunc(func(context.Context, string, []byte) error { return nil })
	obs, err := observe.New(db, start, nil, func(o *observe.Options) {
		o.Events = cfg.Events
		o.Logger = slog.New(slog.DiscardHandler)
	})
	if err != nil {
		t.Fatalf("observer: %v", err)
	}
	var paths []string
	var mu sync.Mutex
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		recs, err := obs.PostEvents(r.Context(), r.Header, body)
		if err != nil {
			http.Error(w, `{"error": "`+err.Error()+`"}`, http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"FailedEntryCount": 0, "Entries": recs})
	})
	srv.Start()
	t.Cleanup(srv.Close)

	file := filepath.Join("..", "..", "events", "event", "cloudwatch-alarm-state-change.json")
	var first string
	for i, wantDuplicate := range []bool{false, true} {
		code, stdout, stderr := runOra(t, "send", "events", file, "--config", config)
		if code != 0 {
			t.Fatalf("send %d: exit %d, stderr %q", i, code, stderr)
		}
		var got struct {
			Entries []sendReceipt `json:"Entries"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil || len(got.Entries) != 1 {
			t.Fatalf("send %d: stdout %q, want one entry's receipt (%v)", i, stdout, err)
		}
		rec := got.Entries[0]
		if rec.SignalID == "" || rec.Duplicate != wantDuplicate {
			t.Errorf("send %d: receipt %+v, want a signal, duplicate %v", i, rec, wantDuplicate)
		}
		if i == 0 {
			first = rec.SignalID
		} else if rec.SignalID != first {
			t.Errorf("send %d: signal %s, want the first one's %s", i, rec.SignalID, first)
		}
	}
	if strings.Join(paths, ",") != "POST /events,POST /events" {
		t.Errorf("requests %v, want two POST /events", paths)
	}
	code, _, stderr := runOra(t, "send", "nope", file, "--config", config)
	if code != 1 || !strings.Contains(stderr, `no source "nope"`) {
		t.Errorf("an unknown source: exit %d, stderr %q; want 1 naming it", code, stderr)
	}
}
