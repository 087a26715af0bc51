package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Client returns a copy of base (nil: http.DefaultClient's settings) whose
// requests are authenticated for the connection: a request outside the base
// URL fails with ErrOutside before anything is sent, and an
// oauth2_client_credentials connection fetches its token (cached until
// expiry) and, on a 401, fetches a new one and sends the request once more.
func (c *Connection) Client(base *http.Client) *http.Client {
	var cl http.Client
	if base != nil {
		cl = *base
	}
	next := cl.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cl.Transport = transport{c: c, next: next}
	return &cl
}

type transport struct {
	c    *Connection
	next http.RoundTripper
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.c.Inside(req.URL) {
		closeBody(req)
		return nil, fmt.Errorf("connection %s: %s %s: %w", t.c.cfg.Name, req.Method, req.URL.Redacted(), ErrOutside)
	}
	r, used, err := t.c.authorize(req, "")
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || t.c.cfg.Auth.Kind != KindClientCredentials {
		return resp, err
	}
	// The token was refused (revoked, or expired early): fetch a new one and
	// send the request once more, when its body can be sent again.
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil
	}
	r2, _, err := t.c.authorize(req, used)
	if err != nil {
		return resp, nil // answer with the 401 rather than a token error
	}
	if req.GetBody != nil {
		if r2.Body, err = req.GetBody(); err != nil {
			return resp, nil
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return t.next.RoundTrip(r2)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// authorize returns a copy of req carrying the credential, and the token it
// used. stale is a token the target refused: a cached token equal to it is
// fetched again.
func (c *Connection) authorize(req *http.Request, stale string) (*http.Request, string, error) {
	ctx := req.Context()
	r := req.Clone(ctx)
	a := c.cfg.Auth
	if a.Kind == KindClientCredentials {
		tok, err := c.accessToken(ctx, stale)
		if err != nil {
			return nil, "", err
		}
		r.Header.Set("Authorization", "Bearer "+tok)
		return r, tok, nil
	}
	secret, err := c.src.Secret(ctx, c.cfg)
	if err != nil {
		return nil, "", fmt.Errorf("connection %s: read secret: %w", c.cfg.Name, err)
	}
	switch a.Kind {
	case KindBearer:
		r.Header.Set("Authorization", "Bearer "+secret)
	case KindAPIKey:
		r.Header.Set(a.Header, secret)
	case KindBasic:
		r.SetBasicAuth(a.Username, secret)
	}
	return r, "", nil
}

// errorCode is the shape of an RFC 6749 section 5.2 error code.
var errorCode = regexp.MustCompile(`^[a-z_]{1,64}$`)

// tokenAnswer is a token endpoint's answer (RFC 6749 section 5.1).
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
}

// accessToken returns the cached token, or fetches one when there is none,
// it expires within a margin, or it is the stale one the target refused.
func (c *Connection) accessToken(ctx context.Context, stale string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Now()
	if c.token != "" && c.token != stale && (c.expires.IsZero() || now.Before(c.expires)) {
		return c.token, nil
	}
	c.token = ""
	secret, err := c.src.Secret(ctx, c.cfg)
	if err != nil {
		return "", fmt.Errorf("connection %s: read client secret: %w", c.cfg.Name, err)
	}
	a := c.cfg.Auth
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(a.Scopes) > 0 {
		form.Set("scope", strings.Join(a.Scopes, " "))
	}
	// The token request must not count as the action's request (the actor
	// traces whether its request left): it runs on a context with the same
	// deadline and cancellation but none of the caller's values.
	tctx, cancel := detach(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(tctx, http.MethodPost, a.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", ora.Invalid("connections("+c.cfg.Name+").auth.token_url", "%v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// client_secret_basic, which every authorization server supports (RFC
	// 6749 section 2.3.1), with the id and secret form-encoded first.
	req.SetBasicAuth(url.QueryEscape(a.ClientID), url.QueryEscape(secret))
	resp, err := c.opts.TokenClient.Do(req)
	if err != nil {
		return "", ora.Errorf(ora.ETRANSIENT, "connection %s: token request: %v", c.cfg.Name, redactErr(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", ora.Errorf(ora.ETRANSIENT, "connection %s: read token answer: %v", c.cfg.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		if !errorCode.MatchString(e.Error) {
			e.Error = "" // only an RFC 6749 error code is repeated, never free text
		}
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return "", ora.Errorf(ora.ETRANSIENT, "connection %s: token endpoint answered %d %s", c.cfg.Name, resp.StatusCode, e.Error)
		}
		return "", ora.Errorf(ora.EUNAUTHORIZED, "connection %s: token endpoint answered %d %s", c.cfg.Name, resp.StatusCode, e.Error)
	}
	var t tokenAnswer
	if err := json.Unmarshal(b, &t); err != nil || t.AccessToken == "" {
		return "", ora.Errorf(ora.EUNAUTHORIZED, "connection %s: the token endpoint's answer holds no access_token", c.cfg.Name)
	}
	if t.TokenType != "" && !strings.EqualFold(t.TokenType, "bearer") {
		return "", ora.Errorf(ora.EUNAUTHORIZED, "connection %s: token type %q is not bearer", c.cfg.Name, t.TokenType)
	}
	c.opts.Secrets.Add("connection:"+c.cfg.Name+":token", t.AccessToken)
	c.token, c.expires = t.AccessToken, time.Time{}
	if t.ExpiresIn > 0 {
		life := time.Duration(t.ExpiresIn) * time.Second
		// Refresh a little early: the token must still be valid when the
		// request arrives.
		c.expires = now.Add(life - min(life/10, 30*time.Second))
	}
	return c.token, nil
}

// detach returns a context with ctx's deadline and cancellation and none of
// its values.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.Background())
	if dl, ok := ctx.Deadline(); ok {
		var c2 context.CancelFunc
		out, c2 = context.WithDeadline(out, dl)
		prev := cancel
		cancel = func() { c2(); prev() }
	}
	stop := context.AfterFunc(ctx, cancel)
	return out, func() { stop(); cancel() }
}

// redactErr drops the URL a *url.Error carries (a token URL may hold a
// tenant id, never a secret, but the message stays short).
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
