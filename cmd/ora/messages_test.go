package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorMessages: each error a user meets first is one line that names
// what is wrong and what to do, never a Go error chain or the whole usage.
func TestErrorMessages(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noSecret := write("nosecret.yaml", "sources:\n  - {name: gh, type: github}\n")
	postgres := write("postgres.yaml", "sources:\n  - {name: gh, type: github, secret: abcdefgh}\nstore:\n  kind: postgres\n")
	// A port nothing listens on: listen, note the port, close.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()

	tests := []struct {
		name string
		args []string
		want []string // every one must be in the single line
		not  []string
	}{
		{"unknown flag", []string{"send", "demo", "--file", "x.json"},
			[]string{"ora send: unknown flag -file", "ora send --help"}, []string{"usage:"}},
		{"missing file", []string{"send", "demo", "nofile.json"},
			[]string{"nofile.json: no such file", "- to read stdin"}, []string{"read open"}},
		{"missing secret", []string{"dev", "--config", noSecret},
			[]string{"line 2", "sources[0].secret", "github source"}, []string{"invalid:"}},
		{"unknown store", []string{"dev", "--config", postgres},
			[]string{"line 4", "store.kind", `"postgres" is not sqlite or dynamodb`}, nil},
		{"server not running", []string{"trace", "sig_x", "--url", dead},
			[]string{"is ora dev running?", "make run"}, []string{"dial tcp"}},
		{"approve with the server down", []string{"approve", "dec_x", "--url", dead},
			[]string{"is ora dev running?"}, []string{"dial tcp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := dispatch(context.Background(), tt.args, &stdout, &stderr)
			got := strings.TrimRight(stderr.String(), "\n")
			if code == 0 {
				t.Fatalf("exit 0, want an error; stderr %q", got)
			}
			if strings.Contains(got, "\n") {
				t.Fatalf("stderr has several lines, want one:\n%s", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("stderr %q lacks %q", got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("stderr %q still says %q", got, n)
				}
			}
		})
	}
}

// ora --version names the commit; ora --help defines the words it uses.
func TestVersionAndHelp(t *testing.T) {
	commit = "0123456789abcdef"
	t.Cleanup(func() { commit = "" })
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"--version"}, &out, &errb); code != 0 {
		t.Fatalf("ora --version exited %d: %s", code, errb.String())
	}
	if got := out.String(); !strings.HasPrefix(got, "ora ") || !strings.Contains(got, "commit 0123456789ab") {
		t.Errorf("ora --version = %q, want the commit", got)
	}
	out.Reset()
	errb.Reset()
	dispatch(context.Background(), []string{"--help"}, &out, &errb)
	help := errb.String()
	for _, w := range []string{"the motor is", "a wave is", "--version"} {
		if !strings.Contains(help, w) {
			t.Errorf("ora --help does not say %q", w)
		}
	}
	for _, name := range []string{"reason", "drill"} {
		errb.Reset()
		dispatch(context.Background(), []string{name, "--help"}, &out, &errb)
		if s := errb.String(); strings.Contains(s, "seed ") || strings.Contains(s, "§") {
			t.Errorf("ora %s --help speaks of the specification: %q", name, s)
		}
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		n    int
		noun string
		want string
	}{
		{1, "fact", "1 fact"}, {2, "fact", "2 facts"}, {0, "entry", "0 entries"}, {1, "entry", "1 entry"},
	}
	for _, tt := range tests {
		if got := count(tt.n, tt.noun); got != tt.want {
			t.Errorf("count(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
		}
	}
}
