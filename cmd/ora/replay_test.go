package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const replayConfig = `listen: 127.0.0.1:0
data_dir: %s
sources:
  - {name: demo, type: hmac, secret: test-demo-secret, header: X-Ora-Signature, hash: sha256}
tokens:
  - {token: operator-token-1, subject: operator, scopes: [ora.operate, ora.read]}
`

// ora replay --from-ledger re-runs the waves ora dev's ledger recorded under
// a proposed motor version and reports, wave by wave, what changed against
// what each decided then.
func TestReplayFromLedger(t *testing.T) {
	dir := t.TempDir()
	cfgFile, url := startDev(t, fmt.Sprintf(replayConfig, dir))
	ora := func(args ...string) (int, string, string) {
		return runOra(t, append(args, "--config", cfgFile, "--url", url)...)
	}
	waves := map[string]string{}
	for _, c := range []string{"high", "medium"} {
		signal := filepath.Join(dir, c+".json")
		_ = os.WriteFile(signal, []byte(`{"confidence":"`+c+`"}`), 0o600)
		code, stdout, stderr := ora("send", "demo", signal)
		if code != 0 {
			t.Fatalf("send: %s", stderr)
		}
		waves[c] = decodeReceipt(t, stdout).WaveID
		operatorState(t, url, waves[c], "SUCCESS")
	}
	// 1.2.0 sends the medium test path to a human: its band and verdict change.
	lower := writeBundle(t, dir, "1.2.0", "confidence: 0.65", "confidence: 0.3")
	if code, _, stderr := ora("motor", "propose", lower); code != 0 {
		t.Fatalf("propose 1.2.0: %s", stderr)
	}
	code, stdout, stderr := ora("replay", "--from-ledger", "--since", "1h", "--motor", "1.2.0")
	if code != 1 || !strings.Contains(stdout, "replay of 2 waves under motor 1.2.0") || !strings.Contains(stdout, "1 changed") {
		t.Fatalf("replay from the ledger: exit %d, %s %s", code, stdout, stderr)
	}
	for _, line := range strings.Split(stdout, "\n") {
		switch {
		case strings.Contains(line, waves["medium"]):
			if !strings.Contains(line, "CHANGED band,verdict") || !strings.Contains(line, "band medium -> low, verdict completed -> escalated") ||
				!strings.Contains(line, "recorded under motor "+baseVersion(t)) {
				t.Errorf("the medium wave: %s", line)
			}
		case strings.Contains(line, waves["high"]):
			if !strings.Contains(line, "same") {
				t.Errorf("the high wave: %s", line)
			}
		}
	}
	if code, stdout, _ := ora("replay", "--from-ledger", "--wave", waves["high"], "--motor", "1.2.0"); code != 0 || !strings.Contains(stdout, "replay of 1 waves") || !strings.Contains(stdout, "0 changed") {
		t.Errorf("replay one wave: exit %d, %s", code, stdout)
	}
	if code, stdout, _ := ora("replay", "--from-ledger", "--motor", baseVersion(t)); code != 0 || !strings.Contains(stdout, "0 changed") {
		t.Errorf("replay under the recording motor: exit %d, %s", code, stdout)
	}
	if code, _, stderr := ora("replay", "--from-ledger", "--since", "2099-01-01", "--motor", "1.2.0"); code != 1 || !strings.Contains(stderr, "no decided wave") {
		t.Errorf("replay of an empty range: exit %d, %s", code, stderr)
	}
	if code, _, stderr := ora("replay", "--from-ledger", "--wave", "no-such-wave", "--motor", "1.2.0"); code != 1 || !strings.Contains(stderr, "404") {
		t.Errorf("replay of an unknown wave: exit %d, %s", code, stderr)
	}
	// The shipped golden set replays its incidents too, each by its class.
	code, stdout, _ = ora("replay", "--motor", baseVersion(t))
	if code != 0 || !strings.Contains(stdout, "incidents under motor") || !strings.Contains(stdout, "incident classified motor/MOTOR-PERF -> motor/MOTOR-PERF") {
		t.Errorf("replay of the shipped golden set: exit %d, %s", code, stdout)
	}
	for _, args := range [][]string{{"--from-ledger", "--golden", dir}, {"--since", "1h"}, {"--from-ledger", "--since", "yesterday"}} {
		if code, _, _ := ora(append([]string{"replay"}, args...)...); code != 2 {
			t.Errorf("replay %v: exit %d, want 2 (bad usage)", args, code)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"", now.AddDate(0, 0, -7), true},
		{"24h", now.Add(-24 * time.Hour), true},
		{"3d", now.AddDate(0, 0, -3), true},
		{"2026-11-20", time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), true},
		{"2026-11-20T10:00:00Z", time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC), true},
		{"-1h", time.Time{}, false},
		{"yesterday", time.Time{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseSince(tc.in, now)
			if (err == nil) != tc.ok || (tc.ok && !got.Equal(tc.want)) {
				t.Errorf("parseSince(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}
