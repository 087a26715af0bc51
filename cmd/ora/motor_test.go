package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/embedded"
	"github.com/ora-runtime/ora/shared/rules"
)

const motorConfig = `listen: 127.0.0.1:0
data_dir: %s
sources:
  - {name: demo, type: hmac, secret: test-demo-secret, header: X-Ora-Signature, hash: sha256}
tokens:
  - {token: operator-token-1, subject: operator, scopes: [ora.operate, ora.read]}
faults:
  - {state: Reason, error: InternalError, cause: "drill: incomplete rule", times: 1}
`

// writeBundle writes the default rules under version v (with an edit) and a
// bundle file naming them.
func writeBundle(t *testing.T, dir, v, old, new string) string {
	t.Helper()
	r := regexp.MustCompile(`(?m)^version: .*$`).ReplaceAllString(string(defaultrules.Default), `version: "`+v+`"`)
	r = strings.Replace(r, old, new, 1)
	if err := os.WriteFile(filepath.Join(dir, "rules-"+v+".yaml"), []byte(r), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "motor-"+v+".yaml")
	b := fmt.Sprintf("version: %q\nrules_file: rules-%s.yaml\nmodel: {profile: rules}\norientation: {token_budget: 150000}\nchangelog: |\n  %s\n", v, v, "motor "+v)
	if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A motor that fails the golden replay cannot be promoted (409 naming the
// wave); a passing one promotes, the paused MOTOR-RULES wave resumes under it
// and succeeds, the incident links the fix; rollback restores the previous
// version and the next wave runs under it.
func TestMotorLifecycle(t *testing.T) {
	dir := t.TempDir()
	cfgFile, url := startDev(t, fmt.Sprintf(motorConfig, dir))
	ora := func(args ...string) (int, string, string) {
		return runOra(t, append(args, "--config", cfgFile, "--url", url)...)
	}
	signal := filepath.Join(dir, "signal.json")
	_ = os.WriteFile(signal, []byte(`{"confidence":"high"}`), 0o600)
	code, stdout, stderr := ora("send", "demo", signal)
	if code != 0 {
		t.Fatalf("send: %s", stderr)
	}
	wave := decodeReceipt(t, stdout).WaveID
	operatorState(t, url, wave, "PAUSED")

	bad := writeBundle(t, dir, "1.0.0", "confidence: 0.95", "confidence: 0.6")
	if code, _, stderr := ora("motor", "propose", bad); code != 0 {
		t.Fatalf("propose 1.0.0: %s", stderr)
	}
	if code, _, stderr := ora("motor", "promote", "1.0.0", "--reason", "try"); code != 1 || !strings.Contains(stderr, "409") || !strings.Contains(stderr, "demo-high") {
		t.Errorf("promote a motor failing the golden replay: exit %d, %s", code, stderr)
	}
	if code, stdout, _ := ora("replay", "--motor", "1.0.0"); code != 1 || !strings.Contains(stdout, "CHANGED band") || !strings.Contains(stdout, "1 changed") {
		t.Errorf("replay 1.0.0: exit %d, %s", code, stdout)
	}
	good := writeBundle(t, dir, "1.0.1", "reasoning: Pushes to the default branch are routine; the team is told.", "reasoning: Pushes to the default branch are routine.")
	if code, _, stderr := ora("motor", "propose", good); code != 0 {
		t.Fatalf("propose 1.0.1: %s", stderr)
	}
	if code, stdout, _ := ora("replay", "--motor", "1.0.1"); code != 0 || !strings.Contains(stdout, "0 changed") {
		t.Errorf("replay 1.0.1: exit %d, %s", code, stdout)
	}
	// The resume promotes the version it is given through the gate: one
	// that fails it is refused, naming the golden case, and the wave stays
	// paused; one that passes is promoted and the wave resumes under it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, _, stderr = ora("resume", wave, "--motor", "1.0.0")
		if time.Now().After(deadline) || !strings.Contains(stderr, "pausing") {
			break
		}
	}
	if code != 1 || !strings.Contains(stderr, "409") || !strings.Contains(stderr, "demo-high") || !strings.Contains(stderr, "stays paused") {
		t.Errorf("resume under a motor failing the gate: exit %d, %s", code, stderr)
	}
	operatorState(t, url, wave, "PAUSED")
	code, stdout, stderr = ora("resume", wave, "--motor", "1.0.1", "--reason", "fix the incomplete rule")
	if code != 0 || !strings.Contains(stdout, "resumed at Reason under motor 1.0.1") || !strings.Contains(stdout, "promoted motor 1.0.1 through the gate") {
		t.Fatalf("resume: exit %d, %s %s", code, stdout, stderr)
	}
	operatorState(t, url, wave, "SUCCESS")
	if got := rulesVersion(t, url, wave); got != "1.0.1" {
		t.Errorf("the resumed wave decided under %q, want 1.0.1", got)
	}
	if code, stdout, _ := ora("incidents"); code != 0 || !strings.Contains(stdout, "MOTOR-RULES") || !strings.Contains(stdout, "closed by motor 1.0.1") {
		t.Errorf("incidents: %s", stdout)
	}
	// A person corrects the classification: the accuracy drops, per motor.
	_, listed, _ := ora("incidents", "--json")
	var incs struct{ Incidents []struct{ ID string } }
	if err := json.Unmarshal([]byte(listed), &incs); err != nil || len(incs.Incidents) == 0 {
		t.Fatalf("incidents --json: %s %v", listed, err)
	}
	id := incs.Incidents[0].ID
	if code, _, stderr := ora("reclassify", id, "OOPS", "--reason", "x"); code != 1 || !strings.Contains(stderr, "400") || !strings.Contains(stderr, "taxonomy") {
		t.Errorf("reclassify to no class: exit %d, %s", code, stderr)
	}
	if code, _, stderr := ora("reclassify", id, "APP-SPEC"); code != 2 || !strings.Contains(stderr, "--reason is required") {
		t.Errorf("reclassify without a reason: exit %d, %s", code, stderr)
	}
	if code, stdout, stderr := ora("reclassify", id, "APP-SPEC", "--reason", "the payload lacked a field"); code != 0 || !strings.Contains(stdout, "corrected to APP-SPEC (app)") {
		t.Fatalf("reclassify: exit %d, %s %s", code, stdout, stderr)
	}
	if code, stdout, _ := ora("incidents"); code != 0 || !strings.Contains(stdout, "corrected to APP-SPEC (app) by") || !strings.Contains(stdout, "classification accuracy 0%") {
		t.Errorf("incidents after the correction: %s", stdout)
	}

	if code, stdout, stderr := ora("motor", "rollback", "--reason", "regression"); code != 0 || !strings.Contains(stdout, "rollback") {
		t.Fatalf("rollback: exit %d, %s %s", code, stdout, stderr)
	}
	if code, stdout, _ := ora("motor", "list"); code != 0 || !strings.Contains(stdout, "1.0.1          retired") || !strings.Contains(stdout, "#2 rollback "+baseVersion(t)+" (from 1.0.1)") {
		t.Errorf("motor list: %s", stdout)
	}
	_ = os.WriteFile(signal, []byte(`{"confidence":"medium"}`), 0o600)
	if code, stdout, stderr = ora("send", "demo", signal); code != 0 {
		t.Fatalf("send after the rollback: %s", stderr)
	}
	next := decodeReceipt(t, stdout).WaveID
	operatorState(t, url, next, "SUCCESS")
	if got := rulesVersion(t, url, next); got != baseVersion(t) {
		t.Errorf("the wave after the rollback decided under %q, want the base version", got)
	}
}

// rulesVersion returns the rules (motor) version the wave's decision records.
func rulesVersion(t *testing.T, base, signalID string) string {
	t.Helper()
	resp, err := http.Get(base + "/signals/" + signalID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Entries []struct {
			Kind string          `json:"kind"`
			Body json.RawMessage `json:"body"`
		} `json:"entries"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	v := ""
	for _, e := range out.Entries {
		if e.Kind == "reasoner-decision" {
			var d struct {
				RulesVersion string `json:"rules_version"`
			}
			_ = json.Unmarshal(e.Body, &d)
			v = d.RulesVersion
		}
	}
	return v
}

// baseVersion is the default rules' version, the motor's base version.
func baseVersion(t *testing.T) string {
	t.Helper()
	set, err := rules.Parse(defaultrules.Default)
	if err != nil {
		t.Fatal(err)
	}
	return set.Version()
}

// startDev starts ora dev's runtime from the config text behind an httptest
// server and returns the config file and the server's URL; both stop when
// the test ends.
func startDev(t *testing.T, cfgText string) (cfgFile, url string) {
	t.Helper()
	cfgFile = writeCLIConfig(t, cfgText)
	cfg, err := embedded.LoadConfig(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := embedded.New(context.Background(), cfg, func(o *embedded.Options) { o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil)) })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rt.Handler())
	t.Cleanup(func() { srv.Close(); rt.Close() })
	return cfgFile, srv.URL
}

// A proposal file's learned: names the learned patterns the version
// carries, by id, resolved from the patterns the API knows: one it does
// not know is refused naming it and nothing is proposed; without the key
// the version carries the current one's; learned: [] carries none. A key
// the file format does not have is refused, never ignored. On SQLite and
// on DynamoDB Local.
func TestMotorProposeLearned(t *testing.T) {
	for _, store := range []string{"sqlite", "dynamodb"} {
		t.Run(store, func(t *testing.T) { testMotorProposeLearned(t, store) })
	}
}

func testMotorProposeLearned(t *testing.T, store string) {
	dir := t.TempDir()
	cfgText := fmt.Sprintf(patternConfig, dir)
	if store == "dynamodb" {
		name := dynamotest.TableName("propose-learned")
		cfgText += fmt.Sprintf("store:\n  kind: dynamodb\n  dynamodb: {endpoint: %q, table: %s, idempotency_table: %s-idem, create_tables: true}\n",
			dynamotest.Endpoint(t), name, name)
	}
	cfgFile, url := startDev(t, cfgText)
	ora := func(args ...string) (int, string, string) {
		return runOra(t, append(args, "--config", cfgFile, "--url", url)...)
	}
	// A learned pattern: an app incident resumed with an input patch.
	signal := filepath.Join(dir, "signal.json")
	_ = os.WriteFile(signal, []byte(`{"confidence":"high"}`), 0o600)
	code, stdout, stderr := ora("send", "demo", signal)
	if code != 0 {
		t.Fatalf("send: %s", stderr)
	}
	wave := decodeReceipt(t, stdout).WaveID
	operatorState(t, url, wave, "PAUSED")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, _, stderr = ora("resume", wave, "--patch-kind", "input", "--patch-target", "confidence", "--patch-value", `"high"`)
		if code == 0 || time.Now().After(deadline) || !strings.Contains(stderr, "pausing") {
			break
		}
	}
	if code != 0 {
		t.Fatalf("resume: %s", stderr)
	}
	operatorState(t, url, wave, "SUCCESS")
	_, stdout, _ = ora("patterns")
	m := regexp.MustCompile(`pattern-[0-9a-f]{16}`).FindString(stdout)
	if m == "" {
		t.Fatalf("no learned pattern: %q", stdout)
	}

	// learnedOf lists the learned patterns of each version (ora motor list --json).
	learnedOf := func() map[string][]string {
		t.Helper()
		_, out, _ := ora("motor", "list", "--json")
		var l struct {
			Versions []struct {
				Version string
				Learned []struct{ ID string }
			}
		}
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatalf("motor list --json: %v\n%s", err, out)
		}
		got := map[string][]string{}
		for _, v := range l.Versions {
			got[v.Version] = []string{}
			for _, p := range v.Learned {
				got[v.Version] = append(got[v.Version], p.ID)
			}
		}
		return got
	}
	propose := func(v, extra string) (int, string) {
		t.Helper()
		p := writeBundle(t, dir, v, "reasoning: Pushes to the default branch are routine; the team is told.", "reasoning: Pushes to the default branch are routine.")
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString(extra)
		f.Close()
		code, _, stderr := ora("motor", "propose", p)
		return code, stderr
	}
	refused := []struct{ name, version, extra, want string }{
		{"an unknown pattern", "1.0.5", "learned: [pattern-0000000000000000]\n", `"pattern-0000000000000000" is not a learned pattern (ora patterns list shows them); nothing proposed`},
		{"a pattern named twice", "1.0.5", "learned: [" + m + ", " + m + "]\n", "named twice"},
		{"learned patterns written out", "1.0.5", "learned: [{id: " + m + "}]\n", "cannot unmarshal"},
		{"an unknown key", "1.0.5", "learnt: [" + m + "]\n", "field learnt not found"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := propose(tc.version, tc.extra)
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, %s; want 1 naming %q", code, stderr, tc.want)
			}
			if _, ok := learnedOf()[tc.version]; ok {
				t.Errorf("motor %s was proposed", tc.version)
			}
		})
	}
	if code, stderr := propose("1.0.5", "learned: ["+m+"]\n"); code != 0 {
		t.Fatalf("propose 1.0.5 carrying %s: %s", m, stderr)
	}
	if code, _, stderr := ora("motor", "promote", "1.0.5", "--reason", "carry the pattern"); code != 0 {
		t.Fatalf("promote 1.0.5 through the gate: %s", stderr)
	}
	if code, stderr := propose("1.0.6", ""); code != 0 {
		t.Fatalf("propose 1.0.6: %s", stderr)
	}
	if code, stderr := propose("1.0.7", "learned: []\n"); code != 0 {
		t.Fatalf("propose 1.0.7: %s", stderr)
	}
	got := learnedOf()
	for v, want := range map[string][]string{"1.0.5": {m}, "1.0.6": {m}, "1.0.7": {}} {
		if strings.Join(got[v], ",") != strings.Join(want, ",") {
			t.Errorf("motor %s carries %v, want %v", v, got[v], want)
		}
	}
}
