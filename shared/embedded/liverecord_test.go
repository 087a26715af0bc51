package embedded

import (
	"context"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/mcp/mcptest"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/telemetry"
)

// With reasoner.record on, a real wave leaves the recordings of the
// requests the promotion gate asks for that wave: exported from the ledger
// as a golden wave, it passes the gate from the recordings with no `ora
// motor record` step and no call reaching the model. A recording that
// cannot be kept is counted while the wave succeeds.
func TestRealWavesRecordTheGate(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	tests := []struct {
		name    string
		payload string
		broken  bool   // the recordings folder cannot be written
		outcome string // ora_golden_recordings_total's outcome
		gated   bool   // the gate passes the wave from the recordings
	}{
		{"a wave is recorded and gated", `{"status":"ok"}`, false, motor.RecordKept, true},
		{"a failed recording does not fail the wave", `{"status":"ok"}`, true, motor.RecordFailed, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			fake := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply {
				return observation(0.97, act.TypeNone, map[string]any{"reason": "a heartbeat"})
			})
			dir := t.TempDir()
			cfg := testConfig(t, dir)
			cfg.Reasoner.Kind, cfg.Reasoner.BedrockEndpoint, cfg.Reasoner.Region = "bedrock", fake.URL, "us-east-1"
			cfg.Reasoner.Bedrock.Batch.Window = 0
			cfg.Reasoner.Bedrock.Purpose = "Watch the demo source."
			cfg.Reasoner.Record = RecordConfig{Rate: 1}
			if tc.broken { // a file where the recordings folder should be
				if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(cfg.RecordingsDir(), []byte("not a folder"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			srv := httptest.NewServer(r.Handler())
			defer srv.Close()
			rec := send(t, r, srv.URL, "record-"+strings.ReplaceAll(tc.name, " ", "-"), tc.payload)
			w, err := waves{r}.Wave(ctx, rec.WaveID)
			for deadline := time.Now().Add(30 * time.Second); err == nil && w.Status == "RUNNING" && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
				w, err = waves{r}.Wave(ctx, rec.WaveID)
			}
			if err != nil || w.Status != "SUCCEEDED" {
				t.Fatalf("wave: %+v, %v; want SUCCEEDED whatever the recording did", w, err)
			}
			r.liveRec.Wait()
			if got := r.metrics.Value(telemetry.GoldenRecordings, "outcome", tc.outcome); got != 1 {
				t.Errorf("%s{outcome=%s} = %v, want 1", telemetry.GoldenRecordings, tc.outcome, got)
			}
			files, _ := filepath.Glob(filepath.Join(cfg.RecordingsDir(), "*.json"))
			if !tc.gated {
				if len(files) != 0 && tc.outcome != motor.RecordKept {
					t.Errorf("recordings %v, want none", files)
				}
				return
			}
			if len(files) == 0 {
				t.Fatal("no recording kept")
			}
			exported, err := motor.Recorder{Ledger: r.ledger}.Waves(ctx, time.Time{}, rec.SignalID, 0)
			if err != nil || len(exported) != 1 {
				t.Fatalf("export: %v, %v", exported, err)
			}
			b, _, _, err := r.motors.Current(ctx)
			if err != nil {
				t.Fatal(err)
			}
			calls := len(fake.Requests())
			player := &bedrock.Replayer{Recordings: bedrock.DirRecordings(cfg.RecordingsDir())}
			build, err := cfg.ReplayBuild(ctx, player)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := motor.ReplayWith(ctx, b, []motor.GoldenWave{exported[0].GoldenWave}, build)
			if err != nil || len(rep.Failing) != 0 || len(player.Missed()) != 0 {
				t.Fatalf("the gate's replay from the wave's recordings: %+v, %v (missed %v)", rep, err, player.Missed())
			}
			if got := len(fake.Requests()); got != calls {
				t.Errorf("the gate called the model: %d calls, want %d", got, calls)
			}
		})
	}
}

// TestRecordingWithAnMCPServerDown: with reasoner.record on and an MCP
// server that cannot be reached, ora dev starts and its waves complete;
// each recording fails, counted as failed and logged with why, and the
// server's tool lists are asked for again at the next recording: once the
// server is up, the recordings are kept, with its tool lists and the
// result of the tool the model called beside them.
func TestRecordingWithAnMCPServerDown(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	ctx := context.Background()
	// Offered the tool, the model reads issue 7 before it decides.
	fake := bedrocktest.NewFunc(t, func(q bedrocktest.Request) bedrocktest.Reply {
		if q.Tool("mcp_tracker_get_issue") != nil && len(q.ToolResults()) == 0 {
			return bedrocktest.Tool("mcp_tracker_get_issue", map[string]any{"number": 7})
		}
		return observation(0.97, act.TypeNone, map[string]any{"reason": "a heartbeat"})
	})
	// An address nothing listens on until the server comes up.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	cfg := testConfig(t, t.TempDir())
	cfg.Reasoner.Kind, cfg.Reasoner.BedrockEndpoint, cfg.Reasoner.Region = "bedrock", fake.URL, "us-east-1"
	cfg.Reasoner.Bedrock.Batch.Window = 0
	cfg.Reasoner.Bedrock.ToolsAllowed = []string{"mcp.tracker.get_issue"}
	cfg.Reasoner.Record = RecordConfig{Rate: 1}
	cfg.MCPServers = []mcp.ServerConfig{{Name: "tracker", URL: "http://" + addr + "/mcp", TimeoutSeconds: 2}}
	var logs syncBuffer
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	if err != nil {
		t.Fatalf("ora dev does not start with an MCP server down: %v", err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	wave := func(key string) {
		t.Helper()
		rec := send(t, r, srv.URL, key, `{"status":"ok"}`)
		w, err := waves{r}.Wave(ctx, rec.WaveID)
		for deadline := time.Now().Add(30 * time.Second); err == nil && w.Status == "RUNNING" && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			w, err = waves{r}.Wave(ctx, rec.WaveID)
		}
		if err != nil || w.Status != "SUCCEEDED" {
			t.Fatalf("wave %s: %+v, %v; want SUCCEEDED whatever the recording did", key, w, err)
		}
		r.liveRec.Wait()
	}
	counted := func(outcome string) float64 {
		return r.metrics.Value(telemetry.GoldenRecordings, "outcome", outcome)
	}

	wave("server-down")
	if got := counted(motor.RecordFailed); got != 1 {
		t.Errorf("%s{outcome=failed} = %v, want 1", telemetry.GoldenRecordings, got)
	}
	if got := logs.String(); !strings.Contains(got, `"msg":"golden recording not kept"`) || !strings.Contains(got, "record the MCP tool lists") || !strings.Contains(got, "mcp: tracker: list tools") {
		t.Errorf("the log does not say why the recording failed:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(cfg.RecordingsDir(), motor.MCPToolsFile)); err == nil {
		t.Error("tool lists kept while the server was down")
	}

	up, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, h := mcptest.Handler(t)
	server := httptest.NewUnstartedServer(h)
	server.Listener.Close()
	server.Listener = up
	server.Start()
	defer server.Close()

	wave("server-up")
	if got := counted(motor.RecordKept); got != 1 {
		t.Errorf("%s{outcome=kept} = %v, want 1 once the server is up (failed %v)\n%s", telemetry.GoldenRecordings, got, counted(motor.RecordFailed), logs.String())
	}
	b, err := os.ReadFile(filepath.Join(cfg.RecordingsDir(), motor.MCPToolsFile))
	if err != nil || !strings.Contains(string(b), "get_issue") {
		t.Errorf("the tool lists beside the recordings: %s, %v", b, err)
	}
	files, _ := filepath.Glob(filepath.Join(cfg.RecordingsDir(), "[0-9a-f]*.json"))
	tools := 0
	for _, f := range files {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), `"tool": "tracker/get_issue"`) {
			tools++
		}
	}
	if len(files) <= tools || tools != 1 {
		t.Errorf("recordings %v with %d tool results: want the model's and one tool result once the server is up", files, tools)
	}
}
