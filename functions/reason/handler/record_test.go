package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/mcp/mcptest"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/telemetry"
)

// folderS3 is an S3 bucket over a folder laid out as orient.Folder reads it
// (the object s3://b/k is the file Dir/k): PutObject honours If-None-Match:
// * as S3 does (412 PreconditionFailed), and refuse, when set, answers
// every call as a denied request.
type folderS3 struct {
	dir    string
	refuse bool
}

func (f folderS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if f.refuse {
		return nil, &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}
	}
	name := filepath.Join(f.dir, filepath.FromSlash(*in.Key))
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return nil, err
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if in.IfNoneMatch != nil && *in.IfNoneMatch == "*" {
		flag |= os.O_EXCL
	}
	file, err := os.OpenFile(name, flag, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "At least one of the pre-conditions you specified did not hold"}
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if _, err := io.Copy(file, in.Body); err != nil {
		return nil, err
	}
	return &s3.PutObjectOutput{}, nil
}

func (f folderS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if f.refuse {
		return nil, &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}
	}
	b, err := os.ReadFile(filepath.Join(f.dir, filepath.FromSlash(*in.Key)))
	if err != nil {
		return nil, &smithy.GenericAPIError{Code: "NoSuchKey", Message: "The specified key does not exist."}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(b))}, nil
}

// counter is a telemetry.Metrics that keeps the counters.
type counter struct {
	mu sync.Mutex
	n  map[string]float64
}

func (c *counter) Add(name string, delta float64, labels ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[name+strings.Join(labels, ",")] += delta
}
func (c *counter) Observe(string, float64, ...string) {}
func (c *counter) Set(string, float64, ...string)     {}

// With ORA_GOLDEN_RECORD_RATE set, the reason function's waves write the
// recordings of the requests the gate asks for them under the golden
// prefix's recordings/ (an S3-shaped store): the api function's gate then
// replays the wave from that store with no call reaching the model. A store
// that refuses the write is counted and the wave still decides.
func TestHandleRecordsTheGate(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	const prefix = "ora/golden/"
	env := map[string]string{"ORA_REASONER": "bedrock", reason.EnvConfig: `{"purpose":"Watch the test source."}`,
		motor.EnvGoldenBucket: "golden", motor.EnvGoldenPrefix: prefix, motor.EnvRecordRate: "1"}
	getenv := func(k string) string { return env[k] }
	base, err := motor.NewBase(defaultrules.Default, "the default rules", 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		refuse  bool
		outcome string
	}{
		{"the wave's recordings reach the store", false, motor.RecordKept},
		{"a refused write does not fail the wave", true, motor.RecordFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			fake := bedrocktest.NewFunc(t, heartbeat)
			client := fakeClient(t, fake)
			root := t.TempDir()
			h, l, metrics := recordingHandler(t, getenv, base, folderS3{dir: filepath.Join(root, "golden"), refuse: tc.refuse}, nil, client)
			orientedIn(t, l, "rec-1", `{"status":"ok"}`)
			if _, err := invoke(t, h, `{"signal_id":"rec-1"}`); err != nil {
				t.Fatalf("the wave failed: %v", err)
			}
			if got := metrics.n[telemetry.GoldenRecordings+"outcome,"+tc.outcome]; got != 1 {
				t.Errorf("%s{outcome=%s} = %v, want 1 (%v)", telemetry.GoldenRecordings, tc.outcome, got, metrics.n)
			}
			files, _ := filepath.Glob(filepath.Join(root, "golden", prefix, motor.RecordingsFolder, "*.json"))
			if tc.refuse {
				if len(files) != 0 {
					t.Errorf("recordings %v, want none", files)
				}
				return
			}
			if len(files) == 0 {
				t.Fatal("no recording under the golden prefix")
			}
			exported, err := motor.Recorder{Ledger: l}.Waves(ctx, at, "rec-1", 0)
			if err != nil || len(exported) != 1 {
				t.Fatalf("export: %v, %v", exported, err)
			}
			player := &bedrock.Replayer{Recordings: motor.ObjectRecordings{Objects: orient.Folder{Dir: filepath.Join(root, "golden")}, Prefix: prefix + motor.RecordingsFolder}}
			gate, err := motor.ReplayBuildFromEnv(getenv, client(player), nil, player)
			if err != nil {
				t.Fatal(err)
			}
			calls := len(fake.Requests())
			rep, err := motor.ReplayWith(ctx, base, []motor.GoldenWave{exported[0].GoldenWave}, gate)
			if err != nil || len(rep.Failing) != 0 || len(player.Missed()) != 0 {
				t.Fatalf("the gate from the store: %+v, %v (missed %v)", rep, err, player.Missed())
			}
			if got := len(fake.Requests()); got != calls {
				t.Errorf("the gate called the model: %d calls, want %d", got, calls)
			}
		})
	}
}

// heartbeat answers every stage with a decision to do nothing.
func heartbeat(bedrocktest.Request) bedrocktest.Reply {
	return bedrocktest.Tool(reason.ObservationTool, map[string]any{
		"confidence": 0.97, "layers": []string{"SIGNAL"}, "content": "a heartbeat",
		"decision": map[string]any{"allowed_action": "PROCEED", "safety_check_summary": "nothing to do",
			"action": map[string]any{"type": act.TypeNone, "tier": 1, "parameters": map[string]any{"reason": "a heartbeat"},
				"allowed_operations": []string{act.TypeNone}, "forbidden_paths": []string{}, "author_type": "architect"},
			"then": []any{}},
	})
}

// fakeClient returns the Converser over the fake Bedrock whose HTTP client
// is hc (nil: the SDK's own).
func fakeClient(t *testing.T, fake *bedrocktest.Server) func(hc bedrock.HTTPDoer) reason.Converser {
	return func(hc bedrock.HTTPDoer) reason.Converser {
		c, err := bedrock.NewClient(context.Background(), func(o *bedrock.ClientOptions) {
			o.Endpoint, o.Region, o.HTTPClient = fake.URL, "us-east-1", hc
			o.Credentials = credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")
		})
		if err != nil {
			t.Fatal(err)
		}
		return bedrock.New(c)
	}
}

// recordingHandler is the reason function's handler deciding through the
// fake Bedrock (client) under the environment's configuration, its waves
// recorded by the recorder of LiveRecorderFromEnv into store (the MCP
// tools called through servers), with its ledger (SQLite) and the
// recorder's counters.
func recordingHandler(t *testing.T, getenv func(string) string, base motor.Bundle, store folderS3, servers *mcp.Client, client func(bedrock.HTTPDoer) reason.Converser) (Handler, ora.Ledger, *counter) {
	t.Helper()
	live, err := motor.LiveRecorderFromEnv(getenv, store, servers, &ora.Secrets{},
		func(rec *bedrock.Recorder) reason.Converser { return client(rec) })
	if err != nil || live == nil {
		t.Fatalf("LiveRecorderFromEnv: %v, %v", live, err)
	}
	metrics := &counter{n: map[string]float64{}}
	live.Metrics = metrics
	cfg, err := reason.ConfigFromEnv(getenv)
	if err != nil {
		t.Fatal(err)
	}
	conv := client(nil)
	build := live.Wrap(func(b motor.Bundle) (ora.Reasoner, error) {
		c, err := cfg.WithProfile(b.Model, b.Version)
		if err != nil {
			return nil, err
		}
		return reason.NewReasoner(conv, c)
	})
	l := acttest.Stores[0].Open(t).Ledger
	return Handler{Ledger: l, Reasoner: motor.NewReasoner(motor.NewRegistry(l, base, nil), build)}, l, metrics
}

// With MCP servers, the reason function's recorder reads the servers' tool
// lists kept beside the recordings at its first recording, not at start,
// and again at the next recording while they are missing: a recording
// without them fails, counted, and the one after they are kept succeeds.
func TestRecorderReadsTheMCPToolListsWhenRecording(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	const prefix = "ora/golden/"
	env := map[string]string{"ORA_REASONER": "bedrock", reason.EnvConfig: `{"purpose":"Watch the test source."}`,
		motor.EnvGoldenBucket: "golden", motor.EnvGoldenPrefix: prefix, motor.EnvRecordRate: "1",
		mcp.EnvServers: `[{"name":"tracker","url":"http://127.0.0.1:1/mcp"}]`}
	getenv := func(k string) string { return env[k] }
	base, err := motor.NewBase(defaultrules.Default, "the default rules", 0)
	if err != nil {
		t.Fatal(err)
	}
	fake := bedrocktest.NewFunc(t, heartbeat)
	client := fakeClient(t, fake)
	root := t.TempDir()
	h, l, metrics := recordingHandler(t, getenv, base, folderS3{dir: filepath.Join(root, "golden")}, nil, client)
	wave := func(id string) {
		t.Helper()
		orientedIn(t, l, id, `{"status":"ok"}`)
		if _, err := invoke(t, h, `{"signal_id":"`+id+`"}`); err != nil {
			t.Fatalf("the wave failed: %v", err)
		}
	}
	counted := func(outcome string) float64 { return metrics.n[telemetry.GoldenRecordings+"outcome,"+outcome] }

	wave("rec-1")
	if got := counted(motor.RecordFailed); got != 1 {
		t.Errorf("without the tool lists: %s{outcome=failed} = %v, want 1 (%v)", telemetry.GoldenRecordings, got, metrics.n)
	}
	lists := filepath.Join(root, "golden", prefix, motor.RecordingsFolder, motor.MCPToolsFile)
	if err := os.MkdirAll(filepath.Dir(lists), 0o755); err != nil {
		t.Fatal(err)
	}
	tools := `{"tracker":[{"server":"tracker","name":"get_issue","description":"Read an issue by number.","input_schema":{"type":"object","properties":{"number":{"type":"integer"}}},"read_only":true}]}`
	if err := os.WriteFile(lists, []byte(tools), 0o644); err != nil {
		t.Fatal(err)
	}
	wave("rec-2")
	if got := counted(motor.RecordKept); got != 1 {
		t.Errorf("with the tool lists kept: %s{outcome=kept} = %v, want 1 (%v)", telemetry.GoldenRecordings, got, metrics.n)
	}
}

// With MCP servers, the reason function's recording of a wave calls the
// tools the model asks for through the function's client of the servers
// and keeps each result beside the Converse recordings, under the golden
// prefix; the api function's gate then replays the wave from the store
// with the server unreachable: the same decision, no model or tool call.
func TestHandleRecordsToolResults(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	ctx := context.Background()
	const prefix = "ora/golden/"
	server, url := mcptest.HTTP(t)
	env := map[string]string{"ORA_REASONER": "bedrock", reason.EnvConfig: `{"purpose":"Watch the test source.","tools_allowed":["mcp.tracker.get_issue"]}`,
		motor.EnvGoldenBucket: "golden", motor.EnvGoldenPrefix: prefix, motor.EnvRecordRate: "1",
		mcp.EnvServers: `[{"name":"tracker","url":"` + url + `"}]`}
	getenv := func(k string) string { return env[k] }
	base, err := motor.NewBase(defaultrules.Default, "the default rules", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Offered the tool, the model reads issue 7 before it decides.
	fake := bedrocktest.NewFunc(t, func(q bedrocktest.Request) bedrocktest.Reply {
		if q.Tool("mcp_tracker_get_issue") != nil && len(q.ToolResults()) == 0 {
			return bedrocktest.Tool("mcp_tracker_get_issue", map[string]any{"number": 7})
		}
		return heartbeat(q)
	})
	client := fakeClient(t, fake)
	servers, err := mcp.ServersFromEnv(getenv)
	if err != nil {
		t.Fatal(err)
	}
	live, err := mcp.New(servers, false)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	// The tool lists `ora motor record` keeps beside the recordings.
	root := t.TempDir()
	recordings := filepath.Join(root, "golden", prefix, motor.RecordingsFolder)
	lists, err := live.Lists(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(lists)
	if err := os.MkdirAll(recordings, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(recordings, motor.MCPToolsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}

	h, l, metrics := recordingHandler(t, getenv, base, folderS3{dir: filepath.Join(root, "golden")}, live, client)
	orientedIn(t, l, "rec-tool", `{"status":"ok"}`)
	if _, err := invoke(t, h, `{"signal_id":"rec-tool"}`); err != nil {
		t.Fatalf("the wave failed: %v", err)
	}
	if got := metrics.n[telemetry.GoldenRecordings+"outcome,"+motor.RecordKept]; got != 1 {
		t.Fatalf("%s{outcome=kept} = %v, want 1 (%v)", telemetry.GoldenRecordings, got, metrics.n)
	}
	if len(server.Calls()) == 0 {
		t.Fatal("the recording did not call the tool")
	}
	files, _ := filepath.Glob(filepath.Join(recordings, "*.json"))
	kept := 0
	for _, f := range files {
		if body, _ := os.ReadFile(f); strings.Contains(string(body), `"tool": "tracker/get_issue"`) {
			kept++
		}
	}
	if kept != 1 {
		t.Fatalf("%d tool results among the recordings %v, want 1", kept, files)
	}

	exported, err := motor.Recorder{Ledger: l}.Waves(ctx, at, "rec-tool", 0)
	if err != nil || len(exported) != 1 {
		t.Fatalf("export: %v, %v", exported, err)
	}
	env[mcp.EnvServers] = `[{"name":"tracker","url":"http://127.0.0.1:1/mcp"}]` // the gate reaches no server
	objects := motor.ObjectRecordings{Objects: orient.Folder{Dir: filepath.Join(root, "golden")}, Prefix: prefix + motor.RecordingsFolder}
	mcpTools, err := objects.MCPTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	player := &bedrock.Replayer{Recordings: objects}
	gate, err := motor.ReplayBuildFromEnv(getenv, client(player), mcpTools, player)
	if err != nil {
		t.Fatal(err)
	}
	calls, toolCalls := len(fake.Requests()), len(server.Calls())
	rep, err := motor.ReplayWith(ctx, base, []motor.GoldenWave{exported[0].GoldenWave}, gate)
	if err != nil || len(rep.Failing) != 0 || len(player.Missed()) != 0 {
		t.Fatalf("the gate from the store: %+v, %v (missed %v)", rep, err, player.Missed())
	}
	if got := len(fake.Requests()); got != calls {
		t.Errorf("the gate called the model: %d calls, want %d", got, calls)
	}
	if got := len(server.Calls()); got != toolCalls {
		t.Errorf("the gate called the tool: %d calls, want %d", got, toolCalls)
	}
}
