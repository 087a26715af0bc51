package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// EnvServers is the environment variable the reason and act Lambdas read
// the server list from: a JSON array of ServerConfig (HTTP servers only).
// The CDK stack sets it from the context key ora:mcpServers.
const EnvServers = "ORA_MCP_SERVERS"

// Bounds of a call.
const (
	// DefaultTimeout bounds one call when a server sets no timeout_seconds.
	DefaultTimeout = 10 * time.Second
	// MaxTimeout is the longest a call may be given (the actor's
	// idempotency lock must outlast it).
	MaxTimeout = 60 * time.Second
	// DefaultMaxResultBytes bounds a result kept or sent to the model when a
	// server sets no max_result_bytes.
	DefaultMaxResultBytes = 16 * 1024
	// MaxResultBytesLimit is the largest max_result_bytes accepted.
	MaxResultBytesLimit = 256 * 1024
)

// ServerConfig is one entry of `mcp_servers`: an MCP server reached over
// stdio (Command, `ora dev` only) or streamable HTTP (URL, both homes).
type ServerConfig struct {
	// Name identifies the server in tools_allowed ("mcp.<name>.<tool>"),
	// in mcp.call's parameters and in the records of each call.
	Name string `yaml:"name" json:"name"`
	// Command starts a local server speaking MCP on stdin/stdout: the
	// program and its arguments, run without a shell.
	Command []string `yaml:"command,omitempty" json:"command,omitempty"`
	// Env is the environment of Command beyond PATH and HOME (nothing else
	// of ora's environment reaches the server).
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// URL is a streamable HTTP endpoint (http or https).
	URL string `yaml:"url,omitempty" json:"url,omitempty"`
	// Connection names the connection whose credentials authenticate the
	// requests to URL.
	Connection string `yaml:"connection,omitempty" json:"connection,omitempty"`
	// TimeoutSeconds bounds one call (list or call); 0 means 10 s, more
	// than 60 is refused.
	TimeoutSeconds int `yaml:"timeout_seconds,omitempty" json:"timeout_seconds,omitempty"`
	// MaxResultBytes bounds the result of one call that is sent to the
	// model or kept as evidence; 0 means 16 KiB.
	MaxResultBytes int `yaml:"max_result_bytes,omitempty" json:"max_result_bytes,omitempty"`
	// ReasonerWriteTools lists tools the reasoner may call although the
	// server does not annotate them read-only. Empty (the default): the
	// reasoner calls read-only tools only.
	ReasonerWriteTools []string `yaml:"reasoner_write_tools,omitempty" json:"reasoner_write_tools,omitempty"`
	// ActTools lists the tools the actor's mcp.call may call on this
	// server ("*" for every tool). Empty (the default): none.
	ActTools []string `yaml:"act_tools,omitempty" json:"act_tools,omitempty"`
}

// Timeout is the bound of one call.
func (s ServerConfig) Timeout() time.Duration {
	if s.TimeoutSeconds <= 0 {
		return DefaultTimeout
	}
	return min(time.Duration(s.TimeoutSeconds)*time.Second, MaxTimeout)
}

// ResultLimit is the bound of one result, in bytes.
func (s ServerConfig) ResultLimit() int {
	if s.MaxResultBytes <= 0 {
		return DefaultMaxResultBytes
	}
	return min(s.MaxResultBytes, MaxResultBytesLimit)
}

// ActAllows reports whether mcp.call may call tool on this server.
func (s ServerConfig) ActAllows(tool string) bool {
	return slices.Contains(s.ActTools, "*") || slices.Contains(s.ActTools, tool)
}

// ReasonerMayWrite reports whether the configuration lets the reasoner call
// tool although it is not annotated read-only.
func (s ServerConfig) ReasonerMayWrite(tool string) bool {
	return slices.Contains(s.ReasonerWriteTools, tool)
}

var serverName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Validate checks one server. stdio says whether Command servers are
// possible in this home (`ora dev`: yes; Lambda: no). Errors: EINVALID
// naming the key.
func (s ServerConfig) Validate(stdio bool) error {
	if !serverName.MatchString(s.Name) {
		return ora.Invalid("name", "%q must be 1-32 of a-z, 0-9, _ and -, starting with a letter or digit", s.Name)
	}
	switch {
	case len(s.Command) > 0 && s.URL != "":
		return ora.Invalid("command", "server %s: set command (stdio) or url (streamable HTTP), not both", s.Name)
	case len(s.Command) > 0:
		if !stdio {
			return ora.Invalid("command", "server %s: stdio servers run only in ora dev; on AWS use a streamable HTTP url", s.Name)
		}
		if s.Command[0] == "" {
			return ora.Invalid("command", "server %s: the program is empty", s.Name)
		}
		if s.Connection != "" {
			return ora.Invalid("connection", "server %s: a connection authenticates HTTP servers only", s.Name)
		}
	case s.URL != "":
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return ora.Invalid("url", "server %s: %q is not an http(s) URL", s.Name, s.URL)
		}
		if u.User != nil {
			return ora.Invalid("url", "server %s: credentials in the URL are not allowed; name a connection", s.Name)
		}
		if len(s.Env) > 0 {
			return ora.Invalid("env", "server %s: env applies to stdio servers only", s.Name)
		}
	default:
		return ora.Invalid("url", "server %s: command (stdio) or url (streamable HTTP) is required", s.Name)
	}
	if s.TimeoutSeconds < 0 || time.Duration(s.TimeoutSeconds)*time.Second > MaxTimeout {
		return ora.Invalid("timeout_seconds", "server %s: %d is outside 0..%d", s.Name, s.TimeoutSeconds, int(MaxTimeout/time.Second))
	}
	if s.MaxResultBytes < 0 || s.MaxResultBytes > MaxResultBytesLimit {
		return ora.Invalid("max_result_bytes", "server %s: %d is outside 0..%d", s.Name, s.MaxResultBytes, MaxResultBytesLimit)
	}
	return nil
}

// Validate checks a server list: each server, and names used once.
// Errors: EINVALID whose field names the entry and key
// ("mcp_servers[1].url").
func Validate(servers []ServerConfig, stdio bool) error {
	seen := map[string]bool{}
	for i, s := range servers {
		if err := s.Validate(stdio); err != nil {
			var e *ora.Error
			if errors.As(err, &e) {
				return ora.Invalid(fmt.Sprintf("mcp_servers[%d].%s", i, e.Field), "%s", e.Message)
			}
			return fmt.Errorf("mcp_servers[%d]: %w", i, err)
		}
		if seen[s.Name] {
			return ora.Invalid(fmt.Sprintf("mcp_servers[%d].name", i), "%q is used twice", s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

// ServersFromEnv reads EnvServers (absent: no servers) and validates it
// for a Lambda: HTTP servers only. Errors: EINVALID.
func ServersFromEnv(getenv func(string) string) ([]ServerConfig, error) {
	raw := getenv(EnvServers)
	if raw == "" {
		return nil, nil
	}
	var out []ServerConfig
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, ora.Invalid(EnvServers, "not a JSON list of MCP servers: %v", err)
	}
	if err := Validate(out, false); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvServers, err)
	}
	return out, nil
}
