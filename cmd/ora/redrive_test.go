package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// redriveConfig fails Act once, and the operator once on that failure: the
// wave's execution ends FAILED at the operator, with no verdict.
const redriveConfig = `listen: 127.0.0.1:0
data_dir: %s
sources:
  - {name: demo, type: hmac, secret: test-demo-secret, header: X-Ora-Signature, hash: sha256}
tokens:
  - {token: reader-token-1, subject: reader, scopes: [ora.read]}
  - {token: operator-token-1, subject: operator, scopes: [ora.operate]}
faults:
  - {state: Act, error: InternalError, cause: "drill: act down", times: 1}
  - {state: Operate on failure, error: InternalError, cause: "drill: operator down", times: 1}
`

// ora redrive against a real embedded runtime: refused without ora.operate
// (403) and while the wave runs or after it completed (409, saying why);
// the failed wave redriven runs its operator again, which pauses it, and
// ora resume completes it.
func TestRedriveCommand(t *testing.T) {
	dir := t.TempDir()
	cfgFile, url := startDev(t, fmt.Sprintf(redriveConfig, dir))
	body := filepath.Join(dir, "signal.json")
	if err := os.WriteFile(body, []byte(`{"confidence":"high"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runOra(t, "send", "demo", body, "--config", cfgFile, "--url", url)
	if code != 0 {
		t.Fatalf("send: exit %d, %s", code, stderr)
	}
	wave := decodeReceipt(t, stdout).WaveID
	operatorState(t, url, wave, "FAILED")

	steps := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
		then       string // the operator state to wait for after
	}{
		{"without ora.operate", []string{"--token", "reader-token-1"}, 1, "", "ora redrive: 403 Forbidden: ", ""},
		{"the failed wave", nil, 0, "wave " + wave + " redriven (redrive 1, by operator): it continues at the state that did not finish\nfollow the wave: ora trace " + wave + "\n", "", "PAUSED"},
		{"a paused wave runs", nil, 1, "", "ora redrive: 409 Conflict: wave " + wave + " cannot be redriven: its execution is RUNNING (only a FAILED, TIMED_OUT or ABORTED wave can be)\n", ""},
		{"no wave", []string{"--json"}, 1, "", "ora redrive: 404 Not Found: ", ""},
		{"two waves", []string{"extra"}, 2, "", "ora redrive: want one WAVE_ID, got 2 argument(s)", ""},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			target := wave
			if s.name == "no wave" {
				target = "sig_none"
			}
			args := append([]string{"redrive", target, "--config", cfgFile, "--url", url}, s.args...)
			code, stdout, stderr := runOra(t, args...)
			if code != s.wantCode || !strings.HasPrefix(stderr, s.wantStderr) || (s.wantStdout != "" && stdout != s.wantStdout) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr starting %q", code, stdout, stderr, s.wantCode, s.wantStdout, s.wantStderr)
			}
			if s.then != "" {
				operatorState(t, url, wave, s.then)
			}
		})
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, stdout, stderr = runOra(t, "resume", wave, "--as-is", "--config", cfgFile, "--url", url)
		if code == 0 || time.Now().After(deadline) || !strings.Contains(stderr, "pausing") {
			break
		}
	}
	if code != 0 || !strings.Contains(stdout, "resumed at Act") {
		t.Fatalf("resume: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	operatorState(t, url, wave, "SUCCESS")
	code, stdout, stderr = runOra(t, "trace", wave, "--config", cfgFile, "--url", url)
	if want := "redriven by operator (redrive 1): the execution continues at the state that did not finish"; code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("trace: exit %d, stderr %q; want a line %q in:\n%s", code, stderr, want, stdout)
	}
	code, _, stderr = runOra(t, "redrive", wave, "--config", cfgFile, "--url", url)
	if want := "ora redrive: 409 Conflict: wave " + wave + " already has its final verdict (completed): a redrive cannot change it; send the signal again for a new wave\n"; code != 1 || stderr != want {
		t.Errorf("redrive of a completed wave: exit %d, stderr %q, want %q", code, stderr, want)
	}
}
