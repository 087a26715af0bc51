package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const operatorConfig = `listen: 127.0.0.1:0
data_dir: %s
sources:
  - {name: demo, type: hmac, secret: test-demo-secret, header: X-Ora-Signature, hash: sha256}
tokens:
  - {token: reader-token-1, subject: reader, scopes: [ora.read]}
  - {token: operator-token-1, subject: operator, scopes: [ora.operate]}
faults:
  - {state: Act, error: InternalError, cause: "drill: act down", times: 1}
`

// ora send, ora resume and ora incidents against a real embedded runtime with
// a fault at Act: the wave pauses, resumes, completes; the KPIs count it.
func TestResumeAndIncidents(t *testing.T) {
	dir := t.TempDir()
	cfgFile, url := startDev(t, fmt.Sprintf(operatorConfig, dir))

	body := filepath.Join(dir, "signal.json")
	if err := os.WriteFile(body, []byte(`{"confidence":"high"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runOra(t, "send", "demo", body, "--config", cfgFile, "--url", url)
	if code != 0 {
		t.Fatalf("send: exit %d, %s", code, stderr)
	}
	wave := decodeReceipt(t, stdout).WaveID

	if code, _, stderr := runOra(t, "resume", wave, "--config", cfgFile, "--url", url, "--token", "reader-token-1"); code != 1 || !strings.Contains(stderr, "403") {
		t.Errorf("resume without ora.operate: exit %d, %s", code, stderr)
	}
	operatorState(t, url, wave, "PAUSED")
	// A motor incident resumes under a new motor version, or as is: a
	// resume with neither, or with an app patch alone, is refused.
	for _, refused := range [][]string{
		{"resume", wave},
		{"resume", wave, "--patch-kind", "input", "--patch-target", "confidence", "--patch-value", `"high"`},
		{"resume", wave, "--motor", "9.9.9"},
	} {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			code, _, stderr = runOra(t, append(refused, "--config", cfgFile, "--url", url)...)
			if time.Now().After(deadline) || !strings.Contains(stderr, "pausing") {
				break
			}
		}
		if code != 1 || !(strings.Contains(stderr, "400") || strings.Contains(stderr, "404")) {
			t.Errorf("%v: exit %d, %s; want it refused", refused, code, stderr)
		}
	}
	operatorState(t, url, wave, "PAUSED")
	code, stdout, stderr = runOra(t, "resume", wave, "--as-is", "--config", cfgFile, "--url", url)
	if code != 0 || !strings.Contains(stdout, "resumed at Act") || !strings.Contains(stdout, "retried as is") {
		t.Fatalf("resume: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	operatorState(t, url, wave, "SUCCESS")
	if code, _, stderr := runOra(t, "resume", wave, "--config", cfgFile, "--url", url); code != 1 || !strings.Contains(stderr, "409") {
		t.Errorf("second resume: exit %d, %s", code, stderr)
	}

	code, stdout, stderr = runOra(t, "trace", wave, "--config", cfgFile, "--url", url)
	for _, want := range []string{"(MOTOR-RULES): InternalError: drill: act down at Act; pause", "paused: waiting for ora resume", "PATCHING", "retried as is", "VALIDATING (motor", "passed", "RESUMING", "RUNNING (motor", "apply_patch: nothing patched"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("trace: exit %d, %q, want it to contain %q (%s)", code, stdout, want, stderr)
		}
	}
	code, stdout, stderr = runOra(t, "incidents", "--config", cfgFile, "--url", url)
	if code != 0 {
		t.Fatalf("incidents: exit %d, %s", code, stderr)
	}
	for _, want := range []string{"at Act: InternalError", "occurrences 1, resumed 1", "resumption rate 100%", "wave " + wave} {
		if !strings.Contains(stdout, want) {
			t.Errorf("incidents: %q, want it to contain %q", stdout, want)
		}
	}
	code, stdout, _ = runOra(t, "incidents", "--json", "--config", cfgFile, "--url", url)
	var list struct {
		Summary struct {
			Resumed        int     `json:"resumed"`
			ResumptionRate float64 `json:"resumption_rate"`
		} `json:"summary"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &list) != nil || list.Summary.Resumed != 1 || list.Summary.ResumptionRate != 1 {
		t.Errorf("incidents --json: exit %d, %s", code, stdout)
	}
}

// operatorState polls GET /waves/{id} until its operator state is want.
func operatorState(t *testing.T, base, wave, want string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(base + "/waves/" + wave)
		if err != nil {
			t.Fatal(err)
		}
		var w struct {
			Operator struct {
				State string `json:"state"`
			} `json:"operator"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&w)
		resp.Body.Close()
		if got = w.Operator.State; got == want {
			return
		}
	}
	t.Fatalf("wave %s: operator state %q, want %q", wave, got, want)
}
