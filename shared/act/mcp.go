package act

import (
	"context"
	"encoding/json"
	"fmt"
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
}

// NewMCPCall returns the mcp.call action over client.
func NewMCPCall(client *mcp.Client) *MCPCall { return &MCPCall{client: client, now: time.Now} }

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
// it may call.
func (m *MCPCall) Describe() Description {
	var servers, bounds []string
	for _, s := range m.client.Servers() {
		if len(s.ActTools) == 0 {
			continue
		}
		servers = append(servers, s.Name)
		tools := "tools " + strings.Join(s.ActTools, ", ")
		if s.ActAllows("*") {
			tools = "every tool"
		}
		bounds = append(bounds, fmt.Sprintf("server %s: %s (timeout %v, results kept up to %d bytes)", s.Name, tools, s.Timeout(), s.ResultLimit()))
	}
	if len(bounds) == 0 {
		bounds = []string{"no server allows a tool: every call is refused"}
	}
	enum, _ := json.Marshal(servers)
	if servers == nil {
		enum = []byte("[]")
	}
	return Description{
		Type:    TypeMCPCall,
		Summary: "Call a tool of a configured MCP server (a tool that changes something: read-only tools are for the reasoner). The call carries the action's idempotency key in _meta.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"server":{"type":"string","enum":` + string(enum) + `,"description":"the MCP server's name"},` +
			`"tool":{"type":"string","description":"the tool's name, one the server allows"},` +
			`"arguments":{"type":"string","description":"the tool's arguments: a JSON object as text, e.g. {\"number\":7} ({} for none)"}},` +
			`"required":["server","tool","arguments"],"additionalProperties":false}`),
		Bounds:     bounds,
		SideEffect: true,
	}
}
