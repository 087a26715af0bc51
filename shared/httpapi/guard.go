package httpapi

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"

	"github.com/ora-runtime/ora/shared/ora"
)

// LoopbackHosts guards a server listening on a loopback address, whose read
// routes need no token, against DNS rebinding: a page on another site whose
// name resolves to 127.0.0.1 sends its own name as the Host. Only requests
// whose Host names a loopback address (127.0.0.1, localhost, [::1], or the
// listen address's own loopback IP) on the port the connection arrived on
// are served; others get 421 Misdirected Request with a body saying why.
//
// Webhook deliveries (POST /webhooks/...) pass whatever their Host: a tunnel
// in front of `ora dev` forwards the provider's public host name, and a
// delivery is authenticated by its signature, not by where it came from.
func LoopbackHosts(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/webhooks/") {
			h.ServeHTTP(w, r)
			return
		}
		if !loopbackHost(r) {
			writeJSON(w, http.StatusMisdirectedRequest, map[string]string{
				"error": "host " + quoteHost(r.Host) + " is not this server's loopback address: use http://127.0.0.1:PORT or http://localhost:PORT",
			})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether r's Host names a loopback address on the
// port r arrived on.
func loopbackHost(r *http.Request) bool {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = r.Host, "80" // no port: the scheme's default
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, lport, err := net.SplitHostPort(local.String()); err == nil && lport != port {
			return false
		}
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// quoteHost quotes a Host for an error message, bounded in length.
func quoteHost(h string) string {
	if len(h) > 100 {
		h = h[:100] + "..."
	}
	return `"` + strings.ToValidUTF8(h, "?") + `"`
}

// SameOrigin refuses (403) a state-changing request (any method but GET,
// HEAD and OPTIONS) that a browser marks as sent from another origin: a
// Sec-Fetch-Site other than same-origin or none, or else an Origin whose
// host is not the request's Host. Requests without either header (curl, the
// CLI, providers' webhook deliveries) pass: they are not made by a browser
// on someone else's page. It is the standard library's
// http.CrossOriginProtection, answering in the API's JSON.
func SameOrigin(h http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "cross-origin request refused: state-changing requests must come from this server's own pages or a client that is not a browser"})
	}))
	return p.Handler(h)
}

// proposalPrefix begins the pseudo signal id of an orientation proposal
// (orient.ProposalKey), which GET /signals/{id} serves only in the
// proposal's namespace.
const proposalPrefix = "orientation-proposal:"

// pseudoSignals are the ledger's pseudo signal ids that are not waves, each
// with the scopes (any one of them) that read what it names through GET
// /signals/{id}: the same scopes as the route of its own.
var pseudoSignals = []struct {
	prefix string
	scopes []string
}{
	{"incident-", []string{ScopeOperate, ScopeOperatorRead}},
	{proposalPrefix, []string{ScopeOrientationRead}},
	{"orientation-profile:", []string{ScopeOrientationRead}},
}

// signalScopes returns the scopes, any one of which reads signal id: a
// pseudo signal's own, or the read scope for a wave.
func signalScopes(id string) []string {
	if id == "motor" { // the motor's versions and promotions (motor.Registry)
		return []string{ScopeOperate, ScopeOperatorRead}
	}
	for _, p := range pseudoSignals {
		if strings.HasPrefix(id, p.prefix) {
			return p.scopes
		}
	}
	return []string{ScopeRead}
}

// authorizeAny authorizes r for the first of scopes it holds. Errors: those
// of the first scope when it holds none.
func (s *Server) authorizeAny(r *http.Request, scopes ...string) (string, error) {
	var first error
	for _, sc := range scopes {
		p, err := s.authorize(r, sc)
		if err == nil {
			return p, nil
		}
		if first == nil {
			first = err
		}
		if ora.ErrorCode(err) == ora.EUNAUTHORIZED {
			break // no or an unknown token: no other scope will do
		}
	}
	return "", first
}

// principal returns who an authorized request acts for: subject, and the
// token's namespace ("main" without one).
func (s *Server) principal(r *http.Request, subject string) ora.Principal {
	by := ora.Principal{Subject: subject, Namespace: "main"}
	if s.Namespace != nil {
		by.Namespace = s.Namespace(r)
	}
	return by
}

// inNamespace refuses (EFORBIDDEN) a proposal's entries to a token of
// another namespace, unless it holds orientation.admin.
func (s *Server) inNamespace(r *http.Request, entries []ora.Entry) error {
	for _, e := range entries {
		if e.Kind != ora.KindProfileProposal {
			continue
		}
		var p struct {
			Namespace string `json:"namespace"`
		}
		_ = json.Unmarshal(e.Body, &p)
		return s.mayDecide(r, p.Namespace)
	}
	return nil
}

// mayDecide reports (nil) whether r's token may act on a proposal of
// namespace ns: its own namespace, or any with orientation.admin. Errors:
// EFORBIDDEN.
func (s *Server) mayDecide(r *http.Request, ns string) error {
	return inNamespace(ns, s.principal(r, "").Namespace, s.isAdmin(r))
}

// isAdmin reports whether r's token holds orientation.admin.
func (s *Server) isAdmin(r *http.Request) bool {
	_, err := s.authorize(r, ScopeOrientationAdmin)
	return err == nil
}

// inNamespace is nil when a principal of namespace mine (or an admin) may
// act on a proposal of namespace ns. Errors: EFORBIDDEN.
func inNamespace(ns, mine string, admin bool) error {
	if ns == "" {
		ns = "main"
	}
	if mine == ns || admin {
		return nil
	}
	return ora.Errorf(ora.EFORBIDDEN, "the proposal is in namespace %s: the token's namespace is not, and it lacks scope %s", ns, ScopeOrientationAdmin)
}

// MayDecide is nil when by may approve (approving) or reject proposal v:
// the proposal is in by's namespace, or by holds orientation.admin (admin);
// and an approver is never the proposer (separation of duties). The API's
// routes and the console's forms both ask it. Errors: EFORBIDDEN.
func MayDecide(v ora.ProposalView, by ora.Principal, approving, admin bool) error {
	if approving && v.Proposal.RequestedBy == by.Subject {
		return ora.Errorf(ora.EFORBIDDEN, "%s proposed %s and cannot approve it too: another approver must", by.Subject, v.Proposal.ID)
	}
	return inNamespace(v.Proposal.Namespace, by.Namespace, admin)
}
