package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/observe"
)

// keyReceiver is the target of the crash test's actions: it logs the
// idempotency key of every request and applies each key once, as a target
// that honours the key does.
type keyReceiver struct {
	mu   sync.Mutex
	seen map[string]int
}

func (k *keyReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	k.mu.Lock()
	k.seen[r.Header.Get("X-Ora-Idempotency-Key")]++
	k.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (k *keyReceiver) count(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seen[key]
}

// crashRules sends every hmac signal's wave to the receiver.
const crashRules = `version: "crash-test.1"
rules:
  - name: deliver
    when:
      field: source.provider
      equals: hmac
    then:
      action: http.request
      parameters:
        method: POST
        url: "%s/receive"
        body:
          signal_id: "{{ id }}"
      confidence: 0.95
      tier: 1
      author_type: auditor
      scope:
        allowed_operations: [http.request]
      reasoning: The crash test delivers every signal to its receiver.
default:
  action: notify
  parameters:
    subject: "unmatched {{ id }}"
    message: unmatched
  confidence: 0.95
  tier: 1
  author_type: auditor
  scope:
    allowed_operations: [notify]
  reasoning: Not used by the crash test.
`

// A crash at scale: kill -9 of ora dev during 100 concurrent deliveries
// (ORA_CRASH_SIGNALS sets another number: the soak's scale), a restart, and
// no redelivery. Every signal the ledger recorded ends in a
// terminal wave (the outbox starts those the crash left without one), every
// delivery answered 202 is among them, and every action's recorded outcome
// is true to what reached the receiver: success only if the receiver saw its
// key, failure only if it did not, and no key applied twice.
func TestCrashDuringDeliveries(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ora dev twice per store; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "ora")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/ora").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ora: %v\n%s", err, out)
	}
	t.Run("sqlite", func(t *testing.T) { crashDuringDeliveries(t, bin, "store:\n  kind: sqlite\n") })
	t.Run("dynamodb", func(t *testing.T) {
		ep := dynamotest.Endpoint(t)
		crashDuringDeliveries(t, bin, fmt.Sprintf("store:\n  kind: dynamodb\n  dynamodb:\n    endpoint: %s\n    region: us-east-1\n    table: %s\n    idempotency_table: %s\n    create_tables: true\n",
			ep, dynamotest.TableName("crash-ledger"), dynamotest.TableName("crash-idem")))
	})
}

func crashDuringDeliveries(t *testing.T, bin, store string) {
	recv := &keyReceiver{seen: map[string]int{}}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, fmt.Appendf(nil, crashRules, srv.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := filepath.Join(dir, "ora.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `listen: %s
data_dir: %s
%s
sources:
  - {name: e2e, type: hmac, secret: %s, header: X-Ora-Signature}
rules_file: %s
escalation_timeout: 1h
actions:
  http:
    allowed_hosts: [%s]
    signing_secret: crash-signing
    timeout_seconds: 2
`, addr, dir, store, localSecret, rules, strings.TrimPrefix(srv.URL, "http://")), 0o600); err != nil {
		t.Fatal(err)
	}
	base := "http://" + addr
	src := observe.SourceConfig{Name: "e2e", Type: "hmac", Secret: localSecret, Header: "X-Ora-Signature"}

	first := runDev(t, bin, cfg, filepath.Join(dir, "first.log"), base)
	n := 100
	if v, err := strconv.Atoi(os.Getenv("ORA_CRASH_SIGNALS")); err == nil && v > 0 {
		n = v
	}
	var answered atomic.Int64
	accepted := make([]string, n) // signal ids answered 202
	ids := make([]string, n)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	for i := range n {
		body := fmt.Appendf(nil, `{"n":%d}`, i)
		key := fmt.Sprintf("crash-%d", i)
		h, err := observe.SignDelivery(src, body, time.Now(), key)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = observe.SignalID("e2e", key)
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/e2e", bytes.NewReader(body))
			req.Header = h
			resp, err := client.Do(req)
			if err != nil {
				return // the crash cut it: the sender would redeliver; this test does not
			}
			defer resp.Body.Close()
			if resp.StatusCode == http.StatusAccepted {
				accepted[i] = ids[i]
				answered.Add(1)
			}
		})
	}
	// Kill -9 once a few deliveries are answered: the rest are in flight,
	// some recorded without a wave, some waves mid-action.
	for deadline := time.Now().Add(60 * time.Second); answered.Load() < int64(max(n/10, 1)) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	wg.Wait()
	t.Logf("answered 202 before the kill: %d of %d", answered.Load(), n)

	runDev(t, bin, cfg, filepath.Join(dir, "second.log"), base)
	tg := target{name: "ora dev (restarted)", base: base}
	recorded, succeeded := 0, 0
	for i, id := range ids {
		r := tg.do(t, http.MethodGet, "/signals/"+id, nil, nil)
		if r.status == http.StatusNotFound {
			if accepted[i] != "" {
				t.Errorf("delivery %d was answered 202 but its signal %s is not in the ledger", i, id)
			}
			continue
		}
		recorded++
		w := tg.waitWave(t, id, stopped)
		es := tg.entries(t, id)
		if kinds(es)["final-verdict"] != 1 {
			t.Errorf("signal %s: wave %s without a final verdict (%v)", id, w.Status, kinds(es))
		}
		d := decisionID(t, es)
		seen := recv.count(d + "/0")
		if seen > 0 && w.Status == "SUCCEEDED" {
			succeeded++
		}
		for _, e := range es {
			if e.Kind != "execution-evidence" {
				continue
			}
			var ev struct {
				Outcome string `json:"outcome"`
			}
			_ = json.Unmarshal(e.Body, &ev)
			switch {
			case ev.Outcome == "success" && seen == 0:
				t.Errorf("signal %s: evidence says success, the receiver never saw %s/0", id, d)
			case ev.Outcome == "failure" && seen > 0:
				t.Errorf("signal %s: evidence says failure (nothing done), the receiver saw %s/0 %d times", id, d, seen)
			}
		}
		if w.Status == "SUCCEEDED" && seen == 0 {
			t.Errorf("signal %s: wave succeeded, the receiver never saw its action", id)
		}
	}
	t.Logf("recorded %d signals; %d waves succeeded with their action applied once", recorded, succeeded)
	if b, err := os.ReadFile(filepath.Join(dir, "second.log")); err == nil {
		t.Logf("waves the restarted runtime's outbox started: %d", bytes.Count(b, []byte("started the wave of a signal recorded without one")))
	}
	if recorded < int(answered.Load()) {
		t.Errorf("recorded %d < answered %d", recorded, answered.Load())
	}
}

// runDev starts ora dev with cfg, waits for /healthz and stops it (SIGINT)
// when t ends; the test may kill it first. Each setup changes the command
// before it starts (its folder, its environment).
func runDev(t *testing.T, bin, cfg, logPath, base string, setup ...func(*exec.Cmd)) *exec.Cmd {
	t.Helper()
	logs, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), bin, "dev", "--config", cfg)
	cmd.Stdout, cmd.Stderr = logs, logs
	for _, f := range setup {
		f(cmd)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ora dev: %v", err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
		logs.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s:\n%s", filepath.Base(logPath), tail(string(b), 6000))
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("ora dev did not become healthy: %v\n%s", err, tail(string(b), 6000))
		}
	}
}
