package embedded

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestConnectionsDocExamplesLoad: every `connections:` example in
// docs/connections.md is a config ora dev loads.
func TestConnectionsDocExamplesLoad(t *testing.T) {
	doc, err := os.ReadFile("../../docs/connections.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "legacy-password")
	if err := os.WriteFile(secretFile, []byte("legacy-password-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"GITHUB_TOKEN", "SEARCH_KEY", "BILLING_CLIENT_SECRET"} {
		t.Setenv(k, "doc-example-"+strings.ToLower(k))
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(connections:.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 5 {
		t.Fatalf("%d connections examples, want one per auth kind", len(blocks))
	}
	for i, b := range blocks {
		body := strings.ReplaceAll(b[1], "/run/secrets/legacy-password", secretFile)
		cfg := "data_dir: " + dir + "\nsources: [{name: demo, type: hmac, secret: doc-demo-secret}]\n" +
			"actions: {http: {signing_secret: doc-signing-secret}}\n" + body
		p := filepath.Join(dir, "ora.yaml")
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := LoadConfig(p)
		if err != nil {
			t.Errorf("example %d: %v\n%s", i, err, body)
			continue
		}
		for _, cn := range c.Connections {
			if cn.Auth.Secret == "" || strings.HasPrefix(cn.Auth.Secret, "${") || strings.HasPrefix(cn.Auth.Secret, "file:") {
				t.Errorf("example %d: connection %s's secret %q was not resolved", i, cn.Name, cn.Auth.Secret)
			}
		}
	}
}
