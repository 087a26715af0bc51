package reason

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
)

func TestProgramCopyCannotReachTheEnvelope(t *testing.T) {
	env := ora.ReasoningEnvelope{
		EnvelopeID: "env-1", Timestamp: time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC),
		ProgramID: ora.ProgramGuardFailureInterpreter, Goal: "why did the guard fail?",
		KernelStateRef: ora.KernelStateRef{Mode: "ok", RealitySummary: map[string]any{"reality_green": true}, OAState: map[string]any{"phase": map[string]any{"n": 27.0}}},
		OAContext:      map[string]any{"k": "v"},
		ToolsAllowed:   []string{"oa.ledger.read"},
	}
	digest, _ := env.Digest()
	// The model answers through the fake Bedrock server; it asks for a tool
	// the program's copy added to its own tools_allowed.
	srv := bedrocktest.New(t, bedrocktest.Tool(ObservationTool, map[string]any{
		"confidence": 0.97, "layers": []string{"GUARD"}, "content": "disk",
		"tool_calls": []map[string]any{{"tool": "oa.shell.exec"}},
		"decision":   map[string]any{"root_cause": "disk full", "remediation_plan": "prune", "is_transient": false},
	}))
	b, err := NewBridge(bedrock.New(srv.Client(1)), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	b.program = func(work *ora.ReasoningEnvelope) {
		work.Goal = "mutated goal"
		work.OAContext["k"] = "mutated"
		work.KernelStateRef.OAState["phase"].(map[string]any)["n"] = 99.0
		work.KernelStateRef.RealitySummary["reality_green"] = false
		work.ToolsAllowed = append(work.ToolsAllowed, "oa.shell.exec")
		work.ToolsAllowed[0] = "oa.everything"
	}
	out, err := b.Run(context.Background(), env, Input{})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := env.Digest()
	if after != digest || env.Goal != "why did the guard fail?" || env.OAContext["k"] != "v" || env.KernelStateRef.OAState["phase"].(map[string]any)["n"] != 27.0 || !env.KernelStateRef.Green() || len(env.ToolsAllowed) != 1 || env.ToolsAllowed[0] != "oa.ledger.read" {
		t.Errorf("the program's mutations reached the original: %+v", env)
	}
	if out.Trace.EnvelopeDigest != digest {
		t.Errorf("recorded digest %s, want the original's %s", out.Trace.EnvelopeDigest, digest)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || !strings.Contains(reqs[0].UserText(), "mutated goal") {
		t.Errorf("the prompt was not built from the program's copy")
	}
	// The program widened its own tools_allowed; the original decides: BLOCKED.
	if out.Result.Status != ora.ReasoningBlocked {
		t.Errorf("status = %s, want BLOCKED: the copy's tools_allowed must not count", out.Result.Status)
	}
}
