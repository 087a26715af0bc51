package act_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/mcp/mcptest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/taskerr"
)

func TestMain(m *testing.M) {
	mcptest.Serve() // the stdio MCP server, when this binary is started as one
	os.Exit(m.Run())
}

// mcpActor is an actor whose registry holds mcp.call over the given
// servers, on a SQLite ledger.
func mcpActor(t *testing.T, servers ...mcp.ServerConfig) (*act.Service, ora.Ledger, *act.MCPCall) {
	t.Helper()
	c, err := mcp.New(servers, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	db := acttest.DB(t)
	call := act.NewMCPCall(c)
	return mcpService(db, acttest.Once(db), call), db, call
}

func mcpService(db ora.Ledger, once act.Once, call *act.MCPCall) *act.Service {
	reg := act.NewRegistry()
	reg.Register(act.TypeMCPCall, call)
	return act.New(db, reg, once, func(o *act.Options) { o.Log = quiet })
}

// mcpActorWith is an actor over db and once whose mcp.call reaches server
// through a client of its own (a process's).
func mcpActorWith(t *testing.T, once act.Once, db ora.Ledger, server mcp.ServerConfig) *act.Service {
	t.Helper()
	c, err := mcp.New([]mcp.ServerConfig{server}, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return mcpService(db, once, act.NewMCPCall(c))
}

var mcpScope = ora.Scope{AllowedOperations: []string{act.TypeMCPCall}}

func mcpAction(t *testing.T, server, tool string, args any) ora.Action {
	return ora.Action{Type: act.TypeMCPCall, Parameters: acttest.Params(t, map[string]any{"server": server, "tool": tool, "arguments": args})}
}

// TestMCPCall runs mcp.call through the actor against an MCP server written
// with the SDK, over streamable HTTP and over stdio.
func TestMCPCall(t *testing.T) {
	ctx := context.Background()
	srv, url := mcptest.HTTP(t)
	argv, env := mcptest.Command()
	homes := map[string]mcp.ServerConfig{
		"streamable HTTP": {Name: "tracker", URL: url, ActTools: []string{"add_label", "fail", "slow", "close_issue"}, TimeoutSeconds: 5},
		"stdio":           {Name: "tracker", Command: argv, Env: env, ActTools: []string{"add_label", "fail", "slow", "close_issue"}, TimeoutSeconds: 5},
	}
	for home, server := range homes {
		t.Run(home, func(t *testing.T) {
			t.Run("success: the result is the evidence, the key is in _meta", func(t *testing.T) {
				svc, db, _ := mcpActor(t, server)
				acttest.Record(t, db, acttest.Decision("d1", "s1", mcpScope, mcpAction(t, "tracker", "add_label", map[string]any{"number": 7, "label": "bug"})))
				if _, err := svc.Act(ctx, "s1", "d1"); err != nil {
					t.Fatal(err)
				}
				w, err := act.LoadWave(ctx, db, "s1", "d1")
				if err != nil {
					t.Fatal(err)
				}
				ev := w.Evidence[0]
				if ev.Outcome != act.OutcomeSuccess || ev.Receipt == nil || ev.Receipt.Target != "mcp://tracker/add_label" || len(ev.Targets) != 1 {
					t.Fatalf("evidence %+v, want success on mcp://tracker/add_label", ev)
				}
				r := ev.Receipt
				if r.OutputDigest != ora.Digest([]byte(r.Output)) || r.Digest != ora.Digest([]byte(`{"label":"bug","number":7}`)) {
					t.Errorf("receipt %+v: want the result's digest and the arguments' digest", r)
				}
				if !strings.Contains(string(r.Output), `"idempotency_key":"d1/0"`) {
					t.Errorf("the tool saw no idempotency key d1/0 in _meta: %s", r.Output)
				}
			})
			t.Run("isError: failed", func(t *testing.T) {
				svc, db, _ := mcpActor(t, server)
				acttest.Record(t, db, acttest.Decision("d1", "s1", mcpScope, mcpAction(t, "tracker", "fail", map[string]any{})))
				_, err := svc.Act(ctx, "s1", "d1")
				var af *taskerr.ActionFailed
				if !errors.As(taskerr.From(err), &af) {
					t.Fatalf("Act: %v, want ActionFailed", err)
				}
				w, _ := act.LoadWave(ctx, db, "s1", "d1")
				if ev := w.Evidence[0]; ev.Outcome != act.OutcomeFailure || ev.Receipt == nil || !strings.Contains(ev.Error, "label does not exist") || ev.Receipt.OutputDigest == "" {
					t.Errorf("evidence %+v: want a failure carrying the tool's error and result", ev)
				}
			})
			t.Run("sent without an answer: unknown", func(t *testing.T) {
				svc, db, _ := mcpActor(t, server)
				acttest.Record(t, db, acttest.Decision("d1", "s1", mcpScope, mcpAction(t, "tracker", "slow", map[string]any{})))
				_, err := svc.Act(ctx, "s1", "d1")
				var ou *taskerr.OutcomeUnknown
				if !errors.As(taskerr.From(err), &ou) {
					t.Fatalf("Act: %v, want OutcomeUnknown", err)
				}
				if got := acttest.Status(t, db, "d1"); got != ora.StatusUnknown {
					t.Errorf("status %s, want %s", got, ora.StatusUnknown)
				}
			})
			t.Run("a tool the server does not have: failed, not unknown", func(t *testing.T) {
				svc, db, _ := mcpActor(t, server)
				acttest.Record(t, db, acttest.Decision("d1", "s1", mcpScope, mcpAction(t, "tracker", "close_issue", map[string]any{"number": 7})))
				_, err := svc.Act(ctx, "s1", "d1")
				var af *taskerr.ActionFailed
				if !errors.As(taskerr.From(err), &af) {
					t.Fatalf("Act: %v, want ActionFailed", err)
				}
				if got := acttest.Status(t, db, "d1"); got != ora.StatusFailed {
					t.Errorf("status %s, want %s", got, ora.StatusFailed)
				}
			})
			t.Run("a tool outside act_tools is a scope violation before any call", func(t *testing.T) {
				svc, db, _ := mcpActor(t, server)
				acttest.Record(t, db, acttest.Decision("d1", "s1", mcpScope, mcpAction(t, "tracker", "get_issue", map[string]any{"number": 1})))
				_, err := svc.Act(ctx, "s1", "d1")
				var sv *taskerr.ScopeViolation
				if !errors.As(taskerr.From(err), &sv) {
					t.Errorf("Act: %v, want ScopeViolation", err)
				}
			})
		})
	}
	if n := len(srv.Calls()); n != 3 {
		t.Errorf("the HTTP server got %d calls, want 3 (add_label, fail, slow)", n)
	}
	t.Run("forbidden_paths see mcp://server/tool", func(t *testing.T) {
		svc, db, _ := mcpActor(t, homes["streamable HTTP"])
		scope := ora.Scope{AllowedOperations: []string{act.TypeMCPCall}, ForbiddenPaths: []string{"mcp://tracker/add_*"}}
		acttest.Record(t, db, acttest.Decision("d1", "s1", scope, mcpAction(t, "tracker", "add_label", map[string]any{"number": 1, "label": "x"})))
		_, err := svc.Act(ctx, "s1", "d1")
		var sv *taskerr.ScopeViolation
		if !errors.As(taskerr.From(err), &sv) {
			t.Errorf("Act: %v, want ScopeViolation", err)
		}
	})
	t.Run("never sent: failed, not unknown", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "http://" + l.Addr().String() + "/mcp"
		l.Close()
		for name, server := range map[string]mcp.ServerConfig{
			"connection refused":  {Name: "down", URL: down, ActTools: []string{"*"}},
			"command not found":   {Name: "down", Command: []string{"/nonexistent/mcp-server"}, ActTools: []string{"*"}},
			"command exits early": {Name: "down", Command: []string{"/bin/false"}, ActTools: []string{"*"}},
		} {
			t.Run(name, func(t *testing.T) {
				svc, db, _ := mcpActor(t, server)
				acttest.Record(t, db, acttest.Decision("d1", "s1", mcpScope, mcpAction(t, "down", "add_label", map[string]any{})))
				_, err := svc.Act(ctx, "s1", "d1")
				var af *taskerr.ActionFailed
				if !errors.As(taskerr.From(err), &af) {
					t.Errorf("Act: %v, want ActionFailed", err)
				}
				if got := acttest.Status(t, db, "d1"); got != ora.StatusFailed {
					t.Errorf("status %s, want %s", got, ora.StatusFailed)
				}
			})
		}
	})
}

func TestMCPCallCheck(t *testing.T) {
	servers := []mcp.ServerConfig{
		{Name: "tracker", URL: "https://mcp.example.com/mcp", ActTools: []string{"add_label"}},
		{Name: "docs", URL: "https://docs.example.com/mcp", ActTools: []string{"*"}},
		{Name: "wiki", URL: "https://wiki.example.com/mcp"},
	}
	_, _, call := mcpActor(t, servers...)
	cases := []struct {
		name   string
		params string
		code   string // "" when allowed
	}{
		{"an allowed tool", `{"server":"tracker","tool":"add_label","arguments":{"number":1}}`, ""},
		{"every tool of a server", `{"server":"docs","tool":"anything"}`, ""},
		{"a tool not in act_tools", `{"server":"tracker","tool":"delete_repo","arguments":{}}`, ora.EFORBIDDEN},
		{"a server without act_tools", `{"server":"wiki","tool":"edit"}`, ora.EFORBIDDEN},
		{"a server not configured", `{"server":"other","tool":"x"}`, ora.EFORBIDDEN},
		{"no server", `{"tool":"x"}`, ora.EINVALID},
		{"no tool", `{"server":"tracker"}`, ora.EINVALID},
		{"arguments not an object", `{"server":"tracker","tool":"add_label","arguments":[1]}`, ora.EINVALID},
		{"arguments as JSON text (a model's)", `{"server":"tracker","tool":"add_label","arguments":"{\"number\":1}"}`, ""},
		{"empty arguments text", `{"server":"tracker","tool":"add_label","arguments":""}`, ""},
		{"arguments text not an object", `{"server":"tracker","tool":"add_label","arguments":"[1]"}`, ora.EINVALID},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := call.Check(json.RawMessage(c.params))
			if got := ora.ErrorCode(err); (c.code == "" && err != nil) || (c.code != "" && got != c.code) {
				t.Errorf("err %v, want code %q", err, c.code)
			}
		})
	}
	t.Run("describe", func(t *testing.T) {
		d := call.Describe()
		var schema struct {
			Properties struct {
				Server struct {
					Enum []string `json:"enum"`
				} `json:"server"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			t.Fatalf("parameters %s: %v", d.Parameters, err)
		}
		if _, err := bedrock.CheckStrict(d.Parameters); err != nil {
			t.Errorf("parameters %s are outside the strict subset: %v", d.Parameters, err)
		}
		if !call.Callable() {
			t.Error("Callable is false with servers that allow tools")
		}
		if strings.Join(schema.Properties.Server.Enum, ",") != "docs,tracker" || !d.SideEffect || len(d.Bounds) != 2 ||
			!strings.Contains(d.Bounds[0], "docs: every tool") || !strings.Contains(d.Bounds[1], "tracker: tools add_label") {
			t.Errorf("description %+v: want servers docs and tracker with their tools", d)
		}
	})
}

// TestMCPCallTypedArguments: described for a model, mcp.call offers each
// allowed tool the server lists as a branch of its own, server and tool
// fixed, arguments typed by the tool's input schema reduced to the strict
// subset; the tools it cannot type (a server allowing every tool, a
// configured tool the server does not list, the bounds spent) share a
// branch whose arguments are JSON text. Real parameters validate against it,
// broken ones do not, and the actor accepts what validates.
func TestMCPCallTypedArguments(t *testing.T) {
	_, url := mcptest.HTTP(t)
	servers := []mcp.ServerConfig{
		{Name: "docs", URL: url, ActTools: []string{"*"}},
		{Name: "tracker", URL: url, ActTools: []string{"add_label", "fail", "gone"}},
	}
	c, err := mcp.New(servers, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	call := act.NewMCPCall(c, reason.TypedMCPCall)
	d := call.Describe()
	// As the Converse adapter sends it: nested in the decision's schema,
	// reduced to the strict subset.
	wrapped, err := bedrock.StrictSchema(json.RawMessage(`{"type":"object","properties":{"parameters":` + string(d.Parameters) + `},"required":["parameters"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bedrock.CheckStrict(wrapped); err != nil {
		t.Fatalf("mcp.call's parameters are outside the strict subset: %v\n%s", err, d.Parameters)
	}
	var union struct {
		AnyOf []struct {
			Properties struct {
				Server    map[string]any  `json:"server"`
				Tool      map[string]any  `json:"tool"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"properties"`
		} `json:"anyOf"`
	}
	if err := json.Unmarshal(d.Parameters, &union); err != nil {
		t.Fatal(err)
	}
	var typed, text []string
	for _, b := range union.AnyOf {
		if tool, ok := b.Properties.Tool["const"].(string); ok {
			typed = append(typed, b.Properties.Server["const"].(string)+"/"+tool)
			continue
		}
		for _, s := range b.Properties.Server["enum"].([]any) {
			text = append(text, s.(string))
		}
	}
	slices.Sort(typed)
	if strings.Join(typed, ",") != "docs/add_label,docs/fail,tracker/add_label,tracker/fail" {
		t.Errorf("typed branches %v, want add_label and fail of each server (docs' read-only tools are the reasoner's)", typed)
	}
	if strings.Join(text, ",") != "docs,tracker" {
		t.Errorf("the JSON-text branch covers %v, want docs (every tool) and tracker (gone is not listed)", text)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(wrapped)))
	if err != nil {
		t.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("mcp.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := comp.Compile("mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, params string
		valid        bool
	}{
		{"typed arguments", `{"server":"tracker","tool":"add_label","arguments":{"number":7,"label":"bug"}}`, true},
		{"a tool without arguments", `{"server":"tracker","tool":"fail","arguments":{}}`, true},
		{"JSON text for every tool of docs", `{"server":"docs","tool":"anything","arguments":"{\"q\":1}"}`, true},
		{"a wrong argument type", `{"server":"tracker","tool":"add_label","arguments":{"number":"seven","label":"bug"}}`, false},
		{"an argument the tool does not declare", `{"server":"tracker","tool":"add_label","arguments":{"number":7,"label":"bug","force":true}}`, false},
		{"JSON text for a typed tool's server is allowed (gone)", `{"server":"tracker","tool":"gone","arguments":"{}"}`, true},
		{"a server not configured", `{"server":"wiki","tool":"edit","arguments":"{}"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"parameters":` + tc.params + `}`))
			if err := schema.Validate(v); (err == nil) != tc.valid {
				t.Errorf("validates: %v (%v), want %v", err == nil, err, tc.valid)
			}
			if tc.valid {
				if _, err := call.Check(json.RawMessage(tc.params)); err != nil {
					t.Errorf("the actor refuses what the schema allows: %v", err)
				}
			}
		})
	}
	t.Run("past the bounds, a tool's arguments are JSON text", func(t *testing.T) {
		heavy := act.NewMCPCall(c, func(o *act.MCPCallOptions) {
			o.Arguments = func(raw json.RawMessage) (act.ArgumentSchema, bool) {
				a, ok := reason.MCPArguments(raw)
				a.Optional = 5 // each tool "spends" 5 of the 8 optional properties
				return a, ok
			}
		})
		if n := strings.Count(string(heavy.Describe().Parameters), `"tool":{"type":"string","const":`); n != 1 {
			t.Errorf("%d typed branches, want 1 (the second tool is past the bound)", n)
		}
	})
	t.Run("without Arguments (the actor's), JSON text only", func(t *testing.T) {
		if p := string(act.NewMCPCall(c).Describe().Parameters); strings.Contains(p, "anyOf") || !strings.Contains(p, `"arguments":{"type":"string"`) {
			t.Errorf("parameters %s, want the one JSON-text branch", p)
		}
	})
}
