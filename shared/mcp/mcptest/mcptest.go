// Package mcptest runs a small MCP server written with the official SDK,
// for tests: over streamable HTTP (httptest) or over stdio (the test
// binary itself, started again as the server). Its tools are shaped like an
// issue tracker's:
//
//	get_issue   read-only: {"number": int} -> the issue
//	search      read-only: {"query": string} -> a result of "size" bytes
//	slow        read-only: waits until the call is cancelled
//	add_label   changes: {"number", "label"} -> the labels and the _meta key
//	fail        changes: always answers isError
package mcptest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvServe, set to "1" in a test binary's environment, makes Serve run the
// server on stdin/stdout.
const EnvServe = "ORA_MCPTEST_SERVE"

// MetaKey is the _meta key add_label echoes (mcp.MetaIdempotencyKey).
const MetaKey = "ora/idempotency_key"

// Call is a call the server received.
type Call struct {
	Tool      string
	Arguments map[string]any
	Meta      map[string]any
}

// Server is the test server's state: the calls it received.
type Server struct {
	mu    sync.Mutex
	calls []Call
	// stop ends the slow tool's waits (the HTTP server's handler context
	// is not cancelled when a client gives up).
	stop chan struct{}
}

// Calls returns the calls received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) record(req *sdk.CallToolRequest, args map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{Tool: req.Params.Name, Arguments: args, Meta: req.Params.Meta})
}

type issueIn struct {
	Number int `json:"number" jsonschema:"the issue number"`
}

type issue struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	State  string `json:"state"`
}

type searchIn struct {
	Query string `json:"query"`
	Size  int    `json:"size,omitempty" jsonschema:"bytes of result text"`
}

type labelIn struct {
	Number int    `json:"number"`
	Label  string `json:"label"`
}

type labelOut struct {
	Number int      `json:"number"`
	Labels []string `json:"labels"`
	// IdempotencyKey echoes the call's _meta key, so a test can see it
	// reached a stdio server too.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// NewMCPServer returns the SDK server with the tools above; s records the
// calls.
func (s *Server) NewMCPServer() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	sdk.AddTool(srv, &sdk.Tool{Name: "get_issue", Description: "Read an issue by number.", Annotations: ro},
		func(_ context.Context, req *sdk.CallToolRequest, in issueIn) (*sdk.CallToolResult, issue, error) {
			s.record(req, map[string]any{"number": in.Number})
			return nil, issue{Number: in.Number, Title: fmt.Sprintf("Issue %d", in.Number), State: "open"}, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "search", Description: "Search issues.", Annotations: ro},
		func(_ context.Context, req *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, any, error) {
			s.record(req, map[string]any{"query": in.Query, "size": in.Size})
			text := "results for " + in.Query + ": " + strings.Repeat("x", in.Size)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "slow", Description: "Wait until cancelled.", Annotations: ro},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			s.record(req, nil)
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-s.stop:
				return nil, nil, errors.New("stopped")
			}
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "add_label", Description: "Add a label to an issue."},
		func(_ context.Context, req *sdk.CallToolRequest, in labelIn) (*sdk.CallToolResult, labelOut, error) {
			s.record(req, map[string]any{"number": in.Number, "label": in.Label})
			key, _ := req.Params.Meta[MetaKey].(string)
			return nil, labelOut{Number: in.Number, Labels: []string{in.Label}, IdempotencyKey: key}, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			s.record(req, nil)
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "label does not exist"}}}, nil, nil
		})
	return srv
}

// HTTP serves a new test server over streamable HTTP until the test ends
// and returns it with its URL.
func HTTP(t testing.TB) (*Server, string) {
	t.Helper()
	s, h := Handler(t)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(s.stop) }) // runs first: the slow calls end, so Close does not wait on them
	return s, srv.URL
}

// Handler returns a new test server and its streamable HTTP handler, for a
// test that serves it itself (at an address it chose before: a server that
// comes up late). The test closes its HTTP server before it ends.
func Handler(t testing.TB) (*Server, http.Handler) {
	t.Helper()
	s := &Server{stop: make(chan struct{})}
	mcpSrv := s.NewMCPServer()
	return s, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcpSrv }, nil)
}

// Serve runs the server on stdin/stdout and exits when EnvServe is "1";
// otherwise it returns at once. Call it first in a TestMain, so that the
// test binary started with EnvServe=1 is the stdio server.
func Serve() {
	if os.Getenv(EnvServe) != "1" {
		return
	}
	s := &Server{stop: make(chan struct{})}
	if err := s.NewMCPServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Command returns the argv and env of a stdio server config that runs this
// test binary as the server (its TestMain must call Serve).
func Command() ([]string, map[string]string) {
	return []string{os.Args[0]}, map[string]string{EnvServe: "1"}
}
