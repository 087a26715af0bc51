package embedded

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// ServerConfig bounds the HTTP server of `ora dev` against slow and idle
// clients (the `server` key).
type ServerConfig struct {
	// ReadHeaderTimeout bounds reading a request's headers (default 10s).
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	// ReadTimeout bounds reading a whole request, body included (default 30s).
	ReadTimeout Duration `yaml:"read_timeout"`
	// WriteTimeout bounds a request from the end of its headers to the end
	// of the answer (default 60s).
	WriteTimeout Duration `yaml:"write_timeout"`
	// IdleTimeout closes a keep-alive connection idle this long (default 60s).
	IdleTimeout Duration `yaml:"idle_timeout"`
	// MaxHeaderBytes bounds a request's headers (default 64 KiB).
	MaxHeaderBytes int `yaml:"max_header_bytes"`
	// MaxConnections bounds the connections served at once (default 256).
	// Idle keep-alive connections give their slot to new ones: when every
	// slot is taken, the connection idle longest is closed; only when all
	// are busy does a new one wait.
	MaxConnections int `yaml:"max_connections"`
	// MaxConnectionsPerClient bounds the connections of one remote address
	// other than this machine's own (default 32); over it, that address's
	// idle connection is closed or the new one refused.
	MaxConnectionsPerClient int `yaml:"max_connections_per_client"`
}

// DefaultServerConfig is the server's bounds when the config names none.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		ReadHeaderTimeout: Duration(10 * time.Second),
		ReadTimeout:       Duration(30 * time.Second),
		WriteTimeout:      Duration(60 * time.Second),
		IdleTimeout:       Duration(60 * time.Second),
		MaxHeaderBytes:    64 << 10,
		MaxConnections:    256,

		MaxConnectionsPerClient: 32,
	}
}

// validate checks every bound is positive; errors name the key.
func (s ServerConfig) validate() error {
	for key, d := range map[string]Duration{
		"server.read_header_timeout": s.ReadHeaderTimeout, "server.read_timeout": s.ReadTimeout,
		"server.write_timeout": s.WriteTimeout, "server.idle_timeout": s.IdleTimeout,
	} {
		if d <= 0 {
			return ora.Invalid(key, "must be positive")
		}
	}
	if s.MaxHeaderBytes < 1024 {
		return ora.Invalid("server.max_header_bytes", "must be at least 1024")
	}
	if s.MaxConnections < 1 {
		return ora.Invalid("server.max_connections", "must be at least 1")
	}
	if s.MaxConnectionsPerClient < 1 {
		return ora.Invalid("server.max_connections_per_client", "must be at least 1")
	}
	return nil
}

// httpServer returns the server for h under the bounds.
func (s ServerConfig) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: time.Duration(s.ReadHeaderTimeout),
		ReadTimeout:       time.Duration(s.ReadTimeout),
		WriteTimeout:      time.Duration(s.WriteTimeout),
		IdleTimeout:       time.Duration(s.IdleTimeout),
		MaxHeaderBytes:    s.MaxHeaderBytes,
	}
}

// connLimiter is the listener of `ora dev`: it serves at most max
// connections at once, and an idle keep-alive connection never holds a slot
// a new connection needs. When every slot is taken, Accept closes the
// connection idle longest and admits the new one; only when every
// connection is busy does it wait for one to finish. A remote address other
// than a loopback one holds at most perAddr connections: over that, its own
// idle connection is closed, or the new one is refused.
type connLimiter struct {
	net.Listener
	max, perAddr int

	mu     sync.Mutex
	conns  map[*limitConn]struct{}
	byAddr map[string]int
	freed  chan struct{} // signalled when a connection closes or goes idle
	done   chan struct{}
	closed sync.Once
}

func limit(l net.Listener, max, perAddr int) *connLimiter {
	return &connLimiter{Listener: l, max: max, perAddr: perAddr, conns: map[*limitConn]struct{}{},
		byAddr: map[string]int{}, freed: make(chan struct{}, 1), done: make(chan struct{})}
}

// Accept accepts the next connection, making room for it as above.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitConn{Conn: c, l: l, addr: remoteHost(c)}
		if err := l.admit(lc); err != nil {
			if errors.Is(err, net.ErrClosed) {
				c.Close()
				return nil, err
			}
			c.Close() // over its address's share: refused
			continue
		}
		return lc, nil
	}
}

// errOverShare refuses a connection of an address holding its share.
var errOverShare = errors.New("over the address's share of connections")

// admit takes a slot for c, closing idle connections or waiting as needed.
func (l *connLimiter) admit(c *limitConn) error {
	for {
		l.mu.Lock()
		if c.addr != "" && l.perAddr > 0 && l.byAddr[c.addr] >= l.perAddr {
			victim := l.oldestIdle(c.addr)
			l.mu.Unlock()
			if victim == nil {
				return errOverShare
			}
			victim.Close()
			continue
		}
		if len(l.conns) < l.max {
			l.conns[c] = struct{}{}
			l.byAddr[c.addr]++
			l.mu.Unlock()
			return nil
		}
		victim := l.oldestIdle("")
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
			continue
		}
		select {
		case <-l.freed:
		case <-l.done:
			return net.ErrClosed
		}
	}
}

// oldestIdle is the connection idle longest (of addr, or of any address
// when addr is ""), nil when none is idle. l.mu is held.
func (l *connLimiter) oldestIdle(addr string) *limitConn {
	var oldest *limitConn
	for c := range l.conns {
		if c.idleSince.IsZero() || (addr != "" && c.addr != addr) {
			continue
		}
		if oldest == nil || c.idleSince.Before(oldest.idleSince) {
			oldest = c
		}
	}
	return oldest
}

// connState is the http.Server's ConnState hook: it tells the limiter which
// connections sit idle between requests.
func (l *connLimiter) connState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	switch st {
	case http.StateIdle:
		lc.idleSince = time.Now()
	case http.StateActive, http.StateNew:
		lc.idleSince = time.Time{}
	}
	l.mu.Unlock()
	if st == http.StateIdle {
		l.signal()
	}
}

func (l *connLimiter) signal() {
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

func (l *connLimiter) release(c *limitConn) {
	l.mu.Lock()
	if _, ok := l.conns[c]; ok {
		delete(l.conns, c)
		if l.byAddr[c.addr]--; l.byAddr[c.addr] <= 0 {
			delete(l.byAddr, c.addr)
		}
	}
	l.mu.Unlock()
	l.signal()
}

// Close closes the listener and ends a waiting Accept.
func (l *connLimiter) Close() error {
	l.closed.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// remoteHost is c's remote IP, "" for a loopback one: the connections of
// this machine share no per-address limit (a browser, the CLI and a tunnel
// all come from 127.0.0.1).
func remoteHost(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsLoopback() {
		return ""
	}
	return host
}

// limitConn gives its slot back once, when closed.
type limitConn struct {
	net.Conn
	l         *connLimiter
	addr      string
	idleSince time.Time // zero while a request is being served; guarded by l.mu
	once      sync.Once
}

// Close closes the connection and frees its slot.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}
