package embedded

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/mcp/mcptest"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/reason"
)

// gateBundle is the motor version the tests here record and replay.
var gateBundle = motor.Bundle{Version: "1.0.0", Rules: "version: \"1.0.0\"\nrules: []\nunmatched: ignore\n", Changelog: "c"}

// runGolden runs golden under gateBundle through cfg's gate build over hc:
// a bedrock.Recorder records it as `ora motor record` does, a
// bedrock.Replayer replays it as the gate does.
func runGolden(t *testing.T, cfg Config, hc bedrockruntime.HTTPClient, golden []motor.GoldenWave) motor.Report {
	t.Helper()
	build, err := cfg.ReplayBuild(context.Background(), hc)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := motor.ReplayWith(context.Background(), gateBundle, golden, build)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestGateReplaysWithRecordedMCPTools: with MCP servers configured,
// recording the golden set (ora motor record's build) keeps the servers'
// tool lists beside the recordings, and ora dev's gate build replays every
// recorded request (the same digests) from them with the server
// unreachable; without the kept lists each wave fails saying so.
func TestGateReplaysWithRecordedMCPTools(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-the-fake-bedrock")
	_, url := mcptest.HTTP(t)
	fake := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply {
		return bedrocktest.Tool(reason.ObservationTool, map[string]any{
			"confidence": 0.97, "layers": []string{"C01", "C02", "C03"}, "content": "nothing to do",
			"decision": map[string]any{"allowed_action": "PROCEED", "safety_check_summary": "nothing runs",
				"action": map[string]any{"type": act.TypeNone, "tier": 1, "parameters": map[string]any{"reason": "nothing to do"},
					"allowed_operations": []string{act.TypeNone}, "forbidden_paths": []string{}, "author_type": "architect"},
				"then": []any{}},
		})
	})
	cfg := testConfig(t, t.TempDir())
	cfg.Reasoner.Kind, cfg.Reasoner.BedrockEndpoint, cfg.Reasoner.Region = "bedrock", fake.URL, "us-east-1"
	cfg.Reasoner.Bedrock.ToolsAllowed = []string{"mcp.tracker.get_issue"}
	cfg.MCPServers = []mcp.ServerConfig{{Name: "tracker", URL: url, ActTools: []string{"add_label"}}}
	golden, err := motor.Golden()
	if err != nil {
		t.Fatal(err)
	}
	rec := &bedrock.Recorder{Store: bedrock.DirRecordings(cfg.RecordingsDir())}
	rep0 := runGolden(t, cfg, rec, golden)
	if len(rec.Kept()) == 0 {
		t.Fatalf("nothing recorded: %+v", rep0)
	}
	if _, err := os.Stat(filepath.Join(cfg.RecordingsDir(), motor.MCPToolsFile)); err != nil {
		t.Fatalf("the tool lists were not kept: %v", err)
	}

	cfg.MCPServers[0].URL = "http://127.0.0.1:1/mcp" // the gate reaches no server
	player := &bedrock.Replayer{Recordings: bedrock.DirRecordings(cfg.RecordingsDir())}
	rep := runGolden(t, cfg, player, golden)
	if missed := player.Missed(); len(missed) != 0 {
		t.Fatalf("the gate asked %d requests nobody recorded (%v); report %+v", len(missed), missed, rep.Failing)
	}

	if err := os.Remove(filepath.Join(cfg.RecordingsDir(), motor.MCPToolsFile)); err != nil {
		t.Fatal(err)
	}
	rep = runGolden(t, cfg, player, golden)
	for _, c := range rep.Waves {
		if c.Want.Action != "" && (c.Error == "" || !strings.Contains(c.Error, motor.MCPToolsFile)) {
			t.Errorf("wave %s: %+v, want it failed naming %s", c.Name, c, motor.MCPToolsFile)
		}
	}
}

// TestGateReplaysRecordedToolResults: a decision during which the model
// calls an MCP tool is recorded (ora motor record's build) with the tool's
// result beside the Converse recordings; the gate replays it with the
// server gone: the same decision, no model call, no tool call, the tool
// answered from its recorded result. Without that result the wave fails
// naming the missing tool result.
func TestGateReplaysRecordedToolResults(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-the-fake-bedrock")
	server, url := mcptest.HTTP(t)
	// The model reads issue 7 first, then decides on what the tool said.
	fake := bedrocktest.NewFunc(t, func(q bedrocktest.Request) bedrocktest.Reply {
		results := q.ToolResults()
		if len(results) == 0 {
			return bedrocktest.Tool("mcp_tracker_get_issue", map[string]any{"number": 7})
		}
		said := string(results[len(results)-1].Content[0].JSON)
		if !strings.Contains(said, `"title":"Issue 7"`) {
			return bedrocktest.Invalid("the tool's result is not the issue: " + said)
		}
		return observation(0.97, act.TypeNone, map[string]any{"reason": "issue 7 is open"})
	})
	cfg := testConfig(t, t.TempDir())
	cfg.Reasoner.Kind, cfg.Reasoner.BedrockEndpoint, cfg.Reasoner.Region = "bedrock", fake.URL, "us-east-1"
	cfg.Reasoner.Bedrock.ToolsAllowed = []string{"mcp.tracker.get_issue"}
	cfg.MCPServers = []mcp.ServerConfig{{Name: "tracker", URL: url}}
	golden, err := motor.Golden()
	if err != nil {
		t.Fatal(err)
	}
	golden = golden[:1]
	recorded := runGolden(t, cfg, &bedrock.Recorder{Store: bedrock.DirRecordings(cfg.RecordingsDir())}, golden)
	if got := recorded.Waves[0]; got.Error != "" || got.Got.Action != act.TypeNone {
		t.Fatalf("the recorded decision: %+v, want %s", got, act.TypeNone)
	}
	if n := len(server.Calls()); n == 0 {
		t.Fatal("the recording did not call the tool")
	}
	toolFile := ""
	files, _ := filepath.Glob(filepath.Join(cfg.RecordingsDir(), "[0-9a-f]*.json"))
	for _, f := range files {
		if body, _ := os.ReadFile(f); strings.Contains(string(body), `"tool": "tracker/get_issue"`) {
			toolFile = f
		}
	}
	if toolFile == "" {
		t.Fatalf("no tool result among the recordings %v", files)
	}

	cfg.MCPServers[0].URL = "http://127.0.0.1:1/mcp" // the server is gone
	calls, toolCalls := len(fake.Requests()), len(server.Calls())
	player := &bedrock.Replayer{Recordings: bedrock.DirRecordings(cfg.RecordingsDir())}
	rep := runGolden(t, cfg, player, golden)
	if got, want := rep.Waves[0].Got, recorded.Waves[0].Got; got != want || rep.Waves[0].Error != "" || len(player.Missed()) != 0 {
		t.Fatalf("the replay decided %+v (%s, missed %v), want %+v", got, rep.Waves[0].Error, player.Missed(), want)
	}
	if got := len(fake.Requests()); got != calls {
		t.Errorf("the gate called the model: %d calls, want %d", got, calls)
	}
	if got := len(server.Calls()); got != toolCalls {
		t.Errorf("the gate called the tool: %d calls, want %d", got, toolCalls)
	}

	if err := os.Remove(toolFile); err != nil {
		t.Fatal(err)
	}
	rep = runGolden(t, cfg, player, golden)
	if c := rep.Waves[0]; !strings.Contains(c.Error, "no recorded result for tool tracker/get_issue") {
		t.Errorf("without the tool result: %+v, want the wave failed naming it", c)
	}
}
