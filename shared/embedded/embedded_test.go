package embedded

import (
	"context"
	"encoding/json"
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
	c, err = LoadConfig(write(t, "listen: 127.0.0.1:9999\nescalation_timeout: 90s\n"))
	if err != nil || c.Listen != "127.0.0.1:9999" || time.Duration(c.EscalationTimeout) != 90*time.Second || len(c.Sources) != 2 {
		t.Errorf("overlay: %+v, %v", c, err)
	}
	bad := map[string]struct{ body, want string }{
		"unknown key":            {"listne: x\n", "listne"},
		"store kind":             {"store:\n  kind: postgres\n", "store.kind"},
		"dynamodb without table": {"store:\n  kind: dynamodb\n", "store.dynamodb.table"},
		"bad duration":           {"escalation_timeout: soon\n", "duration"},
		"short timeout":          {"escalation_timeout: 10ms\n", "escalation_timeout"},
		"source type":            {"sources:\n  - name: x\n    type: carrier-pigeon\n", "sources[0]"},
		"short token":            {"tokens:\n  - token: abc\n", "tokens[0].token"},
		"reasoner kind":          {"reasoner:\n  kind: oracle\n", "reasoner.kind"},
	}
	for name, tt := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := LoadConfig(write(t, tt.body))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error naming %q", err, tt.want)
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
	h, _ := observe.Sign(src, body, time.Now())
	h.Set("Idempotency-Key", "restart-1")
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

// waitIntent waits until the wave waits for a human: the architect-intent
// entry is written and the engine has recorded the Escalate task as submitted
// (before that, a restart runs the task again).
func waitIntent(t *testing.T, r *Runtime, signalID string) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if w, err := (waves{r}).Wave(context.Background(), signalID); err != nil || !strings.Contains(string(w.History), `"TaskSubmitted"`) {
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
