package embedded

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/observe"
)

// serve starts a runtime with the given server bounds on a loopback port and
// returns its address; it stops when t ends.
func serve(t *testing.T, bounds func(*ServerConfig)) string {
	t.Helper()
	cfg := testConfig(t, t.TempDir())
	cfg.Listen = "127.0.0.1:0"
	bounds(&cfg.Server)
	if err := cfg.Server.validate(); err != nil {
		t.Fatal(err)
	}
	r, err := New(context.Background(), cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, func(a string) { addr <- a }) }()
	t.Cleanup(func() {
		cancel()
		<-done
		r.Close()
	})
	select {
	case a := <-addr:
		return a
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	return ""
}

// closedByServer reads from c until the server closes it, failing t if that
// does not happen within bound (a generous bound, not a timing assertion).
func closedByServer(t *testing.T, c net.Conn, bound time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(bound))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %v", bound)
	}
}

// A client trickling its body, or sitting idle on a keep-alive connection,
// loses its connection; with every connection slot held by tricklers, the
// server still answers once their read timeouts free the slots.
func TestSlowClients(t *testing.T) {
	short := func(s *ServerConfig) {
		s.ReadHeaderTimeout = Duration(300 * time.Millisecond)
		s.ReadTimeout = Duration(500 * time.Millisecond)
		s.IdleTimeout = Duration(500 * time.Millisecond)
		s.MaxConnections = 4
	}
	addr := serve(t, short)

	t.Run("trickled body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /webhooks/demo HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", addr)
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		closedByServer(t, c, 20*time.Second)
	})

	t.Run("trickled headers", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n", addr)
		closedByServer(t, c, 20*time.Second)
	})

	t.Run("idle keep-alive", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz: %v %v", resp, err)
		}
		resp.Body.Close()
		closedByServer(t, c, 20*time.Second)
	})

	t.Run("every slot held by slow clients", func(t *testing.T) {
		for range 8 { // twice the connection limit
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "POST /webhooks/demo HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n", addr)
		}
		client := &http.Client{Timeout: 20 * time.Second}
		resp, err := client.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("healthz while slow clients held every slot: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("healthz: %d", resp.StatusCode)
		}
	})

	t.Run("oversized headers", func(t *testing.T) {
		addr := serve(t, func(s *ServerConfig) { short(s); s.MaxHeaderBytes = 1024 })
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/healthz", nil)
		req.Header.Set("X-Big", strings.Repeat("a", 8<<10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("8 KiB of headers over a 1 KiB limit: %d, want 431", resp.StatusCode)
		}
	})
}

func TestServerConfigValidation(t *testing.T) {
	for key, f := range map[string]func(*ServerConfig){
		"server.read_timeout":     func(s *ServerConfig) { s.ReadTimeout = 0 },
		"server.idle_timeout":     func(s *ServerConfig) { s.IdleTimeout = -1 },
		"server.max_header_bytes": func(s *ServerConfig) { s.MaxHeaderBytes = 10 },
		"server.max_connections":  func(s *ServerConfig) { s.MaxConnections = 0 },
	} {
		s := DefaultServerConfig()
		f(&s)
		if err := s.validate(); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: got %v, want an error naming it", key, err)
		}
	}
}

// Idle keep-alive connections never lock new clients out: with every slot
// of the default bounds held by an idle keep-alive (256 of them, idle
// timeout 60 s), a webhook still answers at once, on a fresh connection.
func TestIdleConnectionsGiveWay(t *testing.T) {
	addr := serve(t, func(*ServerConfig) {})
	n := DefaultServerConfig().MaxConnections
	idle := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range idle {
			c.Close()
		}
	})
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("keep-alive %d: %v", i, err)
		}
		resp.Body.Close()
	}
	cfg := testConfig(t, t.TempDir())
	src, _ := cfg.Source("demo")
	body := []byte(`{"confidence":"high"}`)
	h, _ := observe.SignDelivery(src, body, time.Now(), "through-the-idle-crowd")
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/webhooks/demo", strings.NewReader(string(body)))
	req.Header = h
	// Far under the 60 s idle timeout that used to free the slots.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("webhook with %d idle keep-alives: %v", n, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("webhook: %d, want 202", resp.StatusCode)
	}
}

// One remote address holds at most its share of the connections; its own
// idle connection gives way first, and a busy one makes it wait its turn.
func TestConnectionsPerAddress(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := limit(inner, 10, 2)
	defer l.Close()
	const remote = "203.0.113.7"
	mk := func() *limitConn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return &limitConn{Conn: a, l: l, addr: remote}
	}
	first, second := mk(), mk()
	for _, c := range []*limitConn{first, second} {
		if err := l.admit(c); err != nil {
			t.Fatal(err)
		}
	}
	third := mk()
	if err := l.admit(third); !errors.Is(err, errOverShare) {
		t.Fatalf("a third busy connection of one address: %v, want refused", err)
	}
	l.connState(first, http.StateIdle)
	if err := l.admit(third); err != nil {
		t.Fatalf("with one of its connections idle: %v", err)
	}
	l.mu.Lock()
	_, kept := l.conns[first]
	count := l.byAddr[remote]
	l.mu.Unlock()
	if kept || count != 2 {
		t.Errorf("after admitting the third: idle one kept %v, address holds %d, want it closed and 2", kept, count)
	}
}

// The console settles as the development approver only on a loopback
// address, and only with the published token configured.
func TestDevApprover(t *testing.T) {
	dev := DefaultConfig().Tokens[0].Token
	for _, tt := range []struct {
		name, listen string
		tokens       []httpapi.Token
		want         string
	}{
		{"loopback, built-in defaults", "127.0.0.1:8080", DefaultConfig().Tokens, dev},
		{"any address", "0.0.0.0:8080", DefaultConfig().Tokens, ""},
		{"tokens of your own", "127.0.0.1:8080", []httpapi.Token{{Token: "my-own-approver", Scopes: []string{httpapi.ScopeApprove}}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runtime{cfg: Config{Listen: tt.listen, Tokens: tt.tokens}}
			if got := r.devApprover(); got != tt.want {
				t.Errorf("devApprover() = %q, want %q", got, tt.want)
			}
		})
	}
}
