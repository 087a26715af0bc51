package reason

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

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

// Tool is a tool the reasoner may offer a model. ora's read-only ledger
// tools and the MCP servers' tools (Options.Tools) come through it alike;
// the envelope's tools_allowed decides which are offered.
type Tool struct {
	// ID is the name tools_allowed uses ("oa.ledger.entries",
	// "mcp.<server>.<tool>").
	ID string
	// Server is the MCP server the tool belongs to, "" for ora's own.
	Server      string
	Description string
	// Schema is the input's JSON Schema (a JSON object); Strict says it is
	// in the subset Bedrock's strict tool use accepts.
	Schema json.RawMessage
	Strict bool
	// Timeout bounds one call; 0 leaves it to Call.
	Timeout time.Duration
	// MaxResultBytes bounds the result sent back to the model; 0 means
	// 16 KiB.
	MaxResultBytes int
	// Call runs the tool on the model's input and returns its result
	// (JSON) and whether that result reports a failure. An error is a call
	// that got no result; ETRANSIENT from ora's own tools ends the run
	// (the step is retried), any other error goes back to the model.
	Call func(ctx context.Context, in json.RawMessage) (result json.RawMessage, failed bool, err error)
}

// Toolbox lists tools beyond ora's own that a run may offer (the MCP
// servers' tools).
type Toolbox interface {
	// Tools returns the tools the reasoner may call. A partial list comes
	// with an error naming what could not be listed (the run goes on with
	// the tools it got).
	Tools(ctx context.Context) ([]Tool, error)
}

// ledgerTool is ora's own tool id as a Tool of run r.
func (r *run) ledgerTool(id string) Tool {
	d := toolDefs[id]
	return Tool{
		ID: id, Description: d.description, Schema: json.RawMessage(d.schema), Strict: true,
		Call: func(ctx context.Context, in json.RawMessage) (json.RawMessage, bool, error) {
			if err := validateJSON(d.schema, in); err != nil {
				return nil, false, err
			}
			out, err := d.run(ctx, r, in)
			if err != nil {
				return nil, false, err
			}
			b, err := canonicalJSON(out)
			if err != nil {
				return nil, false, ora.Errorf(ora.EINTERNAL, "reason: tool %s: encode result: %v", id, err)
			}
			return b, false, nil
		},
	}
}

// wireName is a tool id as Bedrock accepts it.
func wireName(id string) string { return strings.ReplaceAll(id, ".", "_") }

// toolAllowed reports whether tools_allowed names id, exactly or with a
// trailing ".*" over its prefix ("mcp.github.*").
func toolAllowed(id string, allowed []string) bool {
	for _, a := range allowed {
		if a == id || (strings.HasSuffix(a, ".*") && strings.HasPrefix(id, strings.TrimSuffix(a, "*"))) {
			return true
		}
	}
	return false
}

// offeredTools returns the tools this run offers the model, by wire name:
// ora's read-only tools in the caller's tools_allowed (when a ledger is
// set) and the toolbox's tools it names. The list is made once per run; a
// toolbox that cannot list every server is a warning.
func (r *run) offeredTools(ctx context.Context) map[string]Tool {
	if r.offered != nil {
		return r.offered
	}
	r.offered = map[string]Tool{}
	if r.b.opts.Ledger != nil {
		for _, id := range r.orig.ToolsAllowed {
			if _, ok := toolDefs[id]; ok {
				r.offered[wireName(id)] = r.ledgerTool(id)
			}
		}
	}
	if r.b.opts.Tools != nil && len(r.orig.ToolsAllowed) > 0 {
		ts, err := r.b.opts.Tools.Tools(ctx)
		if err != nil {
			r.diag(DiagToolsUnavailable, "warning", "tools: %v", err)
		}
		for _, t := range ts {
			if !toolAllowed(t.ID, r.orig.ToolsAllowed) {
				continue
			}
			w := toolWireName(t.ID, r.offered)
			r.offered[w] = t
		}
	}
	return r.offered
}

// toolSpecs returns the specs of the offered tools, sorted by name.
func toolSpecs(offered map[string]Tool) []bedrock.Tool {
	var out []bedrock.Tool
	for wire, t := range offered {
		out = append(out, bedrock.Tool{Name: wire, Description: t.Description, Schema: t.Schema, Strict: t.Strict})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// runTool runs one offered tool call and records it: the tool, its server,
// the input and its digest, the digest of the result sent back, whether it
// failed and why, and (MCP tools) how long it took. A tool that fails, or
// input that fails the tool's schema, is answered with an error result;
// ETRANSIENT from ora's own tools is returned.
func (r *run) runTool(ctx context.Context, stage int, t Tool, tu bedrock.ToolUse) (bedrock.ToolResult, error) {
	res := bedrock.ToolResult{ToolUseID: tu.ID}
	timeout, err := toolTimeout(ctx, t.Timeout)
	cctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	start := r.b.opts.Now()
	var out []byte
	var failed bool
	if err == nil {
		out, failed, err = t.Call(cctx, tu.Input)
	}
	took := r.b.opts.Now().Sub(start)
	call := ora.ToolCall{Tool: t.ID, Server: t.Server, Input: tu.Input, Allowed: true}
	if in, cerr := canonicalJSON(json.RawMessage(orEmpty(tu.Input))); cerr == nil {
		call.InputDigest = ora.Digest(in)
	}
	if err != nil {
		if t.Server == "" && ora.ErrorCode(err) == ora.ETRANSIENT {
			return res, fmt.Errorf("reason: stage %d: tool %s: %w", stage, t.ID, err)
		}
		if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("timed out after %v: %w", timeout, err)
		}
		out, _ = canonicalJSON(map[string]string{"error": err.Error()})
		failed, call.Message = true, err.Error()
	}
	limit := t.MaxResultBytes
	if limit <= 0 {
		limit = maxToolResultBytes
	}
	if len(out) > limit {
		out, _ = canonicalJSON(map[string]any{"truncated": true, "bytes": len(out), "head": string(out[:limit])})
	}
	res.JSON, res.Error = out, failed
	call.ResultDigest, call.Error = ora.Digest(out), failed
	if t.Server != "" {
		call.DurationMS = took.Milliseconds()
	}
	r.out.Result.ToolCalls = append(r.out.Result.ToolCalls, call)
	return res, nil
}

// ToolReserve is the time a tool call leaves before the stage's deadline (a
// Lambda function's timeout): enough for the model's next answer and the
// decision's record, so that tools cannot run a stage into its timeout.
const ToolReserve = 20 * time.Second

// toolTimeout bounds a tool call by its own timeout and by the stage's
// deadline less ToolReserve; 0 means unbounded (neither is set). Errors:
// when less than a second would be left, a tool error the model is
// answered with (the call is not made).
func toolTimeout(ctx context.Context, own time.Duration) (time.Duration, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return own, nil
	}
	left := time.Until(deadline) - ToolReserve
	if left < time.Second {
		return 0, fmt.Errorf("not called: %v left before the stage's deadline, which keeps %v for the answer", time.Until(deadline).Round(time.Second), ToolReserve)
	}
	if own > 0 && own < left {
		return own, nil
	}
	return left, nil
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
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
