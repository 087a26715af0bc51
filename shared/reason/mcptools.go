package reason

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/ora"
)

// MCPTools returns the tools of the MCP servers c reaches as a Toolbox:
// each server's tools annotated read-only, and those its
// reasoner_write_tools names, with the ids "mcp.<server>.<tool>", the
// server's timeout and result bound, and input schemas made acceptable to
// Bedrock (ToolSchema).
func MCPTools(c *mcp.Client) Toolbox { return mcpToolbox{c} }

type mcpToolbox struct{ c *mcp.Client }

// MCPToolID is the id tools_allowed names an MCP tool by.
func MCPToolID(server, tool string) string { return "mcp." + server + "." + tool }

func (b mcpToolbox) Tools(ctx context.Context) ([]Tool, error) {
	ts, err := b.c.ReasonerTools(ctx)
	out := make([]Tool, 0, len(ts))
	for _, t := range ts {
		cfg, _ := b.c.Server(t.Server)
		schema, strict, ok := ToolSchema(t.InputSchema)
		if !ok {
			continue // not an object schema: Bedrock would refuse the request
		}
		server, name := t.Server, t.Name
		out = append(out, Tool{
			ID: MCPToolID(server, name), Server: server, Description: describe(t),
			Schema: schema, Strict: strict, Timeout: cfg.Timeout(), MaxResultBytes: cfg.ResultLimit(),
			Call: func(ctx context.Context, in json.RawMessage) (json.RawMessage, bool, error) {
				res, err := b.c.Call(ctx, server, name, in, nil)
				if err != nil {
					return nil, false, err
				}
				return res.JSON, res.IsError, nil
			},
		})
	}
	return out, err
}

func describe(t mcp.Tool) string {
	d := t.Description
	if d == "" {
		d = t.Title
	}
	return fmt.Sprintf("[MCP server %s] %s", t.Server, d)
}

// ToolSchema turns a tool's input schema into one Bedrock accepts: a JSON
// object schema ("type":"object" added when missing), without "$schema" and
// "$id". strict reports whether it stays inside the subset Bedrock's strict
// tool use enforces (bedrock.CheckStrict); a tool whose schema is not is
// offered without strict, and its input is checked by the server. ok is
// false for a schema that is not an object schema at all.
//
// This is the one place MCP schemas are converted.
func ToolSchema(raw json.RawMessage) (schema json.RawMessage, strict, ok bool) {
	var m map[string]any
	if len(raw) == 0 || string(raw) == "null" {
		m = map[string]any{}
	} else if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, false, false
	}
	delete(m, "$schema")
	delete(m, "$id")
	switch m["type"] {
	case nil:
		m["type"] = "object"
	case "object":
	default:
		return nil, false, false
	}
	if _, has := m["properties"]; !has {
		m["properties"] = map[string]any{}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, false, false
	}
	_, err = bedrock.CheckStrict(b)
	return b, err == nil, true
}

var wireUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// toolWireName is the name Bedrock gets for tool id: the id with every
// character outside [a-zA-Z0-9_-] as "_", at most 64 characters; an id
// whose name is too long or already taken gets a digest suffix.
func toolWireName(id string, taken map[string]Tool) string {
	w := wireUnsafe.ReplaceAllString(id, "_")
	if _, dup := taken[w]; len(w) <= 64 && !dup {
		return w
	}
	return w[:min(len(w), 51)] + "_" + ora.Digest([]byte(id))[:12]
}

// Offer lays onto o what a reasoner offers a model besides its programs:
// catalogue (the action types this runtime runs, with their bounds) and,
// with MCP servers (nil: none), their tools (MCPTools) and mcp.call in the
// catalogue when a server lets actions call a tool. The reason stage in both
// homes and the promotion gate's replay build their reasoner with it, so
// the gate sends the model the request production sends (the same tool
// configuration, hence the same request digest); the gate's client answers
// from the tool lists recorded with the golden set (mcp.Options.Listed).
func Offer(o *Options, catalogue []act.Description, servers *mcp.Client) {
	o.Catalogue = catalogue
	if servers == nil {
		return
	}
	o.Tools = MCPTools(servers)
	if call := act.NewMCPCall(servers, TypedMCPCall); call.Callable() {
		o.Catalogue = append(append([]act.Description(nil), catalogue...), call.Describe())
	}
}
