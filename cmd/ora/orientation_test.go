package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/embedded"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/sqlite"
)

const orientationConfig = `listen: %s
data_dir: %s
sources:
  - {name: demo, type: hmac, secret: orientation-demo-secret, header: X-Ora-Signature}
tokens:
  - {token: reader-token-1, subject: reader, scopes: [orientation.read]}
  - {token: agent-token-01, subject: agent, scopes: [orientation.propose]}
  - {token: approver-token-1, subject: alice, scopes: [orientation.approve]}
`

func TestOrientationCommands(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srv := httptest.NewUnstartedServer(nil)
	path := writeCLIConfig(t, fmt.Sprintf(orientationConfig, srv.Listener.Addr(), dir))
	cfg, err := embedded.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := embedded.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = rt.Handler()
	srv.Start()
	defer srv.Close()
	defer rt.Close()

	proposal := filepath.Join(dir, "proposal.json")
	if err := os.WriteFile(proposal, []byte(`{"proposal_id":"cli-1","base_profile_id":"default","base_profile_version":1,
		"effective_waves":2,"horizon_policy":"revert","change":{"max_source_share":0.4}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args         []string
		code         int
		stdout, errs string
	}{
		{[]string{"profile"}, 0, `"profile_id": "default"`, ""},
		{[]string{"propose", proposal}, 0, `"status": "pending"`, ""},
		{[]string{"approve", "cli-1"}, 0, `"profile_version": 2`, ""},
		{[]string{"reject", "cli-1", "--reason", "late"}, 1, "", "409 Conflict"},
		{[]string{"approve", "nope"}, 1, "", "404 Not Found"},
		{[]string{"packet", "nope"}, 1, "", "404 Not Found"},
		{[]string{"verify", "nope"}, 1, "", "verify"},
		{[]string{"frobnicate"}, 2, "", "bad command"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runOra(t, append([]string{"orientation", "--config", path}, tt.args...)...)
			if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.errs) {
				t.Errorf("got %d\nstdout: %s\nstderr: %s\nwant %d, stdout with %q, stderr with %q", code, stdout, stderr, tt.code, tt.stdout, tt.errs)
			}
		})
	}

	t.Run("verify a wave", func(t *testing.T) {
		db, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		sig := ora.NormalizedSignal{ID: "sig-cli", Source: ora.Source{Type: "webhook", Name: "demo", Provider: "hmac", EventType: "test"}, Timestamp: time.Now().UTC(),
			NormalizedAt: time.Now().UTC(), DedupKey: "cli", RawDigest: ora.Digest([]byte("{}")), Payload: []byte(`{}`)}
		e, _ := ora.NewEntry(sig.ID, ora.KindSignalReceived, "", sig)
		if _, err := db.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		if _, err := orient.NewPlanner(db).PlanWave(ctx, sig.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := orient.NewCompiler(db).Compile(ctx, sig.ID); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runOra(t, "orientation", "verify", sig.ID, "--config", path)
		if code != 0 || !strings.Contains(stdout, `"match": true`) {
			t.Errorf("verify: %d\n%s\n%s", code, stdout, stderr)
		}
	})
}
