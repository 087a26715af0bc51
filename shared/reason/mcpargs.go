package reason

import (
	"encoding/json"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
)

// MCPArguments is act.MCPCallOptions.Arguments for a model under strict
// tool use: a tool's input schema made an object schema (ToolSchema), then
// reduced to the strict subset (bedrock.StrictSchema: keywords outside it
// left out, additionalProperties false on every object), with its optional
// properties and unions counted; ok is false when even the reduced schema
// is outside the subset, or is not an object schema.
func MCPArguments(inputSchema json.RawMessage) (act.ArgumentSchema, bool) {
	s, _, ok := ToolSchema(inputSchema)
	if !ok {
		return act.ArgumentSchema{}, false
	}
	strict, err := bedrock.StrictSchema(s)
	if err != nil {
		return act.ArgumentSchema{}, false
	}
	st, err := bedrock.CheckStrict(strict)
	if err != nil {
		return act.ArgumentSchema{}, false
	}
	return act.ArgumentSchema{Schema: strict, Optional: st.Optional, Unions: st.Unions}, true
}

// TypedMCPCall is the option that types mcp.call's arguments by each tool's
// input schema (MCPArguments), for the catalogue a model is shown.
func TypedMCPCall(o *act.MCPCallOptions) { o.Arguments = MCPArguments }
