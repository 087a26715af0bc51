package reason_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/sqlite"
)

func toolCall(id, name, input string) bedrocktest.Reply {
	return bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{{ToolUseID: id, Name: name, Input: json.RawMessage(input)}}}
}

// TestToolLoop runs the read-only tools over a real (SQLite) ledger: an
// allowed tool runs and its result goes back to the model as a toolResult
// block; a tool outside tools_allowed is BLOCKED and never runs; the rounds
// are bounded.
func TestToolLoop(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ora.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sig := signal("sig-tools")
	e, err := ora.NewEntry(sig.ID, ora.KindSignalReceived, "", sig)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := db.Append(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	runWith := func(t *testing.T, cfg reason.Config, allowed []string, replies ...bedrocktest.Reply) (reason.Outcome, *bedrocktest.Server) {
		t.Helper()
		srv := bedrocktest.New(t, replies...)
		b, err := reason.NewBridge(bedrock.New(srv.Client(1)), cfg, func(o *reason.Options) {
			o.Ledger, o.Now = db, func() time.Time { return now }
		})
		if err != nil {
			t.Fatal(err)
		}
		env := envelope(ora.ProgramSafeOPSDecision)
		env.ToolsAllowed = allowed
		out, err := b.Run(ctx, env, reason.Input{Signal: &sig})
		if err != nil {
			t.Fatal(err)
		}
		return out, srv
	}
	run := func(t *testing.T, allowed []string, replies ...bedrocktest.Reply) (reason.Outcome, *bedrocktest.Server) {
		t.Helper()
		return runWith(t, testConfig(), allowed, replies...)
	}
	all := []string{reason.ToolLedgerEntries, reason.ToolOpenCommitments, reason.ToolPacketFacts}

	t.Run("an allowed tool runs and its result goes back", func(t *testing.T) {
		out, srv := run(t, all, toolCall("tu-1", "oa_ledger_entries", `{"signal_id":"sig-tools"}`), stage(0.97, 3, "read the ledger", safeOPS))
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		if reqs[0].Tool("oa_ledger_entries") == nil || reqs[0].Tool("oa_commitments_open") == nil || reqs[0].Tool("oa_packet_facts") == nil || reqs[0].ForcedTool() != "" {
			t.Errorf("the first call must offer the tools with toolChoice any")
		}
		res := reqs[1].ToolResults()
		if len(res) != 1 || res[0].ToolUseID != "tu-1" || !strings.Contains(string(res[0].Content[0].JSON), stored.Digest) {
			t.Fatalf("tool results sent back = %+v, want the wave's entries", res)
		}
		if out.Result.Status != ora.ReasoningOK || len(out.Result.ToolCalls) != 1 {
			t.Fatalf("status %s, tool calls %+v", out.Result.Status, out.Result.ToolCalls)
		}
		c := out.Result.ToolCalls[0]
		if c.Tool != reason.ToolLedgerEntries || !c.Allowed || c.ResultDigest != ora.Digest(canonical(t, res[0].Content[0].JSON)) {
			t.Errorf("recorded call %+v: want the tool with the digest of the result sent", c)
		}
	})
	t.Run("a tool outside tools_allowed is blocked and never runs", func(t *testing.T) {
		// A strict model cannot call a tool it was not offered.
		out, srv := runWith(t, looseConfig(), []string{reason.ToolPacketFacts}, toolCall("tu-1", "oa_ledger_entries", `{"signal_id":"sig-tools"}`))
		if out.Result.Status != ora.ReasoningBlocked || len(srv.Requests()) != 1 || !hasDiag(out, reason.DiagToolNotAllowed) {
			t.Errorf("status %s after %d requests, want BLOCKED after 1", out.Result.Status, len(srv.Requests()))
		}
		for _, c := range out.Result.ToolCalls {
			if c.ResultDigest != "" {
				t.Errorf("a blocked tool ran: %+v", c)
			}
		}
	})
	t.Run("bad tool input gets an error result, not a run", func(t *testing.T) {
		out, srv := run(t, all, toolCall("tu-1", "oa_commitments_open", `{"limit":500}`), stage(0.97, 3, "x", safeOPS))
		res := srv.Requests()[1].ToolResults()
		if len(res) != 1 || res[0].Status != "error" || !strings.Contains(string(res[0].Content[0].JSON), "/limit") {
			t.Errorf("result %+v, want an error naming /limit", res)
		}
		if out.Result.Status != ora.ReasoningOK || !out.Result.ToolCalls[0].Error {
			t.Errorf("status %s calls %+v", out.Result.Status, out.Result.ToolCalls)
		}
	})
	t.Run("turns are bounded", func(t *testing.T) {
		loop := toolCall("tu-x", "oa_packet_facts", `{}`)
		out, srv := run(t, all, loop, loop, loop, stage(0.97, 3, "finally", safeOPS))
		reqs := srv.Requests()
		if len(reqs) != reason.MaxToolTurns+1 || reqs[len(reqs)-1].ForcedTool() != reason.ObservationTool {
			t.Fatalf("%d requests, last forcing %q: want %d, the last forcing record_observation", len(reqs), reqs[len(reqs)-1].ForcedTool(), reason.MaxToolTurns+1)
		}
		if out.Result.Status != ora.ReasoningOK || len(out.Result.ToolCalls) != reason.MaxToolTurns {
			t.Errorf("status %s, %d tool calls", out.Result.Status, len(out.Result.ToolCalls))
		}
	})
	t.Run("no tools without tools_allowed", func(t *testing.T) {
		_, srv := run(t, nil, stage(0.97, 3, "x", safeOPS))
		if r := srv.Requests()[0]; r.ForcedTool() != reason.ObservationTool || len(r.ToolConfig.Tools) != 1 {
			t.Errorf("tools offered without tools_allowed: %+v", r.ToolConfig)
		}
	})
}

// canonical re-encodes JSON with sorted keys, as the SDK sends it.
func canonical(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
