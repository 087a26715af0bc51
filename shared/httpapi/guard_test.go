package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
)

// A page elsewhere whose name rebinds to 127.0.0.1 sends its own Host: on a
// loopback listen address only the loopback names on the listening port are
// served.
func TestLoopbackHosts(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	h := LoopbackHosts(ok)
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 18080}
	tests := []struct {
		name, method, path, host string
		want                     int
	}{
		{"127.0.0.1 on the port", "GET", "/signals/s", "127.0.0.1:18080", 200},
		{"localhost on the port", "GET", "/console/", "localhost:18080", 200},
		{"LOCALHOST in capitals", "GET", "/console/", "LOCALHOST:18080", 200},
		{"[::1] on the port", "GET", "/signals/s", "[::1]:18080", 200},
		{"a rebound name", "GET", "/signals/s", "rebind.attacker.example:18080", 421},
		{"a rebound name without a port", "GET", "/console/", "rebind.attacker.example", 421},
		{"loopback on another port", "GET", "/signals/s", "127.0.0.1:9999", 421},
		{"a LAN address", "GET", "/signals/s", "192.168.1.20:18080", 421},
		{"a rebound name posting an approval", "POST", "/decisions/d/approve", "rebind.attacker.example:18080", 421},
		{"a webhook through a tunnel", "POST", "/webhooks/github", "abc.tunnel.example", 200},
		{"a read of the webhooks path is still checked", "GET", "/webhooks/github", "abc.tunnel.example", 421},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			req.Host = tt.host
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(local)))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("got %d %s, want %d", rec.Code, rec.Body, tt.want)
			}
			if tt.want == 421 && !strings.Contains(rec.Body.String(), "not this server's loopback address") {
				t.Errorf("body does not say why: %s", rec.Body)
			}
		})
	}
}

// A cross-site form post never reaches a state-changing route; clients that
// are not browsers (no Origin, no Sec-Fetch-Site) and the server's own pages
// do.
func TestSameOrigin(t *testing.T) {
	reached := 0
	h := SameOrigin(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ }))
	tests := []struct {
		name, method string
		header       map[string]string
		want         int
	}{
		{"curl", "POST", nil, 200},
		{"same origin", "POST", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8080"}, 200},
		{"cross site", "POST", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://attacker.example"}, 403},
		{"same site, other origin", "POST", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"an old browser's foreign Origin", "POST", map[string]string{"Origin": "https://attacker.example"}, 403},
		{"a cross-site read", "GET", map[string]string{"Sec-Fetch-Site": "cross-site"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := reached
			req := httptest.NewRequest(tt.method, "http://127.0.0.1:8080/decisions/d/approve", nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("got %d %s, want %d", rec.Code, rec.Body, tt.want)
			}
			if got := reached - before; (tt.want == 200) != (got == 1) {
				t.Errorf("handler reached %d times for status %d", got, rec.Code)
			}
		})
	}
}

// GET /signals/{id} reads what the id names under that thing's own scope:
// an incident needs the operator's scopes, a proposal orientation.read in its
// namespace, a wave the read scope.
func TestSignalPseudoIDScopes(t *testing.T) {
	s, _ := server(t)
	s.ReadAuth = true
	s.Authorize = StaticTokens([]Token{
		{Token: "orientation-reader", Subject: "r", Scopes: []string{ScopeOrientationRead}},
		{Token: "operator-reader", Subject: "o", Scopes: []string{ScopeOperatorRead}},
		{Token: "operator", Subject: "op", Scopes: []string{ScopeOperate}},
		{Token: "team-b-reader", Subject: "b", Namespace: "team-b", Scopes: []string{ScopeOrientationRead}},
		{Token: "admin", Subject: "a", Namespace: "team-b", Scopes: []string{ScopeOrientationRead, ScopeOrientationAdmin}},
	})
	s.Namespace = TokenNamespaces([]Token{{Token: "team-b-reader", Namespace: "team-b"}, {Token: "admin", Namespace: "team-b"}})
	proposal := json.RawMessage(`{"proposal_id":"p1","requested_by":"agent","namespace":"main"}`)
	s.Entries = fakeEntries(func(_ context.Context, id string) ([]ora.Entry, error) {
		switch {
		case strings.HasPrefix(id, "incident-"):
			return []ora.Entry{{SignalID: id, Kind: ora.KindOperatorDecision, Body: json.RawMessage(`{"incident":"x"}`)}}, nil
		case strings.HasPrefix(id, "orientation-proposal:"):
			return []ora.Entry{{SignalID: id, Kind: ora.KindProfileProposal, Body: proposal}}, nil
		}
		return []ora.Entry{{SignalID: id, Kind: ora.KindSignalReceived, Body: json.RawMessage(`{}`)}}, nil
	})
	tests := []struct {
		name, id, token string
		want            int
	}{
		{"an incident with orientation.read", "incident-0123456789abcdef", "orientation-reader", 403},
		{"an incident with ora.read", "incident-0123456789abcdef", "operator-reader", 200},
		{"an incident with ora.operate", "incident-0123456789abcdef", "operator", 200},
		{"an incident without a token", "incident-0123456789abcdef", "", 401},
		{"the motor with orientation.read", "motor", "orientation-reader", 403},
		{"a proposal with orientation.read in its namespace", "orientation-proposal:p1", "orientation-reader", 200},
		{"a proposal with ora.read only", "orientation-proposal:p1", "operator-reader", 403},
		{"a proposal of another namespace", "orientation-proposal:p1", "team-b-reader", 403},
		{"a proposal of another namespace with orientation.admin", "orientation-proposal:p1", "admin", 200},
		{"a wave with orientation.read", "sig-1", "orientation-reader", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/signals/"+tt.id, nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Errorf("got %d %s, want %d", rec.Code, rec.Body, tt.want)
			}
		})
	}
}

type fakeOrientation struct {
	Orientation // the routes this test does not call
	views       map[string]ora.ProposalView
	approved    []string
}

func (f *fakeOrientation) Proposal(_ context.Context, id string) (ora.ProposalView, error) {
	v, ok := f.views[id]
	if !ok {
		return ora.ProposalView{}, ora.Errorf(ora.ENOTFOUND, "proposal %s", id)
	}
	return v, nil
}

func (f *fakeOrientation) Approve(_ context.Context, id string, by ora.Principal) (ora.ProposalView, error) {
	f.approved = append(f.approved, id+"/"+by.Subject)
	return f.views[id], nil
}

func (f *fakeOrientation) Reject(_ context.Context, id, _ string, by ora.Principal) (ora.ProposalView, error) {
	f.approved = append(f.approved, "rejected "+id+"/"+by.Subject)
	return f.views[id], nil
}

// Approving a proposal needs another person than its proposer, in the
// proposal's namespace (or orientation.admin).
func TestProposalApprovalSeparation(t *testing.T) {
	tokens := []Token{
		{Token: "team-b-token", Subject: "team-b", Namespace: "team-b", Scopes: []string{ScopeOrientationPropose, ScopeOrientationApprove}},
		{Token: "team-b-lead", Subject: "lead-b", Namespace: "team-b", Scopes: []string{ScopeOrientationApprove}},
		{Token: "main-approver", Subject: "alice", Scopes: []string{ScopeOrientationApprove}},
		{Token: "admin-token", Subject: "root", Namespace: "ops", Scopes: []string{ScopeOrientationApprove, ScopeOrientationAdmin}},
	}
	views := map[string]ora.ProposalView{
		"own":  {Proposal: ora.ProfileProposal{ID: "own", RequestedBy: "team-b", Namespace: "team-b"}, Status: ora.ProposalPending},
		"main": {Proposal: ora.ProfileProposal{ID: "main", RequestedBy: "agent", Namespace: "main"}, Status: ora.ProposalPending},
	}
	tests := []struct {
		name, path, token string
		want              int
		wantBody          string
	}{
		{"the proposer approves their own proposal", "/api/orientation/proposals/own/approve", "team-b-token", 403, "cannot approve it too"},
		{"another namespace's proposal", "/api/orientation/proposals/main/approve", "team-b-token", 403, "namespace main"},
		{"another namespace's proposal, rejected", "/api/orientation/proposals/main/reject", "team-b-lead", 403, "namespace main"},
		{"another approver of the namespace", "/api/orientation/proposals/own/approve", "team-b-lead", 200, ""},
		{"an approver of main", "/api/orientation/proposals/main/approve", "main-approver", 200, ""},
		{"orientation.admin in any namespace", "/api/orientation/proposals/own/approve", "admin-token", 200, ""},
		{"an unknown proposal", "/api/orientation/proposals/none/approve", "main-approver", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &fakeOrientation{views: views}
			s := &Server{Orientation: o, Authorize: StaticTokens(tokens), Namespace: TokenNamespaces(tokens)}
			req := httptest.NewRequest("POST", tt.path, nil)
			req.Header.Set("Authorization", "Bearer "+tt.token)
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.want || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("got %d %s, want %d with %q", rec.Code, rec.Body, tt.want, tt.wantBody)
			}
			if (tt.want == 200) != (len(o.approved) == 1) {
				t.Errorf("decisions made: %v", o.approved)
			}
		})
	}
}

// /healthz fails (503, the cause logged not shown) while the stores cannot
// take a write.
func TestHealthz(t *testing.T) {
	for name, tt := range map[string]struct {
		health func(context.Context) error
		want   int
	}{
		"no check":          {nil, 200},
		"a store writes":    {func(context.Context) error { return nil }, 200},
		"a store is broken": {func(context.Context) error { return errors.New("sqlite: cannot write to /data/ledger.db: read-only") }, 503},
	} {
		t.Run(name, func(t *testing.T) {
			s := &Server{Health: tt.health, Logger: slog.New(slog.DiscardHandler)}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
			if rec.Code != tt.want || strings.Contains(rec.Body.String(), "/data") {
				t.Errorf("got %d %s, want %d without the cause", rec.Code, rec.Body, tt.want)
			}
		})
	}
}
