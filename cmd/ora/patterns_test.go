package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// patternConfig fails Reason once on a malformed field: an app incident.
const patternConfig = `listen: 127.0.0.1:0
data_dir: %s
sources:
  - {name: demo, type: hmac, secret: test-demo-secret, header: X-Ora-Signature, hash: sha256}
tokens:
  - {token: operator-token-1, subject: operator, scopes: [ora.operate, ora.read]}
faults:
  - {state: Reason, error: InvalidInput, cause: "missing field: title", times: 1}
`

// An app incident resumes with an app patch (a version, or a patch that
// does not validate, is refused); the wave completes, so its fingerprint is
// a learned pattern; promoting it makes the next motor version, which
// carries it.
func TestAppPatchAndLearnedPattern(t *testing.T) {
	dir := t.TempDir()
	cfgFile, url := startDev(t, fmt.Sprintf(patternConfig, dir))
	ora := func(args ...string) (int, string, string) {
		return runOra(t, append(args, "--config", cfgFile, "--url", url)...)
	}
	signal := filepath.Join(dir, "signal.json")
	_ = os.WriteFile(signal, []byte(`{"confidence":"high","title":""}`), 0o600)
	code, stdout, stderr := ora("send", "demo", signal)
	if code != 0 {
		t.Fatalf("send: %s", stderr)
	}
	wave := decodeReceipt(t, stdout).WaveID
	operatorState(t, url, wave, "PAUSED")

	refused := []struct {
		name string
		args []string
		want string
	}{
		{"a motor version for an app incident", []string{"--motor", "1.0.1"}, "the motor version it failed under"},
		{"a mapping that is not an object", []string{"--patch-kind", "mapping", "--patch-target", "demo", "--patch-value", `"title"`}, "JSON object"},
		{"a mapping of no configured source", []string{"--patch-kind", "mapping", "--patch-target", "nosuch", "--patch-value", `{}`}, `no source "nosuch" is configured`},
		{"a mapping patch", []string{"--patch-kind", "mapping", "--patch-target", "demo", "--patch-value", `{"title": "$.body.title"}`}, "no stage applies a mapping patch"},
		{"an input patch of a field the signal lacks", []string{"--patch-kind", "input", "--patch-target", "issue.title", "--patch-value", `"Login fails"`}, "patch.target"},
		{"a patch of no known kind", []string{"--patch-kind", "config", "--patch-target", "demo", "--patch-value", `{}`}, "patch.kind"},
	}
	for _, tc := range refused {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			code, _, stderr = ora(append([]string{"resume", wave}, tc.args...)...)
			if time.Now().After(deadline) || !strings.Contains(stderr, "pausing") {
				break
			}
		}
		if code != 1 || !strings.Contains(stderr, "400") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %s; want 400 naming %q", tc.name, code, stderr, tc.want)
		}
	}
	if code, _, _ := ora("resume", wave, "--patch-kind", "input", "--patch-value", `{`); code != 2 {
		t.Errorf("a patch value that is not JSON: exit %d, want 2 (bad usage)", code)
	}
	operatorState(t, url, wave, "PAUSED")

	code, stdout, stderr = ora("resume", wave, "--patch-kind", "input", "--patch-target", "title", "--patch-value", `"Login fails with SSO"`)
	if code != 0 || !strings.Contains(stdout, "resumed at Reason") || !strings.Contains(stdout, "input patch of title recorded (sha256 ") {
		t.Fatalf("resume with the patch: exit %d, %s %s", code, stdout, stderr)
	}
	operatorState(t, url, wave, "SUCCESS")

	code, stdout, stderr = ora("patterns")
	m := regexp.MustCompile(`(pattern-[0-9a-f]{16})  APP-SPEC \(app\) at Reason: InvalidInput, fixed by app-patch:input@[0-9a-f]{12}, confirmed 1; candidate`).FindStringSubmatch(stdout)
	if code != 0 || m == nil {
		t.Fatalf("patterns: exit %d, %q %s", code, stdout, stderr)
	}
	code, stdout, stderr = ora("patterns", "promote", m[1], "--reason", "the title fault is the app's")
	if code != 0 || !regexp.MustCompile(`motor 0\.0\.1 is current \(sha256 [0-9a-f]{64}\), carrying pattern `+m[1]).MatchString(stdout) {
		t.Fatalf("promote the pattern: exit %d, %q %s", code, stdout, stderr)
	}
	if code, stdout, _ := ora("patterns"); code != 0 || !strings.Contains(stdout, "in motor 0.0.1") {
		t.Errorf("after the promotion: %q", stdout)
	}
	if code, _, stderr := ora("patterns", "promote", m[1]); code != 1 || !strings.Contains(stderr, "409") || !strings.Contains(stderr, "already") {
		t.Errorf("promote it again: exit %d, %s", code, stderr)
	}
	if code, stdout, _ := ora("motor", "list"); code != 0 || !strings.Contains(stdout, "learned + "+m[1]) && !strings.Contains(stdout, "0.0.1          current") {
		t.Errorf("motor list: %s", stdout)
	}
}

// inputPatchConfig fails Reason once on a malformed field: an app incident.
const inputPatchConfig = `listen: 127.0.0.1:0
data_dir: %s
sources:
  - {name: demo, type: hmac, secret: test-demo-secret, header: X-Ora-Signature, hash: sha256}
tokens:
  - {token: operator-token-1, subject: operator, scopes: [ora.operate, ora.read]}
faults:
  - {state: Reason, error: InvalidInput, cause: "field confidence: not what the sender meant", times: 1}
`

// Through ora dev's HTTP API: a wave paused at Reason is resumed with an
// input patch (one naming a field the signal lacks, and a spec patch, are
// refused with 400); Reason decides on the patched field, so the wave the
// signal would have sent to a human completes, and its trace says the
// decision was made under the patch.
func TestInputPatchThroughTheAPI(t *testing.T) {
	dir := t.TempDir()
	cfgFile, url := startDev(t, fmt.Sprintf(inputPatchConfig, dir))
	ora := func(args ...string) (int, string, string) {
		return runOra(t, append(args, "--config", cfgFile, "--url", url)...)
	}
	signal := filepath.Join(dir, "signal.json")
	_ = os.WriteFile(signal, []byte(`{"confidence":"low"}`), 0o600)
	code, stdout, stderr := ora("send", "demo", signal)
	if code != 0 {
		t.Fatalf("send: %s", stderr)
	}
	receipt := decodeReceipt(t, stdout)
	wave := receipt.WaveID
	operatorState(t, url, wave, "PAUSED")
	refused := []struct {
		name string
		args []string
		want string
	}{
		{"a field the signal lacks", []string{"--patch-kind", "input", "--patch-target", "severity", "--patch-value", `"high"`}, "patch.target: the signal's payload has no field severity"},
		{"a spec patch", []string{"--patch-kind", "spec", "--patch-target", "notify", "--patch-value", `{}`}, "no stage applies a spec patch"},
	}
	for _, tc := range refused {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			code, _, stderr = ora(append([]string{"resume", wave}, tc.args...)...)
			if time.Now().After(deadline) || !strings.Contains(stderr, "pausing") {
				break
			}
		}
		if code != 1 || !strings.Contains(stderr, "400") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %s; want 400 naming %q", tc.name, code, stderr, tc.want)
		}
	}
	code, stdout, stderr = ora("resume", wave, "--patch-kind", "input", "--patch-target", "confidence", "--patch-value", `"high"`)
	if code != 0 || !strings.Contains(stdout, "resumed at Reason") || !strings.Contains(stdout, "Reason reads the signal with it") {
		t.Fatalf("resume with the patch: exit %d, %s %s", code, stdout, stderr)
	}
	operatorState(t, url, wave, "SUCCESS")
	if code, stdout, stderr := ora("trace", receipt.SignalID); code != 0 || !strings.Contains(stdout, "high band") || !strings.Contains(stdout, "decided under the operator's input patch of confidence") {
		t.Errorf("trace: exit %d, %s %s", code, stdout, stderr)
	}
}
