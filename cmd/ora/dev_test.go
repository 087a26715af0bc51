package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/connect"
	"github.com/ora-runtime/ora/shared/embedded"
	"github.com/ora-runtime/ora/shared/httpapi"
)

// The printed configuration shows the values in effect and only the active
// reasoner's block, with every secret masked.
func TestBannerPrintsEffectiveConfig(t *testing.T) {
	old := self
	self = "./bin/ora"
	t.Cleanup(func() { self = old })
	tests := []struct {
		name    string
		edit    func(c *embedded.Config)
		path    string
		want    []string
		notWant []string
	}{
		{name: "rules reasoner, defaults",
			want: []string{"timeout_seconds: 10", "reasoner:\n    kind: rules\n", "sqlite_path: .ora/ledger.db",
				`echo '{"confidence":"high"}' | ./bin/ora send demo -`,
				`echo '{"confidence":"medium"}' | ./bin/ora send demo -`,
				`echo '{"confidence":"low"}' | ./bin/ora send demo -`,
				"./bin/ora trace <signal_id>", "./bin/ora approve <decision_id>"},
			notWant: []string{"bedrock:", "dev-demo-secret", "dev-approver-token", "dev-signing-secret", "timeout_seconds: 0"}},
		{name: "connections are shown with their secrets masked",
			edit: func(c *embedded.Config) {
				c.Connections = []connect.Config{{Name: "github", URL: "https://api.github.com", Auth: connect.Auth{Kind: connect.KindBearer, Secret: "ghp_banner-canary-1234"}}}
			},
			want:    []string{"name: github", "kind: bearer", "secret: '[hidden]'"},
			notWant: []string{"ghp_banner-canary", "1234"}},
		{name: "a token shows its subject and scopes, no character of it",
			edit: func(c *embedded.Config) {
				c.Tokens = []httpapi.Token{{Token: "s3cr3t-TOKEN-a7Qz", Subject: "release-bot", Scopes: []string{httpapi.ScopeOperate}}}
				c.Sources[0].Secret = "webhook-secret-x9Kw"
			},
			want:    []string{"subject: release-bot", "- ora.operate", "token: '[hidden]'"},
			notWant: []string{"a7Qz", "x9Kw", "****"}},
		{name: "bedrock reasoner shows its block",
			edit: func(c *embedded.Config) { c.Reasoner.Kind = "bedrock"; c.Actions.HTTP.TimeoutSeconds = 3 },
			path: "my config.yaml",
			want: []string{"kind: bedrock", "bedrock:", "model: ", "timeout_seconds: 3",
				"./bin/ora send demo - --config 'my config.yaml'", "./bin/ora trace <signal_id> --config 'my config.yaml'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := embedded.LoadConfig("")
			if err != nil {
				t.Fatal(err)
			}
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			var out bytes.Buffer
			banner(&out, cfg, "127.0.0.1:8080", tt.path)
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("banner does not contain %q:\n%s", w, out.String())
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out.String(), w) {
					t.Errorf("banner contains %q:\n%s", w, out.String())
				}
			}
		})
	}
}
