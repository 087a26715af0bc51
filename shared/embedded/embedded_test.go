package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestLoadConfig(t *testing.T) {
	write := func(t *testing.T, body string) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), "ora.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := LoadConfig("")
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if c.Store.SQLitePath != filepath.Join(".ora", "ledger.db") || c.Watch.Dir != filepath.Join(".ora", "inbox") || c.Actions.Object.Root != filepath.Join(".ora", "objects") {
		t.Errorf("derived defaults: %+v %+v %+v", c.Store, c.Watch, c.Actions.Object)
	}
	c, err = LoadConfig(write(t, "listen: 127.0.0.1:9999\nescalation_timeout: 90s\nsources:\n  - {name: ci, type: hmac, secret: ci-secret-1}\n"))
	if err != nil || c.Listen != "127.0.0.1:9999" || time.Duration(c.EscalationTimeout) != 90*time.Second || len(c.Sources) != 1 {
		t.Errorf("overlay: %+v, %v", c, err)
	}
	// No credential of the defaults survives a config file.
	if len(c.Tokens) != 0 || c.Actions.HTTP.SigningSecret != "" || len(c.Actions.HTTP.AllowedHosts) != 0 {
		t.Errorf("a config without tokens or actions has tokens %v and http %+v; want none", c.Tokens, c.Actions.HTTP)
	}
	const src = "sources:\n  - {name: ci, type: hmac, secret: ci-secret-1}\n"
	// The published values are fine on loopback (make run), and a config of
	// one's own is fine anywhere.
	for _, body := range []string{
		"listen: 127.0.0.1:9999\n" + src + "tokens:\n  - {token: dev-approver-token, scopes: [ora.approve]}\n",
		"listen: 0.0.0.0:9999\n" + src + "tokens:\n  - {token: my-own-token-1, scopes: [ora.approve]}\n",
	} {
		if _, err := LoadConfig(write(t, body)); err != nil {
			t.Errorf("%q: %v", body, err)
		}
	}
	bad := map[string]struct{ body, want string }{
		"unknown key":            {"listne: x\n", "listne"},
		"store kind":             {"store:\n  kind: postgres\n", "store.kind"},
		"dynamodb without table": {"store:\n  kind: dynamodb\n", "store.dynamodb.table"},
		"bad duration":           {"escalation_timeout: soon\n", "line 1: escalation_timeout: \"soon\" is not a duration"},
		"nested unknown key":     {"sources:\n  - name: x\n    type: hmac\n    hedaer: X\n", "line 4: unknown key sources[0].hedaer (known keys there: name, type, secret, header"},
		"unknown key in a map":   {"reasoner:\n  bedrock:\n    prices:\n      m:\n        inptu: 1\n", "reasoner.bedrock.prices.m.inptu"},
		"wrong type names key":   {"actions:\n  http:\n    timeout_seconds: [1]\n", "line 3: actions.http.timeout_seconds: cannot unmarshal"},
		"short timeout":          {src + "escalation_timeout: 10ms\n", "escalation_timeout"},
		"source type":            {"sources:\n  - name: x\n    type: carrier-pigeon\n", "sources[0]"},
		"short token":            {src + "tokens:\n  - token: abc\n", "tokens[0].token"},
		"reasoner kind":          {src + "reasoner:\n  kind: oracle\n", "reasoner.kind"},
		"no sources":             {"listen: 127.0.0.1:9999\n", "sources"},
		"hosts without a secret": {src + "actions:\n  http:\n    allowed_hosts: [example.com]\n", "actions.http.signing_secret"},
		"published token off loopback": {"listen: 0.0.0.0:8080\n" + src + "tokens:\n  - {token: dev-approver-token, scopes: [ora.approve]}\n",
			"tokens[0].token"},
		"published source secret off loopback": {"listen: 10.0.0.5:8080\nsources:\n  - {name: demo, type: hmac, secret: dev-demo-secret}\n",
			"sources[0].secret"},
		"published signing secret off loopback": {"listen: :8080\n" + src + "actions:\n  http:\n    allowed_hosts: [example.com]\n    signing_secret: dev-signing-secret\n",
			"actions.http.signing_secret"},
		"fault at no state":         {src + "faults:\n  - {state: Nowhere, error: X, times: 1}\n", "faults[0].state"},
		"fault at a Choice":         {src + "faults:\n  - {state: Route on confidence, error: X, times: 1}\n", "faults[0].state"},
		"fault without error":       {src + "faults:\n  - {state: Act, times: 1}\n", "faults[0].error"},
		"fault zero times":          {src + "faults:\n  - {state: Act, error: X}\n", "faults[0].times"},
		"short pause timeout":       {src + "operate:\n  pause_timeout: 10ms\n", "operate.pause_timeout"},
		"admin floor of no band":    {src + "orientation:\n  admin:\n    min_bands: {mood: 5}\n", "orientation.admin.min_bands.mood"},
		"admin floors over budget":  {src + "orientation:\n  admin:\n    max_token_budget: 1000\n", "orientation.admin.min_bands"},
		"admin unknown key":         {src + "orientation:\n  admin:\n    max_horizon: 5\n", "orientation.admin.max_horizon"},
		"negative proposal ttl":     {src + "orientation:\n  proposal_ttl: -1h\n", "orientation.proposal_ttl"},
		"negative auto resumes":     {src + "operate:\n  max_auto_resumes: -1\n", "operate.max_auto_resumes"},
		"function without target":   {src + "functions:\n  report: {timeout_seconds: 5}\n", "functions.report"},
		"function with two targets": {src + "functions:\n  report: {url: \"http://127.0.0.1:9/r\", command: [./r.sh]}\n", "functions.report"},
		"negative max_parallel":     {src + "actions:\n  max_parallel: -1\n", "actions.max_parallel"},
	}
	for name, tt := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := LoadConfig(write(t, tt.body))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error naming %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "not found in type") {
				t.Errorf("error %v names a Go type, not the key path", err)
			}
		})
	}
}

func testConfig(t *testing.T, dir string) Config {
	t.Helper()
	c := DefaultConfig()
	c.DataDir = dir
	if err := c.complete(); err != nil {
		t.Fatal(err)
	}
	c.Store.SQLitePath = filepath.Join(dir, "ledger.db")
	c.Watch.Dir = filepath.Join(dir, "inbox")
	c.Actions.Object.Root = filepath.Join(dir, "objects")
	return c
}

// A wave waiting for a human survives a restart of the runtime: the next
// runtime resumes it from the engine's store, and the approval completes it.
func TestWaitingWaveSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	first, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(first.Handler())
	src, _ := cfg.Source("demo")
	body := []byte(`{"confidence":"low"}`)
	h, _ := observe.SignDelivery(src, body, time.Now(), "restart-1")
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/demo", strings.NewReader(string(body)))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook: %v %v", resp, err)
	}
	var rec observe.Receipt
	_ = json.NewDecoder(resp.Body).Decode(&rec)
	resp.Body.Close()
	decision := waitIntent(t, first, rec.SignalID)
	srv.Close()
	if err := first.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	second, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if _, err := second.verdicts().Settle(ctx, decision, true, "tester", "after a restart"); err != nil {
		t.Fatalf("approve after the restart: %v", err)
	}
	w, err := waves{second}.Wave(ctx, rec.WaveID)
	for deadline := time.Now().Add(30 * time.Second); err == nil && w.Status == "RUNNING" && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		w, err = waves{second}.Wave(ctx, rec.WaveID)
	}
	if err != nil || w.Status != "SUCCEEDED" {
		t.Fatalf("wave after the restart: %+v, %v", w, err)
	}
	entries, _ := second.ledger.Entries(ctx, rec.SignalID)
	n := 0
	for _, e := range entries {
		if e.Kind == ora.KindExecutionEvidence {
			n++
		}
	}
	if n != 1 {
		t.Errorf("execution-evidence entries: %d, want 1", n)
	}
}

// tokenTasks counts the .waitForTaskToken tasks the wave's history shows
// submitted (a .sync child's TaskSubmitted is not one).
func tokenTasks(r *Runtime, waveID string) int {
	hist, _ := r.engine.GetExecutionHistory(context.Background(), r.executionArn(waveID))
	n := 0
	for _, ev := range hist {
		if d := ev.TaskSubmittedEventDetails; d != nil && strings.HasSuffix(d.Resource, ".waitForTaskToken") {
			n++
		}
	}
	return n
}

// waitIntent waits until the wave waits for a human: the architect-intent
// entry is written and the engine has recorded the Escalate task as submitted
// (before that, a restart runs the task again).
func waitIntent(t *testing.T, r *Runtime, signalID string) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if tokenTasks(r, signalID) == 0 {
			continue
		}
		entries, _ := r.ledger.Entries(context.Background(), signalID)
		for _, e := range entries {
			if e.Kind == ora.KindArchitectIntent {
				for _, d := range entries {
					if d.Kind == ora.KindReasonerDecision {
						return d.Qualifier
					}
				}
			}
		}
	}
	t.Fatal("no architect-intent")
	return ""
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true,
		"0.0.0.0:8080": false, ":8080": false, "10.0.0.5:80": false, "nonsense": false,
	} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// crashedStarter is a wave starter of a process that dies right after the
// signal's append: the wave never starts.
type crashedStarter struct{}

func (crashedStarter) StartWave(context.Context, string, []byte) error {
	return errors.New("killed between the append and StartExecution")
}

// A signal recorded by a process that died before starting its wave gets its
// wave from the next runtime's start, and the wave runs to its end.
func TestRecordedSignalWithoutWaveStartsAtRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	db, err := sqlite.Open(ctx, cfg.Store.SQLitePath)
	if err != nil {
		t.Fatal(err)
	}
	crashed, err := observe.New(db, crashedStarter{}, cfg.Sources, func(o *observe.Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	src, _ := cfg.Source("demo")
	body := []byte(`{"confidence":"high"}`)
	h, _ := observe.SignDelivery(src, body, time.Now(), "crash-1")
	if _, err := crashed.Webhook(ctx, "demo", h, body); err == nil {
		t.Fatal("the crashed delivery started its wave")
	}
	signals, err := db.Recent(ctx, ora.KindSignalReceived, time.Now().Add(-time.Hour), time.Now().Add(time.Minute), 0)
	if err != nil || len(signals) != 1 {
		t.Fatalf("recorded signals %v, %v; want 1", signals, err)
	}
	id := signals[0].SignalID
	_ = db.Close()

	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := waves{r}.Wave(ctx, id)
	for deadline := time.Now().Add(30 * time.Second); err == nil && w.Status == "RUNNING" && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		w, err = waves{r}.Wave(ctx, id)
	}
	if err != nil || w.Status != "SUCCEEDED" {
		t.Fatalf("wave of the recorded signal: %+v, %v; want SUCCEEDED", w, err)
	}
}

// The escalation's task token settles a wave: it appears in no log line and
// in no read route (the ledger keeps it, for the settle).
func TestTaskTokenNeverLeaves(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, t.TempDir())
	logs := &syncBuffer{}
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	src, _ := cfg.Source("demo")
	body := []byte(`{"confidence":"low"}`)
	h, _ := observe.SignDelivery(src, body, time.Now(), "token-1")
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/demo", bytes.NewReader(body))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook: %v %v", resp, err)
	}
	var rec observe.Receipt
	_ = json.NewDecoder(resp.Body).Decode(&rec)
	resp.Body.Close()
	waitIntent(t, r, rec.SignalID)
	entries, _ := r.ledger.Entries(ctx, rec.SignalID)
	var token string
	for _, e := range entries {
		if e.Kind == ora.KindArchitectIntent {
			var in struct {
				TaskToken string `json:"task_token"`
			}
			_ = json.Unmarshal(e.Body, &in)
			token = in.TaskToken
		}
	}
	if len(token) < 8 {
		t.Fatalf("no task token in the ledger's architect-intent")
	}
	for _, path := range []string{"/signals/" + rec.SignalID, "/waves/" + rec.WaveID} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Contains(string(b), token) {
			t.Errorf("GET %s: %d, returns the task token: %v", path, resp.StatusCode, strings.Contains(string(b), token))
		}
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the task token is in the logs")
	}
}
