package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/act"
)

const resolveConfig = `listen: 127.0.0.1:0
data_dir: %s
rules_file: %s
sources:
  - {name: demo, type: hmac, secret: test-demo-secret, header: X-Ora-Signature, hash: sha256}
tokens:
  - {token: operator-token-1, subject: operator, scopes: [ora.operate, ora.read]}
actions:
  http: {allowed_hosts: ["%s"], signing_secret: s, timeout_seconds: 1}
`

// receiver leaves its first request unanswered and answers the others.
type receiver struct {
	mu   sync.Mutex
	keys []string
	hang chan struct{}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	rc.mu.Lock()
	rc.keys = append(rc.keys, r.Header.Get(act.HeaderIdempotencyKey))
	first := len(rc.keys) == 1
	rc.mu.Unlock()
	if first {
		select {
		case <-rc.hang:
		case <-r.Context().Done():
		}
		return
	}
	w.WriteHeader(http.StatusOK)
}

// A wave whose action's request went unanswered pauses; `ora resume` is
// refused; `ora resolve --not-executed` sends the action once more under its
// own key and the wave succeeds; `ora resolve --executed` sends nothing more
// and the wave succeeds through validation. Through ora dev's engine and API.
func TestResolveUnknownOutcome(t *testing.T) {
	for _, answer := range []string{"--not-executed", "--executed"} {
		t.Run(answer, func(t *testing.T) {
			dir := t.TempDir()
			rc := &receiver{hang: make(chan struct{})}
			srv := httptest.NewServer(rc)
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(rc.hang) })
			rulesFile := filepath.Join(dir, "rules.yaml")
			text := strings.Replace(string(defaultrules.Default), "https://not-allow-listed.invalid/ora-test", srv.URL+"/hook", 1)
			if err := os.WriteFile(rulesFile, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			cfgFile, url := startDev(t, fmt.Sprintf(resolveConfig, dir, rulesFile, strings.TrimPrefix(srv.URL, "http://")))
			ora := func(args ...string) (int, string, string) {
				return runOra(t, append(args, "--config", cfgFile, "--url", url)...)
			}
			signal := filepath.Join(dir, "signal.json")
			_ = os.WriteFile(signal, []byte(`{"confidence":"fail"}`), 0o600)
			code, stdout, stderr := ora("send", "demo", signal)
			if code != 0 {
				t.Fatalf("send: %s", stderr)
			}
			wave := decodeReceipt(t, stdout).WaveID
			operatorState(t, url, wave, "PAUSED")
			if code, _, stderr := ora("resume", wave); code != 1 || !strings.Contains(stderr, "ora resolve") {
				t.Errorf("resume of an unknown outcome: exit %d, %s", code, stderr)
			}
			if code, _, _ := ora("resolve", wave); code != 2 {
				t.Errorf("resolve without an answer: exit %d, want 2", code)
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				code, stdout, stderr = ora("resolve", wave, answer, "--reason", "checked the receiver")
				if code == 0 || time.Now().After(deadline) || !strings.Contains(stderr, "pausing") {
					break
				}
			}
			if code != 0 {
				t.Fatalf("resolve %s: exit %d, %s %s", answer, code, stdout, stderr)
			}
			want := map[string]string{"--not-executed": "resumed at Act", "--executed": "resumed at Validate"}[answer]
			if !strings.Contains(stdout, want) {
				t.Errorf("resolve %s: %s, want %q", answer, stdout, want)
			}
			operatorState(t, url, wave, "SUCCESS")
			rc.mu.Lock()
			keys := append([]string(nil), rc.keys...)
			rc.mu.Unlock()
			switch answer {
			case "--not-executed":
				if len(keys) != 2 || keys[0] == keys[1] || !strings.HasSuffix(keys[1], "/0/r1") {
					t.Errorf("requests %v: want the first and one more under its own key", keys)
				}
			default:
				if len(keys) != 1 {
					t.Errorf("requests %v: want only the first", keys)
				}
			}
			if code, _, _ := ora("resolve", wave, answer); code != 1 {
				t.Errorf("a second resolve: exit %d, want 1", code)
			}
		})
	}
}
