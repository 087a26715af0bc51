package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// The orientation routes through the Lambda: scopes from the verified JWT,
// the namespace from its ora_namespace claim, never from the body.
func TestOrientationRoutes(t *testing.T) {
	ledger := openLedger(t)
	h := New(ledger, nil, nil, DefaultResourceServer, nil, func(s *httpapi.Server) { s.Orientation = orient.NewService(ledger) })
	base := loadEvent(t, "get-signal.json")
	req := func(method, path, body string, claims map[string]string) events.APIGatewayV2HTTPRequest {
		ev := withPath(base, path)
		ev.RequestContext.HTTP.Method, ev.Body, ev.IsBase64Encoded = method, body, false
		return withClaims(ev, claims, nil)
	}
	claims := func(scope, namespace string) map[string]string {
		c := map[string]string{"sub": "agent-1", "token_use": "access", "scope": scope}
		if namespace != "" {
			c[NamespaceClaim] = namespace
		}
		return c
	}
	proposal := `{"proposal_id":"p1","namespace":"main","base_profile_id":"default","base_profile_version":1,"effective_waves":2,"horizon_policy":"revert","change":{"max_source_share":0.4}}`
	tests := []struct {
		name   string
		ev     events.APIGatewayV2HTTPRequest
		status int
		body   string
	}{
		{"read the profile", req("GET", "/api/orientation/profile/current", "", claims("ora/orientation.read", "")), http.StatusOK, `"profile_id":"default"`},
		{"no token", req("GET", "/api/orientation/profile/current", "", nil), http.StatusUnauthorized, ""},
		{"propose without the scope", req("POST", "/api/orientation/proposals", proposal, claims("ora/orientation.read", "")), http.StatusForbidden, ""},
		{"propose from team-x", req("POST", "/api/orientation/proposals", proposal, claims("ora/orientation.propose", "team-x")), http.StatusOK, `"namespace":"team-x"`},
		{"approve needs orientation.approve", req("POST", "/api/orientation/proposals/p1/approve", "", claims("ora/orientation.propose", "")), http.StatusForbidden, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := invoke(t, h, tt.ev)
			if resp.StatusCode != tt.status || !strings.Contains(resp.Body, tt.body) {
				t.Errorf("got %d %s, want %d with %q", resp.StatusCode, resp.Body, tt.status, tt.body)
			}
		})
	}
	resp := invoke(t, h, req("GET", "/api/orientation/profile/current", "", claims("ora/orientation.read", "")))
	var p ora.Profile
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil || p.Version != 1 {
		t.Errorf("profile: %s", resp.Body)
	}
}
