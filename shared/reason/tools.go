package reason

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/ora"
)

// LedgerReader is the part of ora.Ledger the read-only tools call.
type LedgerReader interface {
	// Entries returns a signal's entries. Errors: ETRANSIENT.
	Entries(ctx context.Context, signalID string) ([]ora.Entry, error)
	// OpenCommitments lists open commitments, at most limit. Errors: ETRANSIENT.
	OpenCommitments(ctx context.Context, limit int) ([]ora.Commitment, error)
}

// The read-only tools a model may call when its envelope's tools_allowed
// names them. On the wire a tool's name is its id with dots as underscores
// (Bedrock allows [a-zA-Z0-9_-] only).
const (
	ToolLedgerEntries   = "oa.ledger.entries"
	ToolOpenCommitments = "oa.commitments.open"
	ToolPacketFacts     = "oa.packet.facts"
)

// MaxToolTurns bounds the tool rounds of one stage; the call after the last
// round forces record_observation.
const MaxToolTurns = 3

// maxToolResultBytes bounds one tool result sent back to the model.
const maxToolResultBytes = 16 * 1024

type toolDef struct {
	description string
	schema      string
	run         func(ctx context.Context, r *run, in json.RawMessage) (any, error)
}

var toolDefs = map[string]toolDef{
	ToolLedgerEntries: {
		description: "Read the ledger entries of a wave (a signal id): kind, qualifier, digest, time and body.",
		schema:      `{"type":"object","additionalProperties":false,"required":["signal_id"],"properties":{"signal_id":{"type":"string","minLength":1}}}`,
		run: func(ctx context.Context, r *run, in json.RawMessage) (any, error) {
			var p struct {
				SignalID string `json:"signal_id"`
			}
			if err := json.Unmarshal(in, &p); err != nil {
				return nil, err
			}
			es, err := r.b.opts.Ledger.Entries(ctx, p.SignalID)
			if err != nil {
				return nil, err
			}
			type entry struct {
				Kind      ora.EntryKind   `json:"kind"`
				Qualifier string          `json:"qualifier,omitempty"`
				Digest    string          `json:"digest"`
				CreatedAt string          `json:"created_at"`
				Body      json.RawMessage `json:"body"`
			}
			out := make([]entry, 0, len(es))
			for _, e := range es {
				out = append(out, entry{e.Kind, e.Qualifier, e.Digest, e.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), e.Body})
			}
			return map[string]any{"signal_id": p.SignalID, "entries": out}, nil
		},
	},
	ToolOpenCommitments: {
		description: "List the open commitments (most recent first), at most limit.",
		schema:      `{"type":"object","additionalProperties":false,"required":["limit"],"properties":{"limit":{"type":"integer","minimum":1,"maximum":50}}}`,
		run: func(ctx context.Context, r *run, in json.RawMessage) (any, error) {
			var p struct {
				Limit int `json:"limit"`
			}
			if err := json.Unmarshal(in, &p); err != nil {
				return nil, err
			}
			cs, err := r.b.opts.Ledger.OpenCommitments(ctx, p.Limit)
			if err != nil {
				return nil, err
			}
			return map[string]any{"commitments": cs}, nil
		},
	},
	ToolPacketFacts: {
		description: "List the facts of the orientation packet compiled for this signal, by band.",
		schema:      `{"type":"object","additionalProperties":false,"properties":{}}`,
		run: func(_ context.Context, r *run, _ json.RawMessage) (any, error) {
			if r.in.Packet == nil {
				return map[string]any{"facts": []any{}}, nil
			}
			type fact struct {
				Band       ora.Band        `json:"band"`
				ID         string          `json:"fact_id"`
				SourceType string          `json:"source_type"`
				Normalized json.RawMessage `json:"normalized"`
			}
			var out []fact
			for _, b := range r.in.Packet.Bands {
				for _, f := range b.Facts {
					out = append(out, fact{b.Band, f.ID, f.SourceType, f.Normalized})
				}
			}
			return map[string]any{"packet_id": r.in.Packet.ID, "facts": out}, nil
		},
	},
}

// wireName is a tool id as Bedrock accepts it.
func wireName(id string) string { return strings.ReplaceAll(id, ".", "_") }

// offeredTools returns the read-only tools this run offers the model: those
// in the caller's tools_allowed that ora implements, when a ledger is set.
func (r *run) offeredTools() map[string]string {
	out := map[string]string{}
	if r.b.opts.Ledger == nil {
		return out
	}
	for _, id := range r.orig.ToolsAllowed {
		if _, ok := toolDefs[id]; ok {
			out[wireName(id)] = id
		}
	}
	return out
}

// toolSpecs returns the specs of the offered tools, sorted by name.
func toolSpecs(offered map[string]string) []bedrock.Tool {
	var out []bedrock.Tool
	for wire, id := range offered {
		d := toolDefs[id]
		out = append(out, bedrock.Tool{Name: wire, Description: d.description, Schema: json.RawMessage(d.schema), Strict: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// runTool runs one allowed tool call and records it with its result's
// digest. A tool that fails, or input that fails the tool's schema, is
// answered with an error result; ETRANSIENT from the ledger is returned.
func (r *run) runTool(ctx context.Context, stage int, id string, tu bedrock.ToolUse) (bedrock.ToolResult, error) {
	d := toolDefs[id]
	res := bedrock.ToolResult{ToolUseID: tu.ID}
	var out any
	err := validateJSON(d.schema, tu.Input)
	if err == nil {
		out, err = d.run(ctx, r, tu.Input)
		if ora.ErrorCode(err) == ora.ETRANSIENT {
			return res, fmt.Errorf("reason: stage %d: tool %s: %w", stage, id, err)
		}
	}
	if err != nil {
		out, res.Error = map[string]string{"error": err.Error()}, true
	}
	b, merr := canonicalJSON(out)
	if merr != nil {
		return res, ora.Errorf(ora.EINTERNAL, "reason: tool %s: encode result: %v", id, merr)
	}
	if len(b) > maxToolResultBytes {
		b, _ = canonicalJSON(map[string]any{"truncated": true, "bytes": len(b), "head": string(b[:maxToolResultBytes])})
	}
	res.JSON = b
	r.out.Result.ToolCalls = append(r.out.Result.ToolCalls, ora.ToolCall{Tool: id, Input: tu.Input, Allowed: true, ResultDigest: ora.Digest(b), Error: res.Error})
	return res, nil
}

// canonicalJSON encodes v with sorted object keys, as the result is sent,
// so that the recorded digest is the digest of what the model got.
func canonicalJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return nil, err
	}
	return json.Marshal(x)
}
