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

func TestConnectionsConfigErrors(t *testing.T) {
	dir := t.TempDir()
	base := "data_dir: " + dir + "\nsources: [{name: demo, type: hmac, secret: doc-demo-secret}]\n"
	cases := []struct{ name, yaml, want string }{
		{"unknown key", "actions: {http: {signing_secret: s3cret-signing}}\nconnections: [{name: gh, url: \"https://api.github.com\", auth: {kind: bearer, secrte: x}}]\n", "secrte"},
		{"unset variable", "actions: {http: {signing_secret: s3cret-signing}}\nconnections: [{name: gh, url: \"https://api.github.com\", auth: {kind: bearer, secret: \"${ORA_TEST_UNSET_VAR}\"}}]\n", "connections[0](gh).auth.secret"},
		{"no signing secret", "connections: [{name: gh, url: \"https://api.github.com\", auth: {kind: bearer, secret: tok3n-value}}]\n", "actions.http.signing_secret"},
		{"twice", "actions: {http: {signing_secret: s3cret-signing}}\nconnections: [{name: gh, url: \"https://a.example\", auth: {kind: bearer, secret: tok3n-value}}, {name: gh, url: \"https://b.example\", auth: {kind: bearer, secret: tok3n-value}}]\n", "connections[1].name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "ora.yaml")
			if err := os.WriteFile(p, []byte(base+tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadConfig(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadConfig: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
