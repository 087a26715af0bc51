package connect

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/ora-runtime/ora/shared/ora"
)

// The auth kinds.
const (
	KindBearer            = "bearer"                    // Authorization: Bearer <secret>
	KindAPIKey            = "api_key"                   // <header>: <secret>
	KindBasic             = "basic"                     // Authorization: Basic base64(<username>:<secret>)
	KindClientCredentials = "oauth2_client_credentials" // Authorization: Bearer <token from token_url>
)

// Auth says how a connection authenticates.
type Auth struct {
	Kind string `yaml:"kind" json:"kind"`
	// Header carries the key of an api_key connection (e.g. X-Api-Key).
	Header string `yaml:"header,omitempty" json:"header,omitempty"`
	// Username of a basic connection.
	Username string `yaml:"username,omitempty" json:"username,omitempty"`
	// Secret is the token, key, password or client secret. In a config file
	// it is the value, "${NAME}" (the environment variable NAME) or
	// "file:PATH" (the file's content, trailing newline trimmed); on AWS it
	// is empty and the connection's SecretARN holds it.
	Secret string `yaml:"secret,omitempty" json:"secret,omitempty"`
	// TokenURL, ClientID and Scopes of an oauth2_client_credentials
	// connection (RFC 6749 section 4.4); Secret is the client secret.
	TokenURL string   `yaml:"token_url,omitempty" json:"token_url,omitempty"`
	ClientID string   `yaml:"client_id,omitempty" json:"client_id,omitempty"`
	Scopes   []string `yaml:"scopes,omitempty" json:"scopes,omitempty"`
}

// Config is one connection, as the `connections:` key of the configuration
// holds it.
type Config struct {
	Name string `yaml:"name" json:"name"`
	// URL is the base every request goes under: scheme, host, port and path
	// prefix ("https://api.github.com", "https://api.example.com/v2/").
	URL  string `yaml:"url" json:"url"`
	Auth Auth   `yaml:"auth" json:"auth"`
	// SecretARN names the Secrets Manager secret holding Auth.Secret on AWS
	// (set by the stack, one secret per connection).
	SecretARN string `yaml:"secret_arn,omitempty" json:"secret_arn,omitempty"`
}

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// Validate checks the connection; needSecret is false where the secret lives
// outside the config (AWS). Errors: EINVALID naming the key.
func (c Config) Validate(needSecret bool) error {
	if !validName.MatchString(c.Name) {
		return ora.Invalid("connections.name", "%q must be lower-case letters, digits, - or _", c.Name)
	}
	where := "connections(" + c.Name + ")"
	if _, err := parseBase(c.URL); err != nil {
		return ora.Invalid(where+".url", "%v", err)
	}
	a := c.Auth
	switch a.Kind {
	case KindBearer:
	case KindAPIKey:
		if a.Header == "" || !httpguts.ValidHeaderFieldName(a.Header) {
			return ora.Invalid(where+".auth.header", "%q is not a header name", a.Header)
		}
	case KindBasic:
		if a.Username == "" || strings.Contains(a.Username, ":") {
			return ora.Invalid(where+".auth.username", "required, without ':'")
		}
	case KindClientCredentials:
		u, err := url.Parse(a.TokenURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return ora.Invalid(where+".auth.token_url", "%q is not an http(s) URL", a.TokenURL)
		}
		if a.ClientID == "" {
			return ora.Invalid(where+".auth.client_id", "required")
		}
	default:
		return ora.Invalid(where+".auth.kind", "%q is not bearer, api_key, basic or oauth2_client_credentials", a.Kind)
	}
	if needSecret && a.Secret == "" {
		return ora.Invalid(where+".auth.secret", "required")
	}
	return nil
}

// ResolveSecret expands a config file's secret reference: "${NAME}" reads the
// environment variable NAME, "file:PATH" the file (trailing newline trimmed);
// anything else is the value itself. Errors: EINVALID (an unset variable, an
// unreadable or empty file).
func ResolveSecret(ref string, getenv func(string) string) (string, error) {
	switch {
	case strings.HasPrefix(ref, "${") && strings.HasSuffix(ref, "}"):
		name := ref[2 : len(ref)-1]
		v := getenv(name)
		if v == "" {
			return "", ora.Invalid("secret", "environment variable %s is not set", name)
		}
		return v, nil
	case strings.HasPrefix(ref, "file:"):
		b, err := os.ReadFile(strings.TrimPrefix(ref, "file:"))
		if err != nil {
			return "", ora.Invalid("secret", "%v", err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", ora.Invalid("secret", "%s is empty", strings.TrimPrefix(ref, "file:"))
		}
		return v, nil
	}
	return ref, nil
}

// parseBase parses a base URL: http(s), a host, no user, query or fragment;
// its path always ends with "/".
func parseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL", raw)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL with a host", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q may not hold credentials, a query or a fragment", raw)
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if u.Port() == defaultPort[u.Scheme] {
		u.Host = u.Hostname()
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		u.RawPath = ""
	}
	return u, nil
}

var defaultPort = map[string]string{"http": "80", "https": "443"}

// Source reads a connection's secret at send time.
type Source interface {
	// Secret returns the secret of c. Errors: EINVALID (not configured),
	// ETRANSIENT (worth retrying), the store's errors.
	Secret(ctx context.Context, c Config) (string, error)
}

// Literal is the Source of a config file: the secret is in the Config
// (already expanded by ResolveSecret).
type Literal struct{}

// Secret returns c.Auth.Secret.
func (Literal) Secret(_ context.Context, c Config) (string, error) {
	if c.Auth.Secret == "" {
		return "", ora.Invalid("connections("+c.Name+").auth.secret", "not set")
	}
	return c.Auth.Secret, nil
}

// Set is the configured connections.
type Set struct {
	byName map[string]*Connection
}

// Options tune a Set.
type Options struct {
	// Secrets receives the tokens OAuth 2.0 servers mint, as they appear,
	// so every writer redacts them. Optional.
	Secrets *ora.Secrets
	// TokenClient fetches OAuth 2.0 tokens. Default: a client with a 10 s
	// timeout that follows no redirect.
	TokenClient *http.Client
	// Now returns the current time (token expiry). Default time.Now.
	Now func() time.Time
}

// New returns the connections of cfgs, reading secrets from src. Errors:
// EINVALID (a bad or duplicate connection).
func New(cfgs []Config, src Source, opts ...func(*Options)) (*Set, error) {
	o := Options{Now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	if o.TokenClient == nil {
		o.TokenClient = &http.Client{Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	s := &Set{byName: map[string]*Connection{}}
	for _, c := range cfgs {
		if err := c.Validate(false); err != nil {
			return nil, err
		}
		if _, dup := s.byName[c.Name]; dup {
			return nil, ora.Invalid("connections("+c.Name+").name", "configured twice")
		}
		base, _ := parseBase(c.URL)
		s.byName[c.Name] = &Connection{cfg: c, base: base, src: src, opts: o}
	}
	return s, nil
}

// Names returns the connections' names, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, 0, len(s.byName))
	for n := range s.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the connection named name. Errors: ENOTFOUND.
func (s *Set) Lookup(name string) (*Connection, error) {
	if s != nil {
		if c, ok := s.byName[name]; ok {
			return c, nil
		}
	}
	return nil, ora.Errorf(ora.ENOTFOUND, "connection %q is not configured", name)
}

// Resolve returns the URL of path (with query) under the named connection's
// base URL. Errors: ENOTFOUND (no such connection), EINVALID (a path that is
// not a URL path), EFORBIDDEN (outside the base).
func (s *Set) Resolve(name, path string, query url.Values) (*url.URL, error) {
	c, err := s.Lookup(name)
	if err != nil {
		return nil, err
	}
	return c.Resolve(path, query)
}

// ClientFor returns a new client that authenticates the named connection's
// requests, or a plain client for "" (no connection). A nil Set has no
// connections. It fits mcp.Options.HTTPClient. Errors: ENOTFOUND.
func (s *Set) ClientFor(name string) (*http.Client, error) {
	if name == "" {
		return &http.Client{}, nil
	}
	if s == nil {
		return nil, ora.Errorf(ora.ENOTFOUND, "connection %q: no connections are configured", name)
	}
	return s.Client(name, &http.Client{})
}

// Client returns a copy of base whose requests go through the named
// connection (see Connection.Client). Errors: ENOTFOUND.
func (s *Set) Client(name string, base *http.Client) (*http.Client, error) {
	c, err := s.Lookup(name)
	if err != nil {
		return nil, err
	}
	return c.Client(base), nil
}

// Connection is one configured connection. It is safe for concurrent use.
type Connection struct {
	cfg  Config
	base *url.URL
	src  Source
	opts Options

	mu      sync.Mutex
	token   string
	expires time.Time
}

// Name returns the connection's name.
func (c *Connection) Name() string { return c.cfg.Name }

// Base returns the connection's base URL (its path ends with "/").
func (c *Connection) Base() string { return c.base.String() }

// Resolve returns the URL of p (relative to the base; a leading "/" is
// ignored) with query. Errors: EINVALID (not a path: a scheme, a host, a
// query, a fragment or a bad escape), EFORBIDDEN (dot segments or encoded
// slashes that climb out of the base).
func (c *Connection) Resolve(p string, query url.Values) (*url.URL, error) {
	if strings.ContainsAny(p, "?#\\") || strings.Contains(p, "://") || strings.HasPrefix(p, "//") {
		return nil, ora.Invalid("path", "%q must be a path under the connection's URL, with no query, fragment or host", p)
	}
	rel, err := url.Parse("./" + strings.TrimPrefix(p, "/"))
	if err != nil {
		return nil, ora.Invalid("path", "%q is not a URL path: %v", p, err)
	}
	u := c.base.ResolveReference(rel)
	if query != nil {
		u.RawQuery = query.Encode()
	}
	if !c.Inside(u) {
		return nil, ora.Errorf(ora.EFORBIDDEN, "connection %s: %q leaves its base URL %s", c.cfg.Name, p, c.base)
	}
	return u, nil
}

// Inside reports whether u lies under the connection's base URL: the same
// scheme, host and port, and a canonical path (decoded, dot segments
// resolved) under the base's path.
func (c *Connection) Inside(u *url.URL) bool {
	if !strings.EqualFold(u.Scheme, c.base.Scheme) || !strings.EqualFold(u.Hostname(), c.base.Hostname()) {
		return false
	}
	port := func(v *url.URL) string {
		if p := v.Port(); p != "" {
			return p
		}
		return defaultPort[strings.ToLower(v.Scheme)]
	}
	if port(u) != port(c.base) {
		return false
	}
	// The target decodes the path once: an encoded slash or backslash, or a
	// dot segment (encoded or not), could climb out of the base after that.
	esc := strings.ToLower(u.EscapedPath())
	if strings.Contains(esc, "%2f") || strings.Contains(esc, "%5c") {
		return false
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	return strings.HasPrefix(p, c.base.Path) || p+"/" == c.base.Path
}

// ErrOutside is the error a connection's client returns for a request outside
// its base URL; nothing was sent.
var ErrOutside = ora.Errorf(ora.EFORBIDDEN, "the request is outside the connection's base URL")

// EnvConnections is the environment variable a Lambda reads its connections
// from: a JSON array of Config, each with its SecretARN and no Secret.
const EnvConnections = "ORA_CONNECTIONS"

// FromEnv decodes the connections in ORA_CONNECTIONS (none when unset) and
// validates each. Errors: EINVALID.
func FromEnv(getenv func(string) string) ([]Config, error) {
	raw := strings.TrimSpace(getenv(EnvConnections))
	if raw == "" {
		return nil, nil
	}
	var out []Config
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, ora.Invalid(EnvConnections, "not a JSON array of connections: %v", err)
	}
	for _, c := range out {
		if err := c.Validate(false); err != nil {
			return nil, err
		}
		if c.Auth.Secret != "" {
			return nil, ora.Invalid(EnvConnections, "connection %s holds its secret: name a Secrets Manager secret (secret_arn) instead", c.Name)
		}
		if c.SecretARN == "" {
			return nil, ora.Invalid(EnvConnections, "connection %s has no secret_arn", c.Name)
		}
	}
	return out, nil
}
