// Package e2e is ora's end-to-end suite. It speaks only HTTP, so it runs
// unchanged against `ora dev` (which it starts itself, once on SQLite and once on
// DynamoDB Local) and against a deployed stack:
//
//	make e2e ENDPOINT=https://abc.execute-api.eu-west-1.amazonaws.com
//	make e2e OUTPUTS=localstack/outputs.json
//
// For a deployed stack, ORA_E2E_SECRET is the "e2e" source's hmac secret and
// ORA_E2E_TOKEN a bearer token holding ora/ora.approve and ora/orientation.read
// (or ORA_E2E_CLIENT_SECRET, with which the suite fetches one from the stack's
// Cognito token URL and client id in the outputs file).
package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/observe"
)

const (
	localSecret = "e2e-secret"
	localToken  = "e2e-approver-token"
)

func TestEndToEnd(t *testing.T) {
	if remote, ok := remoteTarget(t); ok {
		runSuite(t, remote)
		return
	}
	if testing.Short() {
		t.Skip("the end-to-end suite starts ora dev; skipped with -short")
	}
	bin := buildOra(t)
	t.Run("sqlite", func(t *testing.T) {
		runSuite(t, startDev(t, bin, "store:\n  kind: sqlite\n"))
		runOperatorSuite(t, func(t *testing.T, extra string) target {
			return startDev(t, bin, "store:\n  kind: sqlite\n"+extra)
		})
	})
	t.Run("dynamodb", func(t *testing.T) {
		ep := dynamotest.Endpoint(t)
		store := func() string {
			return fmt.Sprintf("store:\n  kind: dynamodb\n  dynamodb:\n    endpoint: %s\n    region: us-east-1\n    table: %s\n    idempotency_table: %s\n    create_tables: true\n",
				ep, dynamotest.TableName("e2e-ledger"), dynamotest.TableName("e2e-idem"))
		}
		runSuite(t, startDev(t, bin, store()))
		runOperatorSuite(t, func(t *testing.T, extra string) target { return startDev(t, bin, store()+extra) })
	})
}

func buildOra(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ora")
	cmd := exec.Command("go", "build", "-race", "-o", bin, "../cmd/ora")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ora: %v\n%s", err, out)
	}
	return bin
}

// startDev starts `ora dev` on a free port with a config made of the common
// part and store, and stops it when t ends.
func startDev(t *testing.T, bin, store string) target {
	t.Helper()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// A host nobody allow-lists: the "fail" rule sends its request there.
	cfg := fmt.Sprintf(`listen: %s
data_dir: %s
%s
sources:
  - name: e2e
    type: hmac
    secret: %s
    header: X-Ora-Signature
  - name: slack
    type: slack
    secret: e2e-slack-secret
tokens:
  - token: %s
    subject: e2e
    scopes: [ora.approve, orientation.read, ora.operate, ora.read]
  - token: e2e-reader-token
    subject: reader
    scopes: [orientation.read]
escalation_timeout: 1h
actions:
  http:
    allowed_hosts: [127.0.0.1]
    signing_secret: e2e-signing
  object:
    allowed_prefixes: [actions/]
`, addr, dir, store, localSecret, localToken)
	path := filepath.Join(dir, "ora.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "dev", "--config", path)
	logs, _ := os.Create(filepath.Join(dir, "ora-dev.log"))
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ora dev: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		logs.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("ora dev log:\n%s", tail(string(b), 8000))
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logs.Name())
			t.Fatalf("ora dev did not become healthy on %s: %v\n%s", addr, err, tail(string(b), 8000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return target{
		name:        "ora dev",
		base:        base,
		source:      observe.SourceConfig{Name: "e2e", Type: "hmac", Secret: localSecret, Header: "X-Ora-Signature"},
		slack:       observe.SourceConfig{Name: "slack", Type: "slack", Secret: "e2e-slack-secret"},
		token:       localToken,
		readerToken: "e2e-reader-token",
	}
}

// remoteTarget reads ORA_E2E_ENDPOINT or ORA_E2E_OUTPUTS (a cdk outputs file).
func remoteTarget(t *testing.T) (target, bool) {
	endpoint := os.Getenv("ORA_E2E_ENDPOINT")
	outputsFile := os.Getenv("ORA_E2E_OUTPUTS")
	if endpoint == "" && outputsFile == "" {
		return target{}, false
	}
	outputs := map[string]string{}
	if outputsFile != "" {
		b, err := os.ReadFile(outputsFile)
		if err != nil {
			t.Fatalf("read %s: %v", outputsFile, err)
		}
		var stacks map[string]map[string]string
		if err := json.Unmarshal(b, &stacks); err != nil {
			t.Fatalf("%s is not a cdk outputs file: %v", outputsFile, err)
		}
		for _, o := range stacks {
			for k, v := range o {
				outputs[k] = v
			}
		}
		if endpoint == "" {
			endpoint = outputs["ApiUrl"]
		}
	}
	// make localstack-deploy provisions the e2e source and a token and
	// writes them into the outputs file (localstack/provision).
	secret := cmp.Or(os.Getenv("ORA_E2E_SECRET"), outputs["E2ESecret"])
	if secret == "" {
		t.Fatal("ORA_E2E_SECRET (the e2e source's hmac secret) is required against a deployed stack")
	}
	token := cmp.Or(os.Getenv("ORA_E2E_TOKEN"), outputs["E2EToken"])
	if token == "" {
		token = clientCredentialsToken(t, outputs)
	}
	return target{
		name:     "deployed",
		base:     strings.TrimRight(endpoint, "/"),
		source:   observe.SourceConfig{Name: "e2e", Type: "hmac", Secret: secret, Header: "X-Ora-Signature"},
		token:    token,
		deployed: true,
	}, true
}

// clientCredentialsToken fetches a token from the stack's Cognito token URL.
func clientCredentialsToken(t *testing.T, outputs map[string]string) string {
	t.Helper()
	secret := os.Getenv("ORA_E2E_CLIENT_SECRET")
	if secret == "" || outputs["TokenUrl"] == "" || outputs["UserPoolClientId"] == "" {
		t.Fatal("set ORA_E2E_TOKEN, or ORA_E2E_CLIENT_SECRET with an outputs file holding TokenUrl and UserPoolClientId")
	}
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"ora/ora.approve ora/orientation.read"}}
	req, _ := http.NewRequest(http.MethodPost, outputs["TokenUrl"], strings.NewReader(form.Encode()))
	req.SetBasicAuth(outputs["UserPoolClientId"], secret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: status %d: %v", resp.StatusCode, err)
	}
	return tok.AccessToken
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
