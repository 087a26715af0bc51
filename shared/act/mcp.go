package act

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/ora"
)

// MCPParams are the parameters of the mcp.call action: a tool of a
// configured MCP server and its arguments: a JSON object, or a JSON string
// holding one (what a model fills in under strict tool use, whose schemas
// allow no free-form object).
type MCPParams struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// MCPCall calls a tool of an MCP server: only servers in `mcp_servers`
// and tools in their act_tools, with the action's idempotency key in the
// call's _meta (mcp.MetaIdempotencyKey).
type MCPCall struct {
	client *mcp.Client
	now    func() time.Time
	opts   MCPCallOptions
}

// ArgumentSchema is a tool's input schema as a model is offered it for
// mcp.call's arguments, with what it adds to a strict request's limits.
type ArgumentSchema struct {
	Schema json.RawMessage
	// Optional and Unions count the schema's optional properties and its
	// union-typed schemas (strict tool use bounds both per request).
	Optional, Unions int
}

// MCPCallOptions tune how mcp.call describes itself to a model.
type MCPCallOptions struct {
	// Arguments turns a tool's input schema into the schema of its
	// arguments in the model's decision (reduced to what the model's strict
	// tool use accepts); ok false leaves that tool's arguments as JSON text.
	// Nil (the actor's case: it runs calls, it describes none): every
	// tool's arguments are JSON text.
	Arguments func(inputSchema json.RawMessage) (s ArgumentSchema, ok bool)
	// MaxOptional and MaxUnions bound what the typed tools add in all
	// (default MCPMaxOptional, MCPMaxUnions); a tool past either is offered
	// with JSON-text arguments.
	MaxOptional, MaxUnions int
}

// The default bounds on what typed mcp.call tools add to a strict request
// (Bedrock allows 24 optional properties and 16 union-typed schemas in a
// request's strict tools in all; the decision's own schema and the
// reasoner's tools need the rest).
const (
	MCPMaxOptional = 8
	MCPMaxUnions   = 4
)

// NewMCPCall returns the mcp.call action over client.
func NewMCPCall(client *mcp.Client, opts ...func(*MCPCallOptions)) *MCPCall {
	o := MCPCallOptions{MaxOptional: MCPMaxOptional, MaxUnions: MCPMaxUnions}
	for _, f := range opts {
		f(&o)
	}
	return &MCPCall{client: client, now: time.Now, opts: o}
}

func (m *MCPCall) parse(params json.RawMessage) (MCPParams, error) {
	var p MCPParams
	if err := decodeParams(TypeMCPCall, params, &p); err != nil {
		return p, err
	}
	if p.Server == "" {
		return p, ora.Invalid(TypeMCPCall+".parameters.server", "required")
	}
	if p.Tool == "" {
		return p, ora.Invalid(TypeMCPCall+".parameters.tool", "required")
	}
	var text string
	if json.Unmarshal(p.Arguments, &text) == nil {
		p.Arguments = json.RawMessage(text)
		if strings.TrimSpace(text) == "" {
			p.Arguments = nil
		}
	}
	if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(p.Arguments, &obj); err != nil || obj == nil {
			return p, ora.Invalid(TypeMCPCall+".parameters.arguments", "must be a JSON object (or a string holding one)")
		}
	}
	cfg, ok := m.client.Server(p.Server)
	if !ok {
		return p, ora.Errorf(ora.EFORBIDDEN, "mcp.call: server %q is not in mcp_servers", p.Server)
	}
	if !cfg.ActAllows(p.Tool) {
		return p, ora.Errorf(ora.EFORBIDDEN, "mcp.call: tool %q is not in server %s's act_tools %v", p.Tool, p.Server, cfg.ActTools)
	}
	return p, nil
}

// mcpTarget is the target a scope's forbidden_paths see: "mcp://server/tool".
func mcpTarget(p MCPParams) string { return "mcp://" + p.Server + "/" + p.Tool }

// Check validates the parameters against the configured servers and
// tools; the target is "mcp://<server>/<tool>". Errors: EINVALID,
// EFORBIDDEN.
func (m *MCPCall) Check(params json.RawMessage) ([]string, error) {
	p, err := m.parse(params)
	if err != nil {
		return nil, err
	}
	return []string{mcpTarget(p)}, nil
}

// Timeout is the longest a call takes: the largest server timeout.
func (m *MCPCall) Timeout() time.Duration {
	var t time.Duration
	for _, s := range m.client.Servers() {
		t = max(t, s.Timeout())
	}
	return t
}

// Run calls the tool. Its result (bounded) and the digest of the whole
// result are the receipt's Output and OutputDigest; Digest is the digest
// of the arguments sent. A tool that answers isError has failed; a call
// that never reached the server has failed; one that may have reached it
// without an answer coming back is an *UnknownOutcomeError. Errors:
// EINVALID, EFORBIDDEN, a failure of the call.
func (m *MCPCall) Run(ctx context.Context, params json.RawMessage) (Receipt, error) {
	p, err := m.parse(params)
	if err != nil {
		return Receipt{}, err
	}
	args := p.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var meta map[string]any
	if inv, ok := InvocationFrom(ctx); ok {
		meta = map[string]any{mcp.MetaIdempotencyKey: inv.Key}
	}
	rcpt := Receipt{Type: TypeMCPCall, Target: mcpTarget(p), Digest: ora.Digest(args)}
	res, err := m.client.Call(ctx, p.Server, p.Tool, args, meta)
	rcpt.At = m.now().UTC()
	if err != nil {
		err = fmt.Errorf("mcp.call: %w", err) // the error names the server and tool
		if mcp.MayHaveRun(err) {
			return rcpt, &UnknownOutcomeError{Err: err}
		}
		return rcpt, err
	}
	rcpt.Output, rcpt.OutputDigest = string(res.JSON), res.Digest
	if res.IsError {
		return rcpt, fmt.Errorf("mcp.call: %s/%s reported an error: %s", p.Server, p.Tool, head(res.JSON, 300))
	}
	return rcpt, nil
}

func head(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}

// Callable reports whether any server allows mcp.call a tool (act_tools);
// without one, mcp.call stays out of the catalogue a model is shown.
func (m *MCPCall) Callable() bool {
	for _, s := range m.client.Servers() {
		if len(s.ActTools) > 0 {
			return true
		}
	}
	return false
}

// Required returns mcp.call's required parameters: server and tool.
func (m *MCPCall) Required() []string { return []string{"server", "tool"} }

// Describe describes mcp.call: its parameters, and the servers and tools
// it may call. With MCPCallOptions.Arguments, it lists each server's tools
// (each server within its timeout; the client caches the list) and
// offers each allowed tool as a branch of its own, server and tool fixed,
// arguments typed by the tool's input schema (a read-only tool only when
// act_tools names it: under "*" it is the reasoner's); the tools it cannot type (the
// list failed, the schema is outside the strict subset, the bounds are
// spent, or a server allows every tool, including ones it does not list
// yet) share one branch whose arguments are JSON text.
func (m *MCPCall) Describe() Description {
	var bounds, textServers []string
	var typed []string
	optional, unions := 0, 0
	for _, s := range m.client.Servers() {
		if len(s.ActTools) == 0 {
			continue
		}
		tools := "tools " + strings.Join(s.ActTools, ", ")
		if s.ActAllows("*") {
			tools = "every tool"
		}
		bounds = append(bounds, fmt.Sprintf("server %s: %s (timeout %v, results kept up to %d bytes)", s.Name, tools, s.Timeout(), s.ResultLimit()))
		untyped := m.opts.Arguments == nil || s.ActAllows("*")
		if m.opts.Arguments != nil {
			listed, err := m.listTools(s)
			untyped = untyped || err != nil
			for _, t := range listed {
				if !s.ActAllows(t.Name) || (t.ReadOnly && !slices.Contains(s.ActTools, t.Name)) {
					continue // a read-only tool is the reasoner's, unless act_tools names it
				}
				a, ok := m.opts.Arguments(t.InputSchema)
				if !ok || optional+a.Optional > m.opts.MaxOptional || unions+a.Unions > m.opts.MaxUnions {
					untyped = true
					continue
				}
				optional, unions = optional+a.Optional, unions+a.Unions
				typed = append(typed, toolBranch(s.Name, t, a.Schema))
			}
			for _, name := range s.ActTools {
				if name != "*" && !slices.ContainsFunc(listed, func(t mcp.Tool) bool { return t.Name == name }) {
					untyped = true // configured, not listed (yet)
				}
			}
		}
		if untyped {
			textServers = append(textServers, s.Name)
		}
	}
	if len(bounds) == 0 {
		bounds = []string{"no server allows a tool: every call is refused"}
	}
	var params string
	switch {
	case len(typed) == 0:
		params = textBranch(textServers)
	default:
		if len(textServers) > 0 {
			typed = append(typed, textBranch(textServers))
		}
		params = `{"anyOf":[` + strings.Join(typed, ",") + `]}`
	}
	return Description{
		Type:       TypeMCPCall,
		Summary:    "Call a tool of a configured MCP server (a tool that changes something: read-only tools are for the reasoner). The call carries the action's idempotency key in _meta.",
		Parameters: json.RawMessage(params),
		Bounds:     bounds,
		SideEffect: true,
	}
}

// listTools lists server s's tools within its timeout.
func (m *MCPCall) listTools(s mcp.ServerConfig) ([]mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout())
	defer cancel()
	return m.client.Tools(ctx, s.Name)
}

// toolBranch is mcp.call's parameters for one tool: server and tool fixed,
// arguments typed by args.
func toolBranch(server string, t mcp.Tool, args json.RawMessage) string {
	srv, _ := json.Marshal(server)
	name, _ := json.Marshal(t.Name)
	desc, _ := json.Marshal(strings.TrimSpace(server + "/" + t.Name + ": " + t.Description))
	return `{"type":"object","description":` + string(desc) + `,"properties":{` +
		`"server":{"type":"string","const":` + string(srv) + `},` +
		`"tool":{"type":"string","const":` + string(name) + `},` +
		`"arguments":` + string(args) + `},` +
		`"required":["server","tool","arguments"],"additionalProperties":false}`
}

// textBranch is mcp.call's parameters with the arguments as JSON text, for
// the tools of servers.
func textBranch(servers []string) string {
	enum, _ := json.Marshal(servers)
	if servers == nil {
		enum = []byte("[]")
	}
	return `{"type":"object","properties":{` +
		`"server":{"type":"string","enum":` + string(enum) + `,"description":"the MCP server's name"},` +
		`"tool":{"type":"string","description":"the tool's name, one the server allows"},` +
		`"arguments":{"type":"string","description":"the tool's arguments: a JSON object as text, e.g. {\"number\":7} ({} for none)"}},` +
		`"required":["server","tool","arguments"],"additionalProperties":false}`
}
