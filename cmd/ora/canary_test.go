package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ora motor canary over ora dev: a proposed version serves every wave for
// two waves; the wave after them promotes it, and ora motor list shows the
// canary, the promotion and its comparison.
func TestMotorCanary(t *testing.T) {
	dir := t.TempDir()
	cfgFile, url := startDev(t, fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: %s
sources:
  - {name: demo, type: hmac, secret: test-demo-secret, header: X-Ora-Signature, hash: sha256}
tokens:
  - {token: operator-token-1, subject: operator, scopes: [ora.operate, ora.read]}
`, dir))
	ora := func(args ...string) (int, string, string) {
		return runOra(t, append(args, "--config", cfgFile, "--url", url)...)
	}
	usage := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no share nor sources", []string{"motor", "canary", "1.0.1", "--waves", "2"}, 2, "give --share or --sources"},
		{"no end", []string{"motor", "canary", "1.0.1", "--share", "0.1"}, 2, "give --waves or --duration"},
		{"no version", []string{"motor", "canary", "--share", "0.1", "--waves", "2"}, 2, "want one VERSION"},
		{"not proposed", []string{"motor", "canary", "1.0.1", "--share", "0.1", "--waves", "2"}, 1, "404"},
	}
	for _, tc := range usage {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, stderr := ora(tc.args...); code != tc.code || !strings.Contains(stderr, tc.says) {
				t.Errorf("exit %d, %s; want %d saying %q", code, stderr, tc.code, tc.says)
			}
		})
	}

	good := writeBundle(t, dir, "1.0.1", "reasoning: Pushes to the default branch are routine; the team is told.", "reasoning: Pushes to the default branch are routine.")
	if code, _, stderr := ora("motor", "propose", good); code != 0 {
		t.Fatalf("propose 1.0.1: %s", stderr)
	}
	code, stdout, stderr := ora("motor", "canary", "1.0.1", "--share", "1", "--waves", "2", "--reason", "try it")
	if code != 0 || !strings.Contains(stdout, "serves 100% of the waves until it has decided 2 waves") {
		t.Fatalf("canary: exit %d, %s %s", code, stdout, stderr)
	}
	signal := filepath.Join(dir, "signal.json")
	_ = os.WriteFile(signal, []byte(`{"confidence":"high"}`), 0o600)
	var decided []string
	for range 3 {
		code, stdout, stderr := ora("send", "demo", signal)
		if code != 0 {
			t.Fatalf("send: %s", stderr)
		}
		wave := decodeReceipt(t, stdout).WaveID
		operatorState(t, url, wave, "SUCCESS")
		decided = append(decided, rulesVersion(t, url, wave))
	}
	if strings.Join(decided, ",") != "1.0.1,1.0.1,1.0.1" {
		t.Errorf("the waves decided under %v, want 1.0.1 each (the canary, then the promoted version)", decided)
	}
	code, stdout, _ = ora("motor", "list")
	for _, want := range []string{
		"1.0.1          current",
		"#1 canary 1.0.1 (from " + baseVersion(t) + ") by operator",
		"#2 promote 1.0.1 (from " + baseVersion(t) + ") by canary",
		"canary: pass rate 100.0%",
		"1.0.1          2 waves, pass rate 100.0%",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("motor list lacks %q: exit %d\n%s", want, code, stdout)
		}
	}
}
