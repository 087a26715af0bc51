package act_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/connect"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// row returns the outcome the docs' table gives case c.
func row(t *testing.T, c string) string {
	t.Helper()
	for _, r := range act.Outcomes {
		if r.Case == c {
			return r.Outcome
		}
	}
	t.Fatalf("no row %q in act.Outcomes", c)
	return ""
}

// outcomeOf classifies what Run returned as the actor records it.
func outcomeOf(err error) string {
	var unknown *act.UnknownOutcomeError
	switch {
	case err == nil:
		return act.OutcomeSuccess
	case errors.As(err, &unknown):
		return act.OutcomeUnknown
	}
	return act.OutcomeFailure
}

// TestOutcomeTable drives each row of the outcome table through a real
// request and checks both the outcome and whether the target was reached.
func TestOutcomeTable(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/api/hang":
			<-r.Context().Done()
		case "/api/drop":
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // read the request, then hang up without an answer
		case "/api/fail":
			w.WriteHeader(http.StatusInternalServerError)
		case "/api/moved":
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusFound)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := closed.Addr().String()
	closed.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	conns, err := connect.New([]connect.Config{
		{Name: "api", URL: srv.URL + "/api", Auth: connect.Auth{Kind: connect.KindBearer, Secret: "bearer-outcome-secret"}},
		{Name: "secretless", URL: srv.URL + "/api", Auth: connect.Auth{Kind: connect.KindBearer}},
	}, connect.Literal{})
	if err != nil {
		t.Fatal(err)
	}
	// No DNS server is asked: the resolver's own dial fails, as it does when
	// the name cannot be resolved.
	noDNS := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Resolver: &net.Resolver{PreferGo: true,
		Dial: func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("no such host") }}}).DialContext}}
	cfg := act.HTTPConfig{AllowedHosts: []string{host, refused, "ora-test.invalid", "https://" + host}, SigningSecret: "signing-secret", TimeoutSeconds: 1}
	h := act.NewHTTPRequest(cfg, nil, conns)
	ctx := act.WithInvocation(context.Background(), act.Invocation{Key: "d1/0"})
	cases := []struct {
		name, row, params string
		client            *http.Client
		reached           bool
	}{
		{"2xx", "2xx answer", `{"connection":"api","path":"/ok"}`, nil, true},
		{"500", "other answer (3xx, 4xx, 5xx)", `{"connection":"api","path":"fail"}`, nil, true},
		{"302 not followed", "other answer (3xx, 4xx, 5xx)", `{"url":"` + srv.URL + `/api/moved"}`, nil, true},
		{"invalid header name", "invalid header name or value (e.g. CR/LF from a template)", `{"url":"` + srv.URL + `/x","headers":{"X Bad":"v"}}`, nil, false},
		{"invalid header value", "invalid header name or value (e.g. CR/LF from a template)", `{"url":"` + srv.URL + `/x","headers":{"X-Note":"a\r\nX-Injected: 1"}}`, nil, false},
		{"bad path escape", "URL or path that does not build, or leaves the connection's base URL", `{"connection":"api","path":"a%zz"}`, nil, false},
		{"path leaves the base", "URL or path that does not build, or leaves the connection's base URL", `{"connection":"api","path":"../admin"}`, nil, false},
		{"unknown connection", "unknown connection, or its secret cannot be read", `{"connection":"nope","path":"x"}`, nil, false},
		{"secret not set", "unknown connection, or its secret cannot be read", `{"connection":"secretless","path":"x"}`, nil, false},
		{"DNS failure", "DNS failure", `{"url":"http://ora-test.invalid/x"}`, noDNS, false},
		{"connection refused", "connection refused or unreachable", `{"url":"http://` + refused + `/x"}`, nil, false},
		{"TLS to a plain HTTP port", "TLS handshake failure (plain HTTP port, bad certificate)", `{"url":"https://` + host + `/x"}`, nil, false},
		{"timeout after connecting", "timeout or connection lost after the connection was made", `{"connection":"api","path":"hang"}`, nil, true},
		{"connection lost after sending", "timeout or connection lost after the connection was made", `{"connection":"api","path":"drop","method":"POST","body":{"a":1}}`, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hh := h
			if tc.client != nil {
				hh = act.NewHTTPRequest(cfg, tc.client, conns)
			}
			before := hits.Load()
			_, err := hh.Run(ctx, json.RawMessage(tc.params))
			if got, want := outcomeOf(err), row(t, tc.row); got != want {
				t.Errorf("outcome %s (%v), want %s", got, err, want)
			}
			if reached := hits.Load() > before; reached != tc.reached {
				t.Errorf("target reached: %v, want %v", reached, tc.reached)
			}
			if why := map[string]string{"DNS failure": "DNS failure: not sent", "connection refused": "connection refused: not sent",
				"TLS to a plain HTTP port": "TLS handshake failure: not sent"}[tc.name]; why != "" && (err == nil || !strings.Contains(err.Error(), why)) {
				t.Errorf("error %v, want it to say %q", err, why)
			}
			if err != nil && strings.Contains(err.Error(), "bearer-outcome-secret") {
				t.Errorf("the error holds the connection's secret: %v", err)
			}
		})
	}
}

func TestHTTPRequestConnection(t *testing.T) {
	var auth, path, query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, path, query = r.Header.Get("Authorization"), r.URL.Path, r.URL.RawQuery
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	conns, err := connect.New([]connect.Config{{Name: "github", URL: srv.URL, Auth: connect.Auth{Kind: connect.KindBearer, Secret: "ghp_connection-secret"}}}, connect.Literal{})
	if err != nil {
		t.Fatal(err)
	}
	// No allow-listed host: a connection is its own allow-list entry.
	h := act.NewHTTPRequest(act.HTTPConfig{SigningSecret: "signing-secret"}, nil, conns)
	params := json.RawMessage(`{"connection":"github","path":"/repos/o/r/issues/7/labels","query":{"per_page":"1"},"body":{"labels":["bug"]}}`)
	targets, err := h.Check(params)
	if err != nil || len(targets) != 1 || targets[0] != srv.URL+"/repos/o/r/issues/7/labels?per_page=1" {
		t.Fatalf("Check = %v, %v", targets, err)
	}
	r, err := h.Run(context.Background(), params)
	if err != nil || r.StatusCode != http.StatusCreated {
		t.Fatalf("Run = %+v, %v", r, err)
	}
	if auth != "Bearer ghp_connection-secret" || path != "/repos/o/r/issues/7/labels" || query != "per_page=1" {
		t.Errorf("target got Authorization %q, path %q, query %q", auth, path, query)
	}
	if b, _ := json.Marshal(r); strings.Contains(string(b), "ghp_connection-secret") {
		t.Errorf("the receipt holds the secret: %s", b)
	}
	for _, bad := range []string{
		`{"connection":"github","path":"x","headers":{"Authorization":"Bearer ghp_literal"}}`,
		`{"url":"` + srv.URL + `","headers":{"cookie":"session=1"}}`,
		`{"connection":"github","url":"` + srv.URL + `"}`,
	} {
		if _, err := h.Check(json.RawMessage(bad)); err == nil {
			t.Errorf("Check(%s) passed, want a refusal", bad)
		}
	}
}

// TestActNeverSentIsFailed: through the actor, a request that never left ends
// the decision failed, not unknown: nothing waits for a person to say whether
// it ran, and the error says why it was not sent.
func TestActNeverSentIsFailed(t *testing.T) {
	cases := []struct {
		name   string
		params func(f *fixture) map[string]any
		reason string
	}{
		{"TLS to a plain HTTP port", func(f *fixture) map[string]any {
			return map[string]any{"url": strings.Replace(f.target.srv.URL, "http:", "https:", 1) + "/x"}
		}, "TLS handshake failure: not sent"},
		{"CR LF in a templated header", func(f *fixture) map[string]any {
			return map[string]any{"url": f.target.srv.URL + "/x", "headers": map[string]string{"X-Title": "bug\r\nX-Injected: 1"}}
		}, "invalid value for header"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, http.StatusOK)
			u := strings.TrimPrefix(f.target.srv.URL, "http://")
			reg := act.Standard(act.Config{HTTP: act.HTTPConfig{AllowedHosts: []string{u, "https://" + u}, SigningSecret: secret, TimeoutSeconds: 1}}, act.NewLogNotify(quiet), act.Folder{Root: f.root}, f.db, nil)
			svc := act.New(f.db, reg, f.once, func(o *act.Options) { o.Log = quiet })
			acttest.Record(t, f.db, acttest.Decision("d1", "s1", fullScope, ora.Action{Type: act.TypeHTTPRequest, Parameters: acttest.Params(t, tc.params(f))}))
			_, err := svc.Act(context.Background(), "s1", "d1")
			var af *taskerr.ActionFailed
			if !errors.As(taskerr.From(err), &af) || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("Act: %v, want ActionFailed saying %q", err, tc.reason)
			}
			if got := acttest.Status(t, f.db, "d1"); got != ora.StatusFailed {
				t.Errorf("status %s, want %s", got, ora.StatusFailed)
			}
			if n := f.target.hits.Load(); n != 0 {
				t.Errorf("the target got %d requests, want 0", n)
			}
		})
	}
}

func TestHTTPRequestConnections(t *testing.T) {
	conns, err := connect.New([]connect.Config{
		{Name: "github", URL: "https://api.github.com", Auth: connect.Auth{Kind: connect.KindBearer}},
		{Name: "billing", URL: "https://billing.example.com", Auth: connect.Auth{Kind: connect.KindBearer}},
	}, connect.Literal{})
	if err != nil {
		t.Fatal(err)
	}
	if got := act.NewHTTPRequest(act.HTTPConfig{}, nil, conns).Connections(); strings.Join(got, ",") != "billing,github" {
		t.Errorf("Connections() = %v, want billing, github", got)
	}
	if got := act.NewHTTPRequest(act.HTTPConfig{}, nil).Connections(); len(got) != 0 {
		t.Errorf("Connections() without any = %v", got)
	}
}
