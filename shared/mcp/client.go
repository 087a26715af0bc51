package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ora-runtime/ora/shared/ora"
)

// MetaIdempotencyKey is the _meta key of a call's idempotency key
// ("<decision id>/<action index>"): a server that changes something can
// use it to do so once.
const MetaIdempotencyKey = "ora/idempotency_key"

// ProtocolVersion is the MCP version ora asks for: the initialize
// handshake every current server speaks. (The SDK's default, 2026-07-28,
// probes with server/discover, which stateful streamable HTTP servers
// refuse on later requests.)
const ProtocolVersion = "2025-11-25"

// DefaultToolsTTL is how long a server's tool list is reused.
const DefaultToolsTTL = 5 * time.Minute

// Options tune a Client.
type Options struct {
	// HTTPClient returns the HTTP client for a server's requests given its
	// connection name ("" for none): the wiring resolves connections to
	// authenticated clients. Default: a plain client, and a server naming
	// a connection fails to connect.
	HTTPClient func(connection string) (*http.Client, error)
	// Dir is the working directory of stdio servers. Default: ora's own.
	Dir string
	// ToolsTTL is how long a tool list is reused. Default DefaultToolsTTL.
	ToolsTTL time.Duration
	// Log receives the servers' connection errors. Default slog.Default().
	Log *slog.Logger
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// Listed, when not nil, are tool lists recorded earlier (Client.Lists),
	// by server name: the client answers Tools from them, never connects,
	// and refuses Call. The promotion gate builds the reasoner's tools from
	// what was recorded with the golden set's model responses, so it offers
	// the model what production offered without reaching a server.
	Listed map[string][]Tool
	// Answer, with Listed, answers Call in place of a server: the
	// promotion gate answers a model's tool calls from the results
	// recorded with the golden set, and a recording calls the live server
	// and keeps each result. It returns the tool's result as Result.JSON
	// holds it. Nil: Call is refused.
	Answer func(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error)
}

// Tool is one tool a server offers.
type Tool struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	// ReadOnly is the server's readOnlyHint: the tool does not change its
	// environment.
	ReadOnly bool `json:"read_only"`
}

// Result is a tool's answer as ora keeps it.
type Result struct {
	// JSON is the answer (the MCP result: content, structuredContent,
	// isError) with sorted keys, cut to the server's ResultLimit: a longer
	// answer becomes {"truncated":true,"bytes":N,"digest":...,"head":...}.
	JSON json.RawMessage
	// Digest is the sha256 of the whole answer; Bytes its length.
	Digest string
	Bytes  int
	// Truncated: JSON holds the head of the answer only.
	Truncated bool
	// IsError: the tool reported a failure (isError).
	IsError bool
}

// CallError is a call that got no result from the tool.
type CallError struct {
	Server, Tool string
	// Unknown: the request may have reached the server and no answer came
	// back (a timeout, a connection lost), so whether the tool ran cannot
	// be known. False when it provably never left (no connection) or the
	// server answered with an error.
	Unknown bool
	Err     error
}

// Error names the server, the tool and the cause.
func (e *CallError) Error() string {
	return fmt.Sprintf("mcp: %s/%s: %v", e.Server, e.Tool, e.Err)
}

// Unwrap returns the cause.
func (e *CallError) Unwrap() error { return e.Err }

// MayHaveRun reports whether a failed Call may have reached the server
// without an answer coming back.
func MayHaveRun(err error) bool {
	var ce *CallError
	return errors.As(err, &ce) && ce.Unknown
}

// Client reaches the configured servers, one session each, opened on
// first use and reopened after a failure. It is safe for concurrent use.
type Client struct {
	opts    Options
	sdk     *sdk.Client
	servers map[string]*server
	names   []string
}

type server struct {
	cfg   ServerConfig
	mu    sync.Mutex // guards sess, tools and until; held while connecting
	sess  *sdk.ClientSession
	tools []Tool
	until time.Time
}

// New returns a client over servers (validated with stdio allowed or not).
// Nothing is connected yet. Errors: EINVALID.
func New(servers []ServerConfig, stdio bool, opts ...func(*Options)) (*Client, error) {
	if err := Validate(servers, stdio); err != nil {
		return nil, err
	}
	o := Options{ToolsTTL: DefaultToolsTTL, Now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	c := &Client{opts: o, servers: map[string]*server{}}
	c.sdk = sdk.NewClient(&sdk.Implementation{Name: "ora", Version: "1"}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}})
	for _, s := range servers {
		c.servers[s.Name] = &server{cfg: s}
		c.names = append(c.names, s.Name)
	}
	sort.Strings(c.names)
	return c, nil
}

// Servers returns the configured servers, sorted by name.
func (c *Client) Servers() []ServerConfig {
	out := make([]ServerConfig, 0, len(c.names))
	for _, n := range c.names {
		out = append(out, c.servers[n].cfg)
	}
	return out
}

// Server returns the configuration of the server named name.
func (c *Client) Server(name string) (ServerConfig, bool) {
	s, ok := c.servers[name]
	if !ok {
		return ServerConfig{}, false
	}
	return s.cfg, true
}

// Close ends every session (and stops the stdio servers).
func (c *Client) Close() error {
	var errs []error
	for _, n := range c.names {
		s := c.servers[n]
		s.mu.Lock()
		if s.sess != nil {
			errs = append(errs, s.sess.Close())
			s.sess = nil
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (c *Client) transport(cfg ServerConfig) (sdk.Transport, error) {
	if len(cfg.Command) > 0 {
		cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
		cmd.Dir = c.opts.Dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
		for k, v := range cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stderr = stderrLog{c.opts.Log, cfg.Name}
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	}
	hc := &http.Client{}
	if cfg.Connection != "" {
		if c.opts.HTTPClient == nil {
			return nil, ora.Invalid("connection", "server %s names connection %q, but no connections are wired", cfg.Name, cfg.Connection)
		}
		var err error
		if hc, err = c.opts.HTTPClient(cfg.Connection); err != nil {
			return nil, fmt.Errorf("connection %s: %w", cfg.Connection, err)
		}
	} else if c.opts.HTTPClient != nil {
		var err error
		if hc, err = c.opts.HTTPClient(""); err != nil {
			return nil, err
		}
	}
	// No standalone SSE stream: ora only asks and reads answers.
	return &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: hc, DisableStandaloneSSE: true}, nil
}

// session returns s's open session, opening one.
func (c *Client) session(ctx context.Context, s *server) (*sdk.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != nil {
		return s.sess, nil
	}
	t, err := c.transport(s.cfg)
	if err != nil {
		return nil, err
	}
	sess, err := c.sdk.Connect(ctx, t, &sdk.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	s.sess = sess
	return sess, nil
}

// drop closes sess, s's session, after a failure that may have broken
// it; the next use opens a new one.
func (c *Client) drop(s *server, sess *sdk.ClientSession, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != sess {
		return // already replaced
	}
	c.opts.Log.Warn("mcp: session closed after an error", "server", s.cfg.Name, "err", cause)
	_ = s.sess.Close()
	s.sess = nil
}

// broken reports whether err leaves the session unusable: anything but an
// answer from the server or the caller's own deadline.
func broken(err error) bool {
	var we *jsonrpc.Error
	return !errors.As(err, &we) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// Tools lists a server's tools (cached for Options.ToolsTTL), within the
// server's timeout. Errors: ENOTFOUND (no such server), EINVALID (a
// connection that is not wired), ETRANSIENT (the server could not be
// reached or did not answer).
func (c *Client) Tools(ctx context.Context, name string) ([]Tool, error) {
	s, ok := c.servers[name]
	if !ok {
		return nil, ora.Errorf(ora.ENOTFOUND, "mcp: no server %q", name)
	}
	if c.opts.Listed != nil {
		return c.opts.Listed[name], nil
	}
	s.mu.Lock()
	tools, fresh := s.tools, c.opts.Now().Before(s.until)
	s.mu.Unlock()
	if tools != nil && fresh {
		return tools, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout())
	defer cancel()
	var out []Tool
	for attempt := 0; ; attempt++ {
		sess, err := c.session(ctx, s)
		if err == nil {
			out, err = list(ctx, sess, name)
			if err != nil && broken(err) {
				c.drop(s, sess, err)
			}
		}
		if err == nil {
			break
		}
		if attempt == 0 && errors.Is(err, sdk.ErrSessionMissing) {
			continue // the server forgot the session: open a new one once
		}
		if ora.ErrorCode(err) == ora.EINVALID {
			return nil, fmt.Errorf("mcp: %s: %w", name, err)
		}
		return nil, ora.Errorf(ora.ETRANSIENT, "mcp: %s: list tools: %v", name, err)
	}
	s.mu.Lock()
	s.tools, s.until = out, c.opts.Now().Add(c.opts.ToolsTTL)
	s.mu.Unlock()
	return out, nil
}

func list(ctx context.Context, sess *sdk.ClientSession, server string) ([]Tool, error) {
	var out []Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
		}
		tool := Tool{Server: server, Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema}
		if t.Annotations != nil {
			tool.ReadOnly = t.Annotations.ReadOnlyHint
			if tool.Title == "" {
				tool.Title = t.Annotations.Title
			}
		}
		out = append(out, tool)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Lists returns every server's tool list by server name (Tools of each),
// what Options.Listed takes back: `ora motor record` keeps it with the
// golden set's recordings. Errors: those of Tools, naming the server.
func (c *Client) Lists(ctx context.Context) (map[string][]Tool, error) {
	out := map[string][]Tool{}
	for _, n := range c.names {
		ts, err := c.Tools(ctx, n)
		if err != nil {
			return nil, err
		}
		out[n] = ts
	}
	return out, nil
}

// ReasonerTools lists, over every server, the tools the reasoner may call:
// those annotated read-only and those the server's reasoner_write_tools
// names. A server that cannot be listed is left out and named in the
// error; the tools of the others are returned with it.
func (c *Client) ReasonerTools(ctx context.Context) ([]Tool, error) {
	var out []Tool
	var errs []error
	for _, n := range c.names {
		ts, err := c.Tools(ctx, n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cfg := c.servers[n].cfg
		for _, t := range ts {
			if t.ReadOnly || cfg.ReasonerMayWrite(t.Name) {
				out = append(out, t)
			}
		}
	}
	return out, errors.Join(errs...)
}

// Call calls a server's tool with args (a JSON object; empty means {})
// and meta in the request's _meta, within the server's timeout. A tool
// that reports a failure is a Result with IsError, not an error. Errors:
// ENOTFOUND (no such server), EINVALID (args is not an object),
// *CallError for a call that got no result (MayHaveRun tells whether it
// may have reached the server).
func (c *Client) Call(ctx context.Context, name, tool string, args json.RawMessage, meta map[string]any) (Result, error) {
	s, ok := c.servers[name]
	if !ok {
		return Result{}, ora.Errorf(ora.ENOTFOUND, "mcp: no server %q", name)
	}
	if c.opts.Listed != nil && c.opts.Answer != nil {
		out, err := c.opts.Answer(ctx, name, tool, args)
		if err != nil {
			return Result{}, &CallError{Server: name, Tool: tool, Err: err}
		}
		var flag struct {
			IsError bool `json:"isError"`
		}
		_ = json.Unmarshal(out, &flag)
		return Result{JSON: out, Digest: ora.Digest(out), Bytes: len(out), IsError: flag.IsError}, nil
	}
	if c.opts.Listed != nil {
		return Result{}, ora.Invalid("mcp", "%s/%s: this client holds recorded tool lists only and calls no server", name, tool)
	}
	var arguments map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &arguments); err != nil || arguments == nil {
			return Result{}, ora.Invalid("arguments", "must be a JSON object")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout())
	defer cancel()
	for attempt := 0; ; attempt++ {
		sess, err := c.session(ctx, s)
		if err != nil {
			return Result{}, &CallError{Server: name, Tool: tool, Err: err}
		}
		res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: arguments, Meta: meta})
		if err == nil {
			return bound(res, s.cfg.ResultLimit())
		}
		if broken(err) {
			c.drop(s, sess, err)
		}
		if attempt == 0 && errors.Is(err, sdk.ErrSessionMissing) {
			continue // answered 404: the call never ran; open a new session once
		}
		return Result{}, &CallError{Server: name, Tool: tool, Unknown: sentUnanswered(err), Err: err}
	}
}

// sentUnanswered reports whether a call that failed may have reached the
// server: not when the server answered with an error, the session was
// missing, or no connection could be made.
func sentUnanswered(err error) bool {
	var we *jsonrpc.Error
	if errors.As(err, &we) || errors.Is(err, sdk.ErrSessionMissing) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	var dns *net.DNSError
	return !errors.As(err, &dns)
}

// bound encodes a tool's answer with sorted keys and cuts it to limit.
func bound(res *sdk.CallToolResult, limit int) (Result, error) {
	b, err := canonical(struct {
		Content           []sdk.Content `json:"content"`
		StructuredContent any           `json:"structuredContent,omitempty"`
		IsError           bool          `json:"isError,omitempty"`
	}{res.Content, res.StructuredContent, res.IsError})
	if err != nil {
		return Result{}, ora.Errorf(ora.EINTERNAL, "mcp: encode result: %v", err)
	}
	out := Result{JSON: b, Digest: ora.Digest(b), Bytes: len(b), IsError: res.IsError}
	if len(b) > limit {
		out.Truncated = true
		out.JSON, _ = canonical(map[string]any{"truncated": true, "bytes": len(b), "digest": out.Digest, "head": string(b[:limit])})
	}
	return out, nil
}

// canonical encodes v as JSON with sorted object keys.
func canonical(v any) ([]byte, error) {
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

// stderrLog writes what a stdio server prints on stderr to the log, one
// warning per write, each cut to 2 KiB.
type stderrLog struct {
	log    *slog.Logger
	server string
}

func (w stderrLog) Write(b []byte) (int, error) {
	msg := strings.TrimSpace(string(b[:min(len(b), 2048)]))
	if msg != "" {
		w.log.Warn("mcp: server stderr", "server", w.server, "text", msg)
	}
	return len(b), nil
}
