package embedded

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPServersConfig: mcp_servers takes stdio and streamable HTTP
// servers in ora dev, and names the entry and key of a bad one.
func TestMCPServersConfig(t *testing.T) {
	const src = "sources:\n  - {name: ci, type: hmac, secret: ci-secret-1}\n"
	load := func(t *testing.T, body string) (Config, error) {
		t.Helper()
		p := filepath.Join(t.TempDir(), "ora.yaml")
		if err := os.WriteFile(p, []byte(src+body), 0o600); err != nil {
			t.Fatal(err)
		}
		return LoadConfig(p)
	}
	c, err := load(t, `mcp_servers:
  - name: files
    command: [npx, -y, "@modelcontextprotocol/server-filesystem", ./docs]
    env: {LOG_LEVEL: warn}
  - name: tracker
    url: https://mcp.example.com/mcp
    connection: tracker
    timeout_seconds: 20
    max_result_bytes: 32768
    reasoner_write_tools: [add_comment]
    act_tools: [add_label, add_comment]
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.MCPServers) != 2 || c.MCPServers[0].Command[2] != "@modelcontextprotocol/server-filesystem" || c.MCPServers[0].Env["LOG_LEVEL"] != "warn" ||
		c.MCPServers[1].Connection != "tracker" || !c.MCPServers[1].ActAllows("add_label") || !c.MCPServers[1].ReasonerMayWrite("add_comment") {
		t.Errorf("servers %+v", c.MCPServers)
	}
	bad := map[string]struct{ body, want string }{
		"both transports": {"mcp_servers:\n  - {name: x, command: [a], url: 'https://h/mcp'}\n", "mcp_servers[0]"},
		"no transport":    {"mcp_servers:\n  - {name: x}\n", "mcp_servers[0]"},
		"unknown key":     {"mcp_servers:\n  - {name: x, url: 'https://h/mcp', act_tool: [a]}\n", "mcp_servers[0].act_tool"},
		"a name twice":    {"mcp_servers:\n  - {name: x, url: 'https://h/mcp'}\n  - {name: x, url: 'https://i/mcp'}\n", "mcp_servers[1].name"},
	}
	for name, tt := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := load(t, tt.body); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want one naming %s", err, tt.want)
			}
		})
	}
}
