package act

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/ora-runtime/ora/shared/ora"
)

// Headers the http.request action sets on every request.
const (
	HeaderSignature      = "X-Ora-Signature"       // "sha256=" + hex HMAC-SHA256 of the body
	HeaderIdempotencyKey = "X-Ora-Idempotency-Key" // "<decision id>/<action index>", "/r<n>" added for the nth run an operator asked for after an unknown outcome
)

// HTTPParams are the parameters of the http.request action: either URL (an
// allow-listed host), or Connection and Path (under the connection's base
// URL, authenticated by it at send time). Query is added to the URL. Body is
// sent as it is when it is a JSON string, else as its JSON encoding.
type HTTPParams struct {
	URL        string            `json:"url,omitempty"`
	Connection string            `json:"connection,omitempty"`
	Path       string            `json:"path,omitempty"`
	Method     string            `json:"method,omitempty"` // default POST
	Query      map[string]string `json:"query,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       json.RawMessage   `json:"body,omitempty"`
}

// Connector resolves the connections http.request names; *connect.Set
// satisfies it.
type Connector interface {
	// Resolve returns the URL of path (with query) under the named
	// connection's base URL. Errors: ENOTFOUND, EINVALID, EFORBIDDEN
	// (outside the base).
	Resolve(name, path string, query url.Values) (*url.URL, error)
	// Client returns a copy of base that authenticates the connection's
	// requests at send time. Errors: ENOTFOUND.
	Client(name string, base *http.Client) (*http.Client, error)
	// Names returns the configured connections' names, sorted (what a
	// description of the action lists as its bounds).
	Names() []string
}

// Connections returns the names of the connections the action may use.
func (h *HTTPRequest) Connections() []string {
	if h.connections == nil {
		return nil
	}
	return h.connections.Names()
}

// HTTPRequest sends signed requests to allow-listed hosts and configured
// connections.
type HTTPRequest struct {
	cfg         HTTPConfig
	client      *http.Client
	connections Connector
	now         func() time.Time
}

// NewHTTPRequest returns the http.request action. client may be nil (a new
// client with cfg's timeout is used); its Timeout is set to cfg's when zero.
// connections may be nil (no connection is configured).
func NewHTTPRequest(cfg HTTPConfig, client *http.Client, connections ...Connector) *HTTPRequest {
	if client == nil {
		client = &http.Client{}
	}
	c := *client
	if c.Timeout == 0 {
		c.Timeout = cfg.Timeout()
	}
	// Never follow a redirect: its target passed no allow-list or forbidden
	// path check, and would receive the signed body. A 3xx is an answer like
	// any other non-2xx, so the action fails.
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client = &c
	h := &HTTPRequest{cfg: cfg, client: client, now: time.Now}
	if len(connections) > 0 {
		h.connections = connections[0]
	}
	return h
}

func (h *HTTPRequest) parse(params json.RawMessage) (HTTPParams, *url.URL, error) {
	var p HTTPParams
	if err := decodeParams(TypeHTTPRequest, params, &p); err != nil {
		return p, nil, err
	}
	for k := range p.Headers {
		if ora.CredentialHeader(k) {
			return p, nil, ora.Invalid(TypeHTTPRequest+".parameters.headers", "%q carries a credential: name a connection instead, which adds it at send time", k)
		}
	}
	if p.Method == "" {
		p.Method = http.MethodPost
	}
	p.Method = strings.ToUpper(p.Method)
	switch p.Method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return p, nil, ora.Invalid(TypeHTTPRequest+".parameters.method", "%q is not GET, POST, PUT, PATCH or DELETE", p.Method)
	}
	var query url.Values
	if len(p.Query) > 0 {
		query = url.Values{}
		for k, v := range p.Query {
			query.Set(k, v)
		}
	}
	if p.Connection != "" {
		if p.URL != "" {
			return p, nil, ora.Invalid(TypeHTTPRequest+".parameters.url", "give url or connection and path, not both")
		}
		if h.connections == nil {
			return p, nil, ora.Invalid(TypeHTTPRequest+".parameters.connection", "%q: no connection is configured", p.Connection)
		}
		u, err := h.connections.Resolve(p.Connection, p.Path, query)
		if err != nil {
			return p, nil, fmt.Errorf("http.request: %w", err)
		}
		return p, u, nil
	}
	if p.URL == "" {
		return p, nil, ora.Invalid(TypeHTTPRequest+".parameters.url", "required (or connection and path)")
	}
	if p.Path != "" {
		return p, nil, ora.Invalid(TypeHTTPRequest+".parameters.path", "needs a connection")
	}
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return p, nil, ora.Invalid(TypeHTTPRequest+".parameters.url", "%q is not an http(s) URL", p.URL)
	}
	if u.User != nil {
		return p, nil, ora.Invalid(TypeHTTPRequest+".parameters.url", "credentials in the URL are not allowed")
	}
	if query != nil {
		q := u.Query()
		for k, v := range query {
			q[k] = v
		}
		u.RawQuery = q.Encode()
	}
	if !slices.ContainsFunc(h.cfg.AllowedHosts, func(entry string) bool { return AllowedBy(entry, u) }) {
		return p, nil, ora.Errorf(ora.EFORBIDDEN, "http.request: %s://%s is not in the allow-list", u.Scheme, u.Host)
	}
	return p, u, nil
}

// defaultPorts are the ports a URL or an allow-list entry without one means.
var defaultPorts = map[string]string{"http": "80", "https": "443"}

// AllowedBy reports whether the allow-list entry admits u. An entry is
// "host", "host:port", "scheme://host" or "scheme://host:port"; scheme, host
// and port must match exactly, a missing port being the scheme's (80, 443):
// "api.example.com" admits https://api.example.com and
// http://api.example.com:80, never another port such as ora's own API.
func AllowedBy(entry string, u *url.URL) bool {
	raw := entry
	if !strings.Contains(raw, "://") {
		raw = "//" + raw
	}
	e, err := url.Parse(raw)
	if err != nil || e.Host == "" || e.User != nil || (e.Path != "" && e.Path != "/") {
		return false
	}
	if e.Scheme != "" && !strings.EqualFold(e.Scheme, u.Scheme) {
		return false
	}
	if !strings.EqualFold(e.Hostname(), u.Hostname()) {
		return false
	}
	want, got := e.Port(), u.Port()
	if want == "" {
		want = defaultPorts[strings.ToLower(u.Scheme)]
	}
	if got == "" {
		got = defaultPorts[strings.ToLower(u.Scheme)]
	}
	return want != "" && want == got
}

// Check validates the parameters and the host's allow-listing; the targets
// are the URL. Errors: EINVALID, EFORBIDDEN.
func (h *HTTPRequest) Check(params json.RawMessage) ([]string, error) {
	_, u, err := h.parse(params)
	if err != nil {
		return nil, err
	}
	return []string{u.String()}, nil
}

// Timeout is the longest a request takes (the configured timeout); the
// action's idempotency lock outlasts it.
func (h *HTTPRequest) Timeout() time.Duration { return h.cfg.Timeout() }

// Sign returns the X-Ora-Signature value of body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Run sends the request. A non-2xx answer is a failure carrying the status.
// A request that provably never left the process (see Outcomes) is a
// failure; one that may have reached the target without an answer is an
// *UnknownOutcomeError. Errors: EINVALID, EFORBIDDEN, a failure of the
// request.
func (h *HTTPRequest) Run(ctx context.Context, params json.RawMessage) (Receipt, error) {
	p, u, err := h.parse(params)
	if err != nil {
		return Receipt{}, err
	}
	var body []byte
	if len(p.Body) > 0 {
		var s string
		if json.Unmarshal(p.Body, &s) == nil {
			body = []byte(s)
		} else {
			body = p.Body
		}
	}
	rcpt := Receipt{Type: TypeHTTPRequest, Target: u.String(), Digest: ora.Digest(body)}
	notSent := func(format string, args ...any) (Receipt, error) {
		rcpt.At = h.now().UTC()
		return rcpt, fmt.Errorf("http.request: %s %s: not sent: %s", p.Method, u.Redacted(), fmt.Sprintf(format, args...))
	}
	// Go refuses a bad header at send time; checking first says so plainly.
	for k, v := range p.Headers {
		if !httpguts.ValidHeaderFieldName(k) {
			return notSent("invalid header name %q", k)
		}
		if !httpguts.ValidHeaderFieldValue(v) {
			return notSent("invalid value for header %q (a control character such as CR or LF)", k)
		}
	}
	client := h.client
	if p.Connection != "" {
		if client, err = h.connections.Client(p.Connection, h.client); err != nil {
			return notSent("%v", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout())
	defer cancel()
	// The request may have reached the target once a connection to it was
	// made (after DNS, the dial and the TLS handshake): before that, a
	// failure is proof it never left.
	ctx, connected := connectedTrace(ctx)
	req, err := http.NewRequestWithContext(ctx, p.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return notSent("%v", err)
	}
	for k, v := range p.Headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("Content-Type") == "" && len(body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(HeaderSignature, Sign(h.cfg.SigningSecret, body))
	if inv, ok := InvocationFrom(ctx); ok {
		req.Header.Set(HeaderIdempotencyKey, inv.Key)
	}
	resp, err := client.Do(req)
	if err != nil {
		rcpt.At = h.now().UTC()
		err = fmt.Errorf("http.request: %s %s: %w", p.Method, u.Redacted(), err)
		if connected() {
			// A timeout or a connection lost while waiting for the answer.
			return rcpt, &UnknownOutcomeError{Err: err}
		}
		if ora.ErrorCode(err) == ora.ETRANSIENT {
			return rcpt, err // a connection's secret or token could not be read: retried
		}
		return rcpt, fmt.Errorf("%w (%s: not sent)", err, NotSentReason(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	rcpt.StatusCode = resp.StatusCode
	rcpt.At = h.now().UTC()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return rcpt, fmt.Errorf("http.request: %s %s answered %d", p.Method, u.Redacted(), resp.StatusCode)
	}
	return rcpt, nil
}

// connectedTrace returns ctx with a trace that records when a connection to
// the target is made (after DNS, the dial and the TLS handshake), and a
// func that reports it: a request that failed before then provably never
// left; one that failed after may have reached the target.
func connectedTrace(ctx context.Context) (context.Context, func() bool) {
	var c atomic.Bool
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { c.Store(true) }}), c.Load
}
