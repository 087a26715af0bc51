package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/ora-runtime/ora/shared/ora"
)

// A decision the model made with a tool (an MCP server's) replays only if
// the tool answers as it did: the Recorder keeps each tool result of a
// recorded decision beside its Converse recordings, in the same store and
// format, under ToolDigest; the Replayer answers the same call from it and
// refuses a call nobody recorded. Neither the model's requests nor the
// tools' results reach the network in a replay.

// ToolDigest returns the digest a tool call is recorded under: the sha256,
// in hex, of its canonical request {"input":...,"server":...,"tool":...},
// the input (a JSON object; empty means {}) with its keys sorted and no
// insignificant space, numbers keeping their text. Errors: EINVALID (the
// input is not a JSON object).
func ToolDigest(server, tool string, input json.RawMessage) (string, []byte, error) {
	var in map[string]any
	if len(bytes.TrimSpace(input)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(input))
		dec.UseNumber()
		if err := dec.Decode(&in); err != nil || in == nil {
			return "", nil, ora.Invalid("tool.input", "the input of %s/%s is not a JSON object", server, tool)
		}
	}
	if in == nil {
		in = map[string]any{}
	}
	canon, err := json.Marshal(map[string]any{"input": in, "server": server, "tool": tool})
	if err != nil {
		return "", nil, ora.Invalid("tool.input", "the input of %s/%s does not encode: %v", server, tool, err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), canon, nil
}

// ToolCaller calls a tool for real and returns its result (JSON).
type ToolCaller func(ctx context.Context) (json.RawMessage, error)

// MissingToolResult is a replayed tool call nobody recorded.
type MissingToolResult struct {
	Digest       string
	Server, Tool string
}

// Error names the tool, the digest and how to record it.
func (e *MissingToolResult) Error() string {
	return fmt.Sprintf("no recorded result for tool %s/%s (call digest %s): record it with `%s`", e.Server, e.Tool, e.Digest, RecordCommand)
}

// Tool answers a tool call from the recordings; call is never made.
// Errors: *MissingToolResult, ETRANSIENT.
func (p *Replayer) Tool(ctx context.Context, server, tool string, input json.RawMessage, _ ToolCaller) (json.RawMessage, error) {
	digest, _, err := ToolDigest(server, tool, input)
	if err != nil {
		return nil, err
	}
	rec, err := p.Recordings.Recording(ctx, digest)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		p.mu.Lock()
		p.missed = append(p.missed, digest)
		p.mu.Unlock()
		return nil, &MissingToolResult{Digest: digest, Server: server, Tool: tool}
	}
	if err != nil {
		return nil, fmt.Errorf("bedrock: tool result %s: %w", digest, err)
	}
	return compact(rec.Response), nil
}

// compact is a recorded result as the tool gave it: a store may keep it
// indented.
func compact(b json.RawMessage) json.RawMessage {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// Tool calls the tool (call) and keeps its result under ToolDigest, with
// the guards of the Converse calls (Secrets, MaxBytes, KeepOnce: a call
// already recorded is answered from Store, without calling). A result the
// guards or the store refuse is returned with a *NotRecorded: the answer
// is good, only its recording is missing. Errors: call's (nothing kept),
// *NotRecorded, EINVALID (input).
func (r *Recorder) Tool(ctx context.Context, server, tool string, input json.RawMessage, call ToolCaller) (json.RawMessage, error) {
	digest, canon, err := ToolDigest(server, tool, input)
	if err != nil {
		return nil, err
	}
	if r.KeepOnce {
		if rec, err := r.Store.Recording(ctx, digest); err == nil {
			return compact(rec.Response), nil
		} else if ora.ErrorCode(err) != ora.ENOTFOUND {
			return nil, fmt.Errorf("bedrock: tool result %s: %w", digest, err)
		}
	}
	if call == nil {
		return nil, ora.Errorf(ora.EINVALID, "bedrock: tool %s/%s: no server to call while recording", server, tool)
	}
	out, err := call(ctx)
	if err != nil {
		return nil, err
	}
	if !json.Valid(out) {
		return nil, ora.Errorf(ora.EINTERNAL, "bedrock: the result of %s/%s is not JSON: not recorded", server, tool)
	}
	return out, r.keep(ctx, Recording{Digest: digest, Tool: server + "/" + tool, Request: canon, Response: out})
}
