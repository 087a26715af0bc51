package motor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/reason"
)

// Environment variables the Lambdas that read the motor share (api, reason,
// operate): all of them must agree on the base version.
const (
	// EnvRulesFile names the rules file of the base version (default: the
	// embedded rules/ora.rules.yaml).
	EnvRulesFile = "ORA_RULES_FILE"
	// EnvAppVersion is the app context's version (ora.AppVersion), computed
	// at synth from the stack's configuration.
	EnvAppVersion = "ORA_APP_VERSION"
	// EnvModelIDs lists, comma-separated, the model ids the stack lets the
	// reason function invoke (the same variable, and list, as the reason
	// function's primary and fallback models: its IAM policy names them).
	// The api function checks proposed model profiles against it.
	EnvModelIDs = "ORA_BEDROCK_MODEL_IDS"
	// EnvGoldenBucket and EnvGoldenPrefix locate the deployment's own golden
	// set (decision waves, and incidents under the prefix's incidents/
	// folder) in S3; unset, promotions are gated by the set ora ships.
	EnvGoldenBucket = "ORA_GOLDEN_BUCKET"
	EnvGoldenPrefix = "ORA_GOLDEN_PREFIX"
)

// GoldenFromEnv returns the golden set the promotion gate replays on AWS:
// the deployment's own under EnvGoldenBucket/EnvGoldenPrefix, read through
// client, or the set ora ships. Errors: EINVALID naming the object,
// ETRANSIENT.
func GoldenFromEnv(ctx context.Context, getenv func(string) string, client orient.S3API) ([]GoldenWave, error) {
	bucket := getenv(EnvGoldenBucket)
	if bucket == "" {
		return Golden()
	}
	return LoadGoldenFrom(ctx, orient.S3{Client: client, Bucket: bucket}, getenv(EnvGoldenPrefix))
}

// ModelsFromEnv returns the model ids EnvModelIDs lists, for
// Options.Models: never nil, so an unset or empty variable allows no model.
func ModelsFromEnv(getenv func(string) string) []string {
	ids := []string{}
	for _, id := range strings.Split(getenv(EnvModelIDs), ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// BaseFromEnv returns the base bundle of the Lambdas: the rules file
// EnvRulesFile names, or the embedded default. Errors: EINVALID (the file).
func BaseFromEnv(getenv func(string) string) (Bundle, error) {
	text := defaultrules.Default
	if path := getenv(EnvRulesFile); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return Bundle{}, fmt.Errorf("motor: %s: %w", EnvRulesFile, err)
		}
		text = b
	}
	return NewBase(text, "the configured rules file", 0)
}

// RecordingsFolder is the folder, beside a golden set's waves, that holds
// the recorded model responses the gate replays (`ora motor record`).
const RecordingsFolder = "recordings/"

// ObjectRecordings reads recorded model responses from an object store (a
// deployment's golden set in S3): the object <Prefix><digest>.json.
type ObjectRecordings struct {
	Objects orient.ObjectReader
	Prefix  string
}

var _ bedrock.Recordings = ObjectRecordings{}

// Recording reads the recording of digest. Errors: ENOTFOUND, EINVALID,
// ETRANSIENT.
func (o ObjectRecordings) Recording(ctx context.Context, digest string) (bedrock.Recording, error) {
	if len(digest) != 64 || strings.Trim(digest, "0123456789abcdef") != "" {
		return bedrock.Recording{}, ora.Invalid("digest", "%q is not a sha256 digest", digest)
	}
	b, _, err := o.Objects.Get(ctx, o.Prefix+digest+".json", MaxGoldenBytes)
	if err != nil {
		return bedrock.Recording{}, fmt.Errorf("recording %s: %w", digest, err)
	}
	return bedrock.ParseRecording(digest, b)
}

// ReplayBuildFromEnv returns the reasoner the api function's promotion
// gate replays the golden set through on AWS: nil (the rules reasoner)
// unless ORA_REASONER is bedrock; then the reason function's Bedrock
// reasoner (reason.ConfigFromEnv, the catalogue of act.CatalogueFromEnv,
// the tools of the MCP servers ORA_MCP_SERVERS names) over client, whose
// HTTP client must be a bedrock.Replayer over the golden set's recordings
// (ObjectRecordings under EnvGoldenPrefix + RecordingsFolder). The MCP
// servers' tools come from mcpTools, the MCPToolsFile recorded beside the
// recordings (ObjectRecordings.MCPTools), and a model's tool call is
// answered by tools (that Replayer) from the results recorded beside them:
// the gate reaches no server. MCP servers without recorded lists fail
// every decision wave of the gate, saying so (Unbuildable). Errors:
// EINVALID (the environment).
func ReplayBuildFromEnv(getenv func(string) string, conv reason.Converser, mcpTools []byte, tools ToolRecordings) (ReplayBuild, error) {
	with, servers, err := replayFromEnv(getenv, conv)
	if err != nil || with == nil {
		return nil, err
	}
	listed, err := ListedMCP(servers, false, mcpTools, tools, nil)
	if err != nil {
		return Unbuildable(err), nil
	}
	return with(listed), nil
}

// replayFromEnv returns ModelReplay over the environment's configuration
// and catalogue, still to be given the MCP client, and the MCP servers of
// the environment; nil unless ORA_REASONER is bedrock. Errors: EINVALID
// (the environment).
func replayFromEnv(getenv func(string) string, conv reason.Converser) (func(*mcp.Client) ReplayBuild, []mcp.ServerConfig, error) {
	if getenv("ORA_REASONER") != "bedrock" {
		return nil, nil, nil
	}
	cfg, err := reason.ConfigFromEnv(getenv)
	if err != nil {
		return nil, nil, err
	}
	catalogue, err := act.CatalogueFromEnv(getenv)
	if err != nil {
		return nil, nil, err
	}
	servers, err := mcp.ServersFromEnv(getenv)
	if err != nil {
		return nil, nil, err
	}
	return func(listed *mcp.Client) ReplayBuild { return ModelReplay(conv, cfg, catalogue, listed) }, servers, nil
}

// Unbuildable is the replay build of a reasoner the gate cannot make (the
// MCP servers' tool lists were never recorded): every decision wave fails
// with err, named in the gate's answer, and the runtime still starts.
func Unbuildable(err error) ReplayBuild {
	return func(Bundle, time.Time) (ora.Reasoner, error) { return nil, err }
}

// Lazy returns a replay build that make makes at its first use, and again
// at each later use until it succeeds (then it is kept): what the build
// needs from outside (the MCP servers' tool lists, listed from the servers
// or read beside the recordings) is fetched when a recording or the gate
// first needs it, not at start, so an unreachable server or a missing file
// fails that use only, with make's error, and never the runtime's start.
func Lazy(make func() (ReplayBuild, error)) ReplayBuild {
	var mu sync.Mutex
	var made ReplayBuild
	return func(b Bundle, at time.Time) (ora.Reasoner, error) {
		mu.Lock()
		if made == nil {
			m, err := make()
			if err != nil {
				mu.Unlock()
				return nil, err
			}
			made = m
		}
		build := made
		mu.Unlock()
		return build(b, at)
	}
}

// MCPToolsFile is the file (object) of a golden set's recordings folder
// that keeps the MCP servers' tool lists `ora motor record` saw
// (mcp.Client.Lists), so that the gate offers the model the tools
// production offered without reaching a server.
const MCPToolsFile = "mcp-tools.json"

// ListedMCP returns the client the gate offers MCP tools through: nil
// without servers, else one over servers answering from the recorded lists
// (an MCPToolsFile's content; mcp.Options.Listed), which never connects
// itself. A model's tool call is answered through tools (nil: refused):
// from the recorded results in the gate (a *bedrock.Replayer), or,
// recording (a *bedrock.Recorder), by the live servers' client live, each
// result kept. Errors: EINVALID (servers, or no recorded lists: record the
// golden set again).
func ListedMCP(servers []mcp.ServerConfig, stdio bool, recorded []byte, tools ToolRecordings, live *mcp.Client) (*mcp.Client, error) {
	if len(servers) == 0 {
		return nil, nil
	}
	if len(recorded) == 0 {
		return nil, ora.Invalid("mcp_servers", "the golden set's recordings keep no MCP tool lists (%s): record them with `ora motor record`", MCPToolsFile)
	}
	var lists map[string][]mcp.Tool
	if err := ora.DecodeJSON(recorded, &lists); err != nil {
		return nil, ora.Invalid(MCPToolsFile, "not MCP tool lists: %v", err)
	}
	return mcp.New(servers, stdio, func(o *mcp.Options) {
		o.Listed = lists
		if tools != nil {
			o.Answer = answerTools(tools, live)
		}
	})
}

// ToolRecordings answers the MCP tool calls of the gate's replay or of a
// recording: *bedrock.Replayer (from the recorded results) and
// *bedrock.Recorder (calling the tool, keeping its result) satisfy it.
type ToolRecordings interface {
	// Tool answers the call of tool on server with input; call, when not
	// nil, calls it for real. Errors: *bedrock.MissingToolResult (not
	// recorded), *bedrock.NotRecorded (with the result: not kept), call's.
	Tool(ctx context.Context, server, tool string, input json.RawMessage, call bedrock.ToolCaller) (json.RawMessage, error)
}

// answerTools is mcp.Options.Answer over tools and the live servers. What
// goes wrong is noted in the context (withToolNotes), so that the decision
// replayed or recorded fails naming it: a tool's error goes back to the
// model, which would only show as a request nobody recorded. A result that
// was not kept still answers the model.
func answerTools(tools ToolRecordings, live *mcp.Client) func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error) {
		var call bedrock.ToolCaller
		if live != nil {
			call = func(ctx context.Context) (json.RawMessage, error) {
				res, err := live.Call(ctx, server, tool, args, nil)
				return res.JSON, err
			}
		}
		out, err := tools.Tool(ctx, server, tool, args, call)
		if err == nil {
			return out, nil
		}
		noteTool(ctx, err)
		if out != nil {
			return out, nil
		}
		return nil, err
	}
}

type toolNotesKey struct{}

// toolNotes keeps the first failure of a decision's tool answers.
type toolNotes struct {
	mu  sync.Mutex
	err error
}

// withToolNotes returns ctx noting the tool answers' failures in the
// returned notes.
func withToolNotes(ctx context.Context) (context.Context, *toolNotes) {
	n := &toolNotes{}
	return context.WithValue(ctx, toolNotesKey{}, n), n
}

func noteTool(ctx context.Context, err error) {
	if n, ok := ctx.Value(toolNotesKey{}).(*toolNotes); ok {
		n.mu.Lock()
		if n.err == nil {
			n.err = err
		}
		n.mu.Unlock()
	}
}

// first returns the first failure noted, or nil.
func (n *toolNotes) first() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// MCPTools reads the MCPToolsFile beside the recordings: nil when there is
// none. Errors: ETRANSIENT.
func (o ObjectRecordings) MCPTools(ctx context.Context) ([]byte, error) {
	b, _, err := o.Objects.Get(ctx, o.Prefix+MCPToolsFile, MaxGoldenBytes)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recordings %s: %w", MCPToolsFile, err)
	}
	return b, nil
}
