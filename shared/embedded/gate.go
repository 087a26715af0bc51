package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/telemetry"
)

// RecordingsDir is where the golden set's recorded model responses are
// kept: the recordings folder of operate.golden_dir, or of the data folder
// for the set that ships with ora.
func (c Config) RecordingsDir() string {
	if c.Operate.GoldenDir != "" {
		return filepath.Join(c.Operate.GoldenDir, "recordings")
	}
	return filepath.Join(c.DataDir, "recordings")
}

// ReplayBuild returns the reasoner the promotion gate replays the golden
// set through: nil (the rules reasoner of each motor version) unless
// reasoner.kind is bedrock; then the configured Bedrock reasoner, each
// version's model profile laid over, over a Bedrock client whose HTTP client
// is hc: a bedrock.Replayer in the gate (no call leaves the process; static
// credentials sign what nobody receives), a bedrock.Recorder in `ora motor
// record` (the configured credentials). The model sees the catalogue of the
// configured actions, connections and functions, and the MCP servers'
// tools (recordedMCP): recording, the servers are listed first and their
// lists kept; in the gate, lists not kept yet fail each decision wave
// naming the file, and are read again at the next replay. Errors: EINVALID
// (reasoner.bedrock), those of listing the servers (recording).
func (c Config) ReplayBuild(ctx context.Context, hc bedrockruntime.HTTPClient) (motor.ReplayBuild, error) {
	_, replaying := hc.(*bedrock.Replayer)
	if replaying || len(c.MCPServers) == 0 {
		return c.replayBuild(ctx, hc, nil)
	}
	live, err := mcp.New(c.MCPServers, true)
	if err != nil {
		return nil, fmt.Errorf("embedded: mcp_servers: %w", err)
	}
	// Closed once listed: a tool the model calls while recording opens its
	// server's session again (the command ends with the process).
	defer live.Close()
	return c.replayBuild(ctx, hc, live)
}

// replayBuild is ReplayBuild listing the MCP servers' tools through live
// (nil: from the kept lists).
func (c Config) replayBuild(ctx context.Context, hc bedrockruntime.HTTPClient, live *mcp.Client) (motor.ReplayBuild, error) {
	if c.Reasoner.Kind != "bedrock" {
		return nil, nil
	}
	_, replaying := hc.(*bedrock.Replayer)
	client, err := bedrock.NewClient(ctx, func(o *bedrock.ClientOptions) {
		o.Endpoint, o.Region, o.HTTPClient = c.Reasoner.BedrockEndpoint, c.Reasoner.Region, hc
		if o.Region == "" && replaying {
			o.Region = "us-east-1"
		}
		if replaying {
			o.Credentials = credentials.NewStaticCredentialsProvider("replay", "replay", "")
		}
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: bedrock client: %w", err)
	}
	names := make([]string, 0, len(c.Connections))
	for _, cn := range c.Connections {
		names = append(names, cn.Name)
	}
	build := func(servers *mcp.Client) motor.ReplayBuild {
		return motor.ModelReplay(bedrock.New(client), c.Reasoner.Bedrock, c.Catalogue(names...), servers)
	}
	// A model's tool call is answered from the recorded results (the
	// gate's Replayer) or, recording, by live and kept (the Recorder).
	tools, _ := hc.(motor.ToolRecordings)
	servers, err := c.recordedMCP(ctx, tools, live)
	if err != nil && replaying {
		// The gate names it in each wave, and reads the lists again at the
		// next replay (a recording of real waves may keep them meanwhile).
		return motor.Lazy(func() (motor.ReplayBuild, error) {
			servers, err := c.recordedMCP(context.Background(), tools, nil)
			if err != nil {
				return nil, err
			}
			return build(servers), nil
		}), nil
	}
	if err != nil {
		return nil, err
	}
	return build(servers), nil
}

// Catalogue is the catalogue of the configured actions, connections
// (named) and functions: what the reasoner shows the model besides the MCP
// servers' (reason.Offer).
func (c Config) Catalogue(connections ...string) []act.Description {
	catalogue := act.StandardCatalogue(c.Actions, connections...)
	if d, ok := act.DescribeFunctions(c.Functions); ok {
		catalogue = append(catalogue, d)
	}
	return catalogue
}

// recordedMCP returns the MCP client the gate offers the model's tools
// through (nil without mcp_servers): one answering from the tool lists kept
// in the recordings folder, and a model's tool calls through tools
// (motor.ListedMCP), so the gate reaches no server. Recording (live set:
// the servers' client), it first lists the live servers and keeps their
// lists there, and the tools are called through live. Errors: EINVALID
// (mcp_servers, or no kept lists to replay), ETRANSIENT (a server could
// not be listed).
func (c Config) recordedMCP(ctx context.Context, tools motor.ToolRecordings, live *mcp.Client) (*mcp.Client, error) {
	if len(c.MCPServers) == 0 {
		return nil, nil
	}
	file := filepath.Join(c.RecordingsDir(), motor.MCPToolsFile)
	if live != nil {
		lists, err := live.Lists(ctx)
		if err != nil {
			return nil, fmt.Errorf("embedded: record the MCP tool lists: %w", err)
		}
		b, err := json.MarshalIndent(lists, "", "  ")
		if err == nil {
			err = writeFileAtomic(c.RecordingsDir(), motor.MCPToolsFile, b)
		}
		if err != nil {
			return nil, fmt.Errorf("embedded: record the MCP tool lists: %w", err)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	return motor.ListedMCP(c.MCPServers, true, b, tools, live)
}

// writeFileAtomic writes name in dir (creating dir) through a temporary
// file renamed into place, so a reader (the gate) never sees half of it.
func writeFileAtomic(dir, name string, b []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}

// LiveRecorder returns the recorder of real waves reasoner.record asks for
// (nil when it is off): each sampled wave is replayed once as the gate
// replays it, in the background, through a bedrock.Recorder over the
// configured Bedrock client that keeps each new exchange in RecordingsDir
// (never overwriting one), refuses an exchange holding a value of secrets
// or over max_bytes, and logs and counts what it did not keep. With MCP
// servers (servers: the runtime's client of them), their tool lists are
// listed and kept at the first recording, not at start, and again at the
// next recording until that succeeds: a server that cannot be reached
// fails the recordings meanwhile (counted as failed, logged with the
// error), never the runtime. Errors: those of ReplayBuild.
func (c Config) LiveRecorder(ctx context.Context, servers *mcp.Client, secrets *ora.Secrets, log *slog.Logger, metrics telemetry.Metrics) (*motor.LiveRecorder, error) {
	rc := c.Reasoner.Record
	if c.Reasoner.Kind != "bedrock" || rc.Rate <= 0 {
		return nil, nil
	}
	limit := rc.MaxBytes
	if limit == 0 {
		limit = motor.DefaultRecordMaxBytes
	}
	rec := &bedrock.Recorder{Store: bedrock.DirRecordings(c.RecordingsDir()), Secrets: secrets, MaxBytes: limit, KeepOnce: true}
	var build motor.ReplayBuild
	var err error
	if len(c.MCPServers) == 0 {
		if build, err = c.replayBuild(ctx, rec, nil); err != nil {
			return nil, err
		}
	} else {
		if servers == nil {
			return nil, ora.Errorf(ora.EINTERNAL, "embedded: recording with mcp_servers needs the servers' client")
		}
		build = motor.Lazy(func() (motor.ReplayBuild, error) {
			b, err := c.replayBuild(context.Background(), rec, servers)
			if err != nil {
				return nil, fmt.Errorf("%w (the MCP servers are listed again at the next recording)", err)
			}
			return b, nil
		})
	}
	return &motor.LiveRecorder{Build: build, Rate: rc.Rate, Timeout: time.Duration(rc.Timeout), Async: true, Log: log, Metrics: metrics}, nil
}
