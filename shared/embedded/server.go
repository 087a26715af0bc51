package embedded

import (
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
	// MaxConnections bounds the connections served at once; more wait to be
	// accepted (default 256).
	MaxConnections int `yaml:"max_connections"`
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

// limitListener accepts at most n connections at once; Accept waits for one
// to close.
type limitListener struct {
	net.Listener
	slots  chan struct{}
	done   chan struct{}
	closed sync.Once
}

func limit(l net.Listener, n int) net.Listener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close closes the listener and ends a waiting Accept.
func (l *limitListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back once, when closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
