package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ora load, built, against `ora dev`, built: every webhook it sends is
// accepted, every wave reaches a verdict, and its counts agree with the
// runtime's own (the waves started and ended that /metrics counts).
func TestLoadAgainstOraDev(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ora and starts ora dev; skipped with -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ora")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
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
sources:
  - name: load
    type: hmac
    secret: load-test-secret
    header: X-Ora-Signature
tokens:
  - token: load-test-reader
    subject: load
    scopes: [ora.read]
`, addr, filepath.Join(dir, "data")), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	dev := exec.CommandContext(ctx, bin, "dev", "--config", cfg, "--no-preflight")
	var devLog bytes.Buffer
	dev.Stdout, dev.Stderr = &devLog, &devLog
	dev.Cancel = func() error { return dev.Process.Signal(os.Interrupt) }
	dev.WaitDelay = 10 * time.Second
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = dev.Wait()
		if t.Failed() {
			t.Logf("ora dev log:\n%s", devLog.String())
		}
	})
	base := "http://" + addr
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ora dev did not become healthy on %s", addr)
		}
	}

	const n = 30
	var stdout, stderr bytes.Buffer
	load := exec.Command(bin, "load", "--config", cfg, "--n", strconv.Itoa(n), "--senders", "2", "--timeout", "2m", "--json", "--pid", strconv.Itoa(dev.Process.Pid))
	load.Stdout, load.Stderr = &stdout, &stderr
	if err := load.Run(); err != nil {
		t.Fatalf("ora load: %v\n%s", err, stderr.String())
	}
	var res loadResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("ora load --json printed %q: %v", stdout.String(), err)
	}
	if res.Sent != n || res.Accepted != n || res.Verdicts != n || res.Errors != 0 {
		t.Errorf("sent %d, accepted %d, verdicts %d, errors %d; want %d, %d, %d, 0", res.Sent, res.Accepted, res.Verdicts, res.Errors, n, n, n)
	}
	if res.ByStatus["SUCCEEDED"] != n {
		t.Errorf("waves by status %v, want all %d SUCCEEDED", res.ByStatus, n)
	}
	if res.WavesPS <= 0 || res.P50ms <= 0 || res.P99ms < res.P50ms {
		t.Errorf("figures %+v: want waves/s and p50 above 0, p99 at least p50", res)
	}
	if res.ServerCPUms <= 0 {
		t.Errorf("ora dev's CPU per wave = %v, want above 0 (--pid %d)", res.ServerCPUms, dev.Process.Pid)
	}

	metrics := readMetrics(t, base+"/metrics", "load-test-reader")
	if got := metrics["ora_waves_started_total"]; got != n {
		t.Errorf("ora_waves_started_total = %v, want %d", got, n)
	}
	if got := metrics[`ora_waves_total{outcome="completed"}`]; got != n {
		t.Errorf(`ora_waves_total{outcome="completed"} = %v, want %d`, got, n)
	}
}

// readMetrics reads a Prometheus text page into series -> value.
func readMetrics(t *testing.T, url, token string) map[string]float64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				out[line[:i]] = v
			}
		}
	}
	return out
}
