package reason_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/mcp/mcptest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

func TestMain(m *testing.M) {
	mcptest.Serve() // the stdio MCP server, when this binary is started as one
	os.Exit(m.Run())
}

// TestMCPToolLoop runs the Converse tool loop through an MCP server written
// with the SDK, over streamable HTTP and over stdio: the model is offered
// only the read-only tools tools_allowed names, the call goes to the server
// and its result back to the model, and every call is recorded.
func TestMCPToolLoop(t *testing.T) {
	ctx := context.Background()
	_, url := mcptest.HTTP(t)
	argv, env := mcptest.Command()
	homes := map[string]mcp.ServerConfig{
		"streamable HTTP": {Name: "tracker", URL: url},
		"stdio":           {Name: "tracker", Command: argv, Env: env},
	}
	type setup struct {
		allowed []string
		server  func(*mcp.ServerConfig)
		cfg     func(*reason.Config)
		spend   reason.SpendMeter
		// deadline, when set, is the stage's deadline from now (a Lambda
		// function's timeout).
		deadline time.Duration
	}
	run := func(t *testing.T, server mcp.ServerConfig, s setup, replies ...bedrocktest.Reply) (reason.Outcome, *bedrocktest.Server) {
		t.Helper()
		if s.server != nil {
			s.server(&server)
		}
		c, err := mcp.New([]mcp.ServerConfig{server}, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		srv := bedrocktest.New(t, replies...)
		cfg := testConfig()
		if s.cfg != nil {
			s.cfg(&cfg)
		}
		b, err := reason.NewBridge(bedrock.New(srv.Client(1)), cfg, func(o *reason.Options) {
			o.Tools, o.Now, o.Spend = reason.MCPTools(c), func() time.Time { return now }, s.spend
		})
		if err != nil {
			t.Fatal(err)
		}
		env := envelope(ora.ProgramSafeOPSDecision)
		env.ToolsAllowed = s.allowed
		sig := signal("sig-mcp")
		rctx := ctx
		if s.deadline > 0 {
			var cancel context.CancelFunc
			rctx, cancel = context.WithTimeout(ctx, s.deadline)
			defer cancel()
		}
		out, err := b.Run(rctx, env, reason.Input{Signal: &sig})
		if err != nil {
			t.Fatal(err)
		}
		return out, srv
	}
	offered := func(r bedrocktest.Request) []string {
		var names []string
		for _, tl := range r.ToolConfig.Tools {
			if tl.ToolSpec != nil && strings.HasPrefix(tl.ToolSpec.Name, "mcp_") {
				names = append(names, tl.ToolSpec.Name)
			}
		}
		return names
	}
	all := setup{allowed: []string{"mcp.tracker.*"}}

	for home, server := range homes {
		t.Run(home, func(t *testing.T) {
			t.Run("a read-only tool runs and its result goes back", func(t *testing.T) {
				out, srv := run(t, server, all, toolCall("tu-1", "mcp_tracker_get_issue", `{"number":7}`), stage(0.97, 3, "read the issue", safeOPS))
				reqs := srv.Requests()
				if len(reqs) != 2 {
					t.Fatalf("%d requests, want 2", len(reqs))
				}
				if got := strings.Join(offered(reqs[0]), ","); got != "mcp_tracker_get_issue,mcp_tracker_search,mcp_tracker_slow" {
					t.Errorf("offered %s: want the read-only tools only", got)
				}
				res := reqs[1].ToolResults()
				if len(res) != 1 || res[0].ToolUseID != "tu-1" || res[0].Status == "error" || !strings.Contains(string(res[0].Content[0].JSON), `"Issue 7"`) {
					t.Fatalf("results sent back %+v, want issue 7", res)
				}
				if out.Result.Status != ora.ReasoningOK || len(out.Result.ToolCalls) != 1 {
					t.Fatalf("status %s, calls %+v", out.Result.Status, out.Result.ToolCalls)
				}
				c := out.Result.ToolCalls[0]
				if c.Tool != "mcp.tracker.get_issue" || c.Server != "tracker" || !c.Allowed || c.Error ||
					c.InputDigest != ora.Digest([]byte(`{"number":7}`)) || c.ResultDigest != ora.Digest(canonical(t, res[0].Content[0].JSON)) {
					t.Errorf("recorded %+v: want the tool, its server, the input's and the result's digests", c)
				}
			})
			t.Run("tools_allowed names the tools offered", func(t *testing.T) {
				_, srv := run(t, server, setup{allowed: []string{"mcp.tracker.search"}}, stage(0.97, 3, "x", safeOPS))
				if got := strings.Join(offered(srv.Requests()[0]), ","); got != "mcp_tracker_search" {
					t.Errorf("offered %s, want mcp_tracker_search", got)
				}
			})
			t.Run("a tool that changes something is never offered by default", func(t *testing.T) {
				out, srv := run(t, server, setup{allowed: []string{"mcp.tracker.add_label"}}, stage(0.97, 3, "x", safeOPS))
				if got := offered(srv.Requests()[0]); len(got) != 0 || srv.Requests()[0].ForcedTool() != reason.ObservationTool {
					t.Errorf("offered %v, want none (the answer forced)", got)
				}
				if out.Result.Status != ora.ReasoningOK || len(out.Result.ToolCalls) != 0 {
					t.Errorf("status %s, calls %+v: want OK and no call", out.Result.Status, out.Result.ToolCalls)
				}
			})
			t.Run("unless the server's config allows it to the reasoner", func(t *testing.T) {
				s := setup{allowed: []string{"mcp.tracker.add_label"}, server: func(c *mcp.ServerConfig) { c.ReasonerWriteTools = []string{"add_label"} }}
				_, srv := run(t, server, s, stage(0.97, 3, "x", safeOPS))
				if got := strings.Join(offered(srv.Requests()[0]), ","); got != "mcp_tracker_add_label" {
					t.Errorf("offered %s, want mcp_tracker_add_label", got)
				}
			})
			t.Run("a call that times out goes back as an error and is recorded", func(t *testing.T) {
				// 5 s, not 1: the listing before the call shares the timeout, and a
				// stdio server started under load can take more than a second.
				s := setup{allowed: all.allowed, server: func(c *mcp.ServerConfig) { c.TimeoutSeconds = 5 }}
				out, srv := run(t, server, s, toolCall("tu-1", "mcp_tracker_slow", `{}`), stage(0.97, 3, "x", safeOPS))
				res := srv.Requests()[1].ToolResults()
				if len(res) != 1 || res[0].Status != "error" {
					t.Fatalf("results %+v, want an error result", res)
				}
				c := out.Result.ToolCalls[0]
				if out.Result.Status != ora.ReasoningOK || !c.Error || !strings.Contains(c.Message, "timed out") {
					t.Errorf("status %s, recorded %+v: want the run to go on and the timeout recorded", out.Result.Status, c)
				}
			})
			t.Run("a stage near its deadline answers the tool without calling it", func(t *testing.T) {
				s := setup{allowed: all.allowed, deadline: reason.ToolReserve - time.Second}
				out, srv := run(t, server, s, toolCall("tu-1", "mcp_tracker_get_issue", `{"number":7}`), stage(0.97, 3, "x", safeOPS))
				res := srv.Requests()[1].ToolResults()
				if len(res) != 1 || res[0].Status != "error" || strings.Contains(string(res[0].Content[0].JSON), "Issue 7") {
					t.Fatalf("results %+v, want an error result and no issue", res)
				}
				if c := out.Result.ToolCalls[0]; !c.Error || !strings.Contains(c.Message, "not called") {
					t.Errorf("recorded %+v: want the call not made, and why", c)
				}
			})
			t.Run("a tool's timeout ends before the stage's deadline less the reserve", func(t *testing.T) {
				s := setup{allowed: all.allowed, deadline: reason.ToolReserve + 4*time.Second, server: func(c *mcp.ServerConfig) { c.TimeoutSeconds = 60 }}
				out, _ := run(t, server, s, toolCall("tu-1", "mcp_tracker_slow", `{}`), stage(0.97, 3, "x", safeOPS))
				c := out.Result.ToolCalls[0]
				if out.Result.Status != ora.ReasoningOK || !c.Error || !strings.Contains(c.Message, "timed out after") || strings.Contains(c.Message, "1m0s") {
					t.Errorf("status %s, recorded %+v: want a timeout shorter than the server's 60 s", out.Result.Status, c)
				}
			})
			t.Run("a result over the server's bound is cut", func(t *testing.T) {
				s := setup{allowed: all.allowed, server: func(c *mcp.ServerConfig) { c.MaxResultBytes = 2048 }}
				_, srv := run(t, server, s, toolCall("tu-1", "mcp_tracker_search", `{"query":"deploy","size":50000}`), stage(0.97, 3, "x", safeOPS))
				res := srv.Requests()[1].ToolResults()
				if len(res) != 1 || len(res[0].Content[0].JSON) > 4096 || !strings.Contains(string(res[0].Content[0].JSON), `"truncated":true`) {
					t.Errorf("result of %d bytes sent back, want one cut near 2048", len(res[0].Content[0].JSON))
				}
			})
			t.Run("the spend cap stops the tool loop", func(t *testing.T) {
				s := setup{allowed: all.allowed, spend: &memSpend{}, cfg: func(c *reason.Config) { c.DailySpendCapUSD = 0.000001 }}
				out, srv := run(t, server, s, toolCall("tu-1", "mcp_tracker_get_issue", `{"number":7}`), stage(0.97, 3, "x", safeOPS))
				reqs := srv.Requests()
				if len(reqs) != 2 || reqs[1].ForcedTool() != reason.ObservationTool || len(reqs[1].ToolResults()) != 0 {
					t.Fatalf("%d requests, the last forcing %q: want the answer forced, no tool run", len(reqs), reqs[len(reqs)-1].ForcedTool())
				}
				if len(out.Result.ToolCalls) != 0 || !hasDiag(out, reason.DiagSpendCap) {
					t.Errorf("calls %+v, diagnostics %+v: want no call and the spend cap named", out.Result.ToolCalls, out.Result.Diagnostics)
				}
			})
		})
	}
	t.Run("a server that cannot be reached offers nothing and the run goes on", func(t *testing.T) {
		down := mcp.ServerConfig{Name: "tracker", Command: []string{"/nonexistent/mcp-server"}}
		out, srv := run(t, down, all, stage(0.97, 3, "x", safeOPS))
		if got := offered(srv.Requests()[0]); len(got) != 0 || out.Result.Status != ora.ReasoningOK || !hasDiag(out, reason.DiagToolsUnavailable) {
			t.Errorf("offered %v, status %s: want none offered, OK, and a diagnostic", got, out.Result.Status)
		}
	})
}

func TestToolSchema(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		strict bool
		ok     bool
		want   string // the schema sent, when ok
	}{
		{"closed object", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"n":{"type":"integer","description":"number"}},"required":["n"],"additionalProperties":false}`, true, true,
			`{"additionalProperties":false,"properties":{"n":{"description":"number","type":"integer"}},"required":["n"],"type":"object"}`},
		{"open object", `{"type":"object","properties":{"n":{"type":"integer"}}}`, false, true, `{"properties":{"n":{"type":"integer"}},"type":"object"}`},
		{"keyword outside the subset", `{"type":"object","properties":{"q":{"type":"string","minLength":3}},"additionalProperties":false}`, false, true, ""},
		{"nested open object", `{"type":"object","properties":{"o":{"type":"object","properties":{}}},"additionalProperties":false}`, false, true, ""},
		{"no schema", ``, false, true, `{"properties":{},"type":"object"}`},
		{"no type", `{"properties":{"a":{"type":"string"}}}`, false, true, `{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{"not an object", `{"type":"array","items":{"type":"string"}}`, false, false, ""},
		{"not JSON", `{`, false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, strict, ok := reason.ToolSchema(json.RawMessage(c.in))
			if ok != c.ok || strict != c.strict {
				t.Fatalf("strict=%v ok=%v, want strict=%v ok=%v", strict, ok, c.strict, c.ok)
			}
			if c.want != "" && string(got) != c.want {
				t.Errorf("schema %s, want %s", got, c.want)
			}
		})
	}
}

// TestDecisionRecordsMCPToolCalls: the Reasoner's decision carries the
// model's tool calls in its trace, so the ledger keeps them with it.
func TestDecisionRecordsMCPToolCalls(t *testing.T) {
	_, url := mcptest.HTTP(t)
	c, err := mcp.New([]mcp.ServerConfig{{Name: "tracker", URL: url}}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := bedrocktest.New(t, toolCall("tu-1", "mcp_tracker_get_issue", `{"number":7}`), stage(0.97, 3, "read the issue", safeOPS))
	cfg := testConfig()
	cfg.ToolsAllowed = []string{"mcp.tracker.get_issue"}
	r, err := reason.NewReasoner(bedrock.New(srv.Client(1)), cfg, func(o *reason.Options) {
		o.Tools, o.Now = reason.MCPTools(c), func() time.Time { return now }
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Reason(context.Background(), input("sig-mcp"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Model == nil || len(d.Model.ToolCalls) != 1 || d.Model.ToolCalls[0].Tool != "mcp.tracker.get_issue" || d.Model.ToolCalls[0].Server != "tracker" || d.Model.ToolCalls[0].ResultDigest == "" {
		t.Errorf("decision trace %+v, want the get_issue call", d.Model)
	}
}
