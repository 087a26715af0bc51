package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/mcp/mcptest"
	"github.com/ora-runtime/ora/shared/ora"
)

func TestMain(m *testing.M) {
	mcptest.Serve() // the stdio server, when this binary is started as one
	os.Exit(m.Run())
}

// homes returns one server config per transport: the SDK's server over
// streamable HTTP (with its recorder) and over stdio (this test binary).
func homes(t *testing.T) map[string]struct {
	cfg mcp.ServerConfig
	srv *mcptest.Server // nil for stdio: the server runs in another process
} {
	t.Helper()
	srv, url := mcptest.HTTP(t)
	argv, env := mcptest.Command()
	return map[string]struct {
		cfg mcp.ServerConfig
		srv *mcptest.Server
	}{
		"streamable HTTP": {mcp.ServerConfig{Name: "tracker", URL: url}, srv},
		"stdio":           {mcp.ServerConfig{Name: "tracker", Command: argv, Env: env}, nil},
	}
}

func newClient(t *testing.T, cfg mcp.ServerConfig) *mcp.Client {
	t.Helper()
	c, err := mcp.New([]mcp.ServerConfig{cfg}, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestTools(t *testing.T) {
	ctx := context.Background()
	for name, h := range homes(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("lists every tool with its read-only hint", func(t *testing.T) {
				ts, err := newClient(t, h.cfg).Tools(ctx, "tracker")
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]bool{}
				for _, tl := range ts {
					got[tl.Name] = tl.ReadOnly
					if tl.Server != "tracker" || !json.Valid(tl.InputSchema) {
						t.Errorf("tool %+v: want server tracker and a JSON schema", tl)
					}
				}
				want := map[string]bool{"get_issue": true, "search": true, "slow": true, "add_label": false, "fail": false}
				if len(got) != len(want) {
					t.Fatalf("tools %v, want %v", got, want)
				}
				for n, ro := range want {
					if r, ok := got[n]; !ok || r != ro {
						t.Errorf("tool %s read-only=%v (listed %v), want %v", n, r, ok, ro)
					}
				}
			})
			t.Run("the reasoner gets read-only tools only", func(t *testing.T) {
				ts, err := newClient(t, h.cfg).ReasonerTools(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, tl := range ts {
					if !tl.ReadOnly {
						t.Errorf("tool %s is not read-only, offered by default", tl.Name)
					}
				}
				if len(ts) != 3 {
					t.Errorf("%d tools, want the 3 read-only ones", len(ts))
				}
			})
			t.Run("unless the config names a write tool", func(t *testing.T) {
				cfg := h.cfg
				cfg.ReasonerWriteTools = []string{"add_label"}
				ts, err := newClient(t, cfg).ReasonerTools(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, tl := range ts {
					names = append(names, tl.Name)
				}
				if strings.Join(names, ",") != "add_label,get_issue,search,slow" {
					t.Errorf("tools %v, want add_label and the read-only ones", names)
				}
			})
		})
	}
}

func TestCall(t *testing.T) {
	ctx := context.Background()
	meta := map[string]any{mcp.MetaIdempotencyKey: "dec-1/0"}
	for name, h := range homes(t) {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, h.cfg)
			t.Run("success carries the idempotency key in _meta", func(t *testing.T) {
				res, err := c.Call(ctx, "tracker", "add_label", json.RawMessage(`{"number":7,"label":"bug"}`), meta)
				if err != nil {
					t.Fatal(err)
				}
				var got struct {
					Structured struct {
						Labels []string `json:"labels"`
						Key    string   `json:"idempotency_key"`
					} `json:"structuredContent"`
				}
				if err := json.Unmarshal(res.JSON, &got); err != nil {
					t.Fatal(err)
				}
				if res.IsError || res.Truncated || got.Structured.Key != "dec-1/0" || len(got.Structured.Labels) != 1 {
					t.Errorf("result %s: want the label and the key dec-1/0", res.JSON)
				}
				if res.Digest != ora.Digest(res.JSON) || res.Bytes != len(res.JSON) {
					t.Errorf("digest %s bytes %d: want the digest and size of %s", res.Digest, res.Bytes, res.JSON)
				}
				if h.srv != nil {
					calls := h.srv.Calls()
					if len(calls) == 0 || calls[len(calls)-1].Meta[mcp.MetaIdempotencyKey] != "dec-1/0" {
						t.Errorf("the server got %+v, want _meta %s=dec-1/0", calls, mcp.MetaIdempotencyKey)
					}
				}
			})
			t.Run("isError is a result, not an error", func(t *testing.T) {
				res, err := c.Call(ctx, "tracker", "fail", nil, meta)
				if err != nil || !res.IsError || !strings.Contains(string(res.JSON), "label does not exist") {
					t.Errorf("result %s, err %v: want an isError result", res.JSON, err)
				}
			})
			t.Run("a result over the limit is cut, the digest is the whole one's", func(t *testing.T) {
				res, err := c.Call(ctx, "tracker", "search", json.RawMessage(`{"query":"q","size":40000}`), nil)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Truncated || len(res.JSON) > mcp.DefaultMaxResultBytes+512 || res.Bytes <= 40000 || res.Digest == ora.Digest(res.JSON) {
					t.Errorf("truncated=%v, %d bytes kept of %d: want at most ~%d kept", res.Truncated, len(res.JSON), res.Bytes, mcp.DefaultMaxResultBytes)
				}
			})
			t.Run("an unknown tool is the server's answer: not an unknown outcome", func(t *testing.T) {
				_, err := c.Call(ctx, "tracker", "no_such_tool", nil, nil)
				if err == nil || mcp.MayHaveRun(err) {
					t.Errorf("err %v (may have run %v): want a failure that did not run", err, mcp.MayHaveRun(err))
				}
			})
			t.Run("arguments must be an object", func(t *testing.T) {
				_, err := c.Call(ctx, "tracker", "get_issue", json.RawMessage(`[1]`), nil)
				if ora.ErrorCode(err) != ora.EINVALID {
					t.Errorf("err %v, want EINVALID", err)
				}
			})
			t.Run("no such server", func(t *testing.T) {
				_, err := c.Call(ctx, "other", "get_issue", nil, nil)
				if ora.ErrorCode(err) != ora.ENOTFOUND {
					t.Errorf("err %v, want ENOTFOUND", err)
				}
			})
			t.Run("a timeout may have run", func(t *testing.T) {
				cfg := h.cfg
				cfg.TimeoutSeconds = 5 // the session starts within it too: room for a loaded machine
				_, err := newClient(t, cfg).Call(ctx, "tracker", "slow", nil, nil)
				if !mcp.MayHaveRun(err) {
					t.Errorf("err %v: want an unknown outcome", err)
				}
			})
		})
	}
}

// TestCallNeverSent: a server that cannot be reached never got the call.
func TestCallNeverSent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	cases := map[string]mcp.ServerConfig{
		"connection refused":  {Name: "down", URL: closed},
		"command not found":   {Name: "down", Command: []string{"/nonexistent/mcp-server"}},
		"command exits early": {Name: "down", Command: []string{"/bin/false"}},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := newClient(t, cfg).Call(context.Background(), "down", "add_label", nil, nil)
			var ce *mcp.CallError
			if !errors.As(err, &ce) || mcp.MayHaveRun(err) {
				t.Errorf("err %v (may have run %v): want a *CallError that never ran", err, mcp.MayHaveRun(err))
			}
		})
	}
}

func TestConnection(t *testing.T) {
	_, url := mcptest.HTTP(t)
	cfg := mcp.ServerConfig{Name: "tracker", URL: url, Connection: "tracker-token"}
	t.Run("a connection nobody wired is refused", func(t *testing.T) {
		_, err := newClient(t, cfg).Tools(context.Background(), "tracker")
		if ora.ErrorCode(err) != ora.EINVALID {
			t.Errorf("err %v, want EINVALID", err)
		}
	})
	t.Run("the wired client carries the credential", func(t *testing.T) {
		var seen []string
		c, err := mcp.New([]mcp.ServerConfig{cfg}, false, func(o *mcp.Options) {
			o.HTTPClient = func(name string) (*http.Client, error) {
				seen = append(seen, name)
				return &http.Client{Transport: bearer{"s3cret"}}, nil
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Tools(context.Background(), "tracker"); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 1 || seen[0] != "tracker-token" {
			t.Errorf("connections resolved %v, want [tracker-token]", seen)
		}
	})
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name    string
		servers []mcp.ServerConfig
		stdio   bool
		key     string // "" when valid
	}{
		{"http in a Lambda", []mcp.ServerConfig{{Name: "gh", URL: "https://mcp.example.com/mcp"}}, false, ""},
		{"stdio in ora dev", []mcp.ServerConfig{{Name: "fs", Command: []string{"mcp-fs", "--root", "."}}}, true, ""},
		{"stdio in a Lambda", []mcp.ServerConfig{{Name: "fs", Command: []string{"mcp-fs"}}}, false, "mcp_servers[0].command"},
		{"both transports", []mcp.ServerConfig{{Name: "x", Command: []string{"a"}, URL: "https://h/mcp"}}, true, "mcp_servers[0].command"},
		{"neither", []mcp.ServerConfig{{Name: "x"}}, true, "mcp_servers[0].url"},
		{"not http", []mcp.ServerConfig{{Name: "x", URL: "ftp://h/mcp"}}, true, "mcp_servers[0].url"},
		{"credentials in the URL", []mcp.ServerConfig{{Name: "x", URL: "https://u:p@h/mcp"}}, true, "mcp_servers[0].url"},
		{"bad name", []mcp.ServerConfig{{Name: "Git Hub", URL: "https://h/mcp"}}, true, "mcp_servers[0].name"},
		{"twice", []mcp.ServerConfig{{Name: "x", URL: "https://h/mcp"}, {Name: "x", URL: "https://i/mcp"}}, true, "mcp_servers[1].name"},
		{"timeout too long", []mcp.ServerConfig{{Name: "x", URL: "https://h/mcp", TimeoutSeconds: 61}}, true, "mcp_servers[0].timeout_seconds"},
		{"result bound too large", []mcp.ServerConfig{{Name: "x", URL: "https://h/mcp", MaxResultBytes: 1 << 20}}, true, "mcp_servers[0].max_result_bytes"},
		{"env on http", []mcp.ServerConfig{{Name: "x", URL: "https://h/mcp", Env: map[string]string{"A": "b"}}}, true, "mcp_servers[0].env"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := mcp.Validate(c.servers, c.stdio)
			if c.key == "" {
				if err != nil {
					t.Errorf("err %v, want valid", err)
				}
				return
			}
			var e *ora.Error
			if !errors.As(err, &e) || e.Code != ora.EINVALID || e.Field != c.key {
				t.Errorf("err %v, want EINVALID on %s", err, c.key)
			}
		})
	}
}

func TestServersFromEnv(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == mcp.EnvServers {
				return v
			}
			return ""
		}
	}
	got, err := mcp.ServersFromEnv(env(`[{"name":"gh","url":"https://mcp.example.com/mcp","act_tools":["add_label"]}]`))
	if err != nil || len(got) != 1 || !got[0].ActAllows("add_label") || got[0].ActAllows("delete_repo") {
		t.Errorf("servers %+v, err %v", got, err)
	}
	if _, err := mcp.ServersFromEnv(env(`[{"name":"fs","command":["mcp-fs"]}]`)); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("a stdio server on AWS: err %v, want EINVALID", err)
	}
	if got, err := mcp.ServersFromEnv(env("")); err != nil || got != nil {
		t.Errorf("unset: %v %v, want none", got, err)
	}
}

// TestStdioServerStderrIsLogged: what a stdio server prints on stderr
// (why it failed to start, usually) reaches ora's log.
func TestStdioServerStderrIsLogged(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(b)
	}), nil))
	c, err := mcp.New([]mcp.ServerConfig{{Name: "broken", Command: []string{"/bin/sh", "-c", "echo 'missing API key' >&2; exit 3"}}}, true,
		func(o *mcp.Options) { o.Log = log })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Tools(context.Background(), "broken"); err == nil {
		t.Fatal("a server that exits listed tools")
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "missing API key") || !strings.Contains(buf.String(), "server=broken") {
		t.Errorf("log %q, want the server's stderr with its name", buf.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
