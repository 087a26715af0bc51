package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
)

// Parts of the API that are set but never called: authorization refuses
// every request before a handler reaches them.
type (
	unusedOperator    struct{ httpapi.Operator }
	unusedMotor       struct{ httpapi.Motor }
	unusedRecorded    struct{ httpapi.Recorded }
	unusedOrientation struct{ httpapi.Orientation }
	unusedLearned     struct{ httpapi.Learned }
)

// The stack's authorized routes are the API's routes, each behind the scope
// its handler asks for: a route added to the API and not to the stack would
// answer 404 on AWS, and a scope that differs would let API Gateway pass
// tokens the handler then refuses (or the reverse).
func TestAPIRoutesMatchTheHandler(t *testing.T) {
	var asked []string
	s := &httpapi.Server{
		Operator:    unusedOperator{},
		Motor:       unusedMotor{},
		Recorded:    unusedRecorded{},
		Orientation: unusedOrientation{},
		Learned:     unusedLearned{},
		ReadAuth:    true,
		Authorize: func(_ *http.Request, scope string) (string, error) {
			asked = append(asked, scope)
			return "", ora.Errorf(ora.EFORBIDDEN, "scope %s missing", scope)
		},
	}
	// The stack routes POST /webhooks/{source} to observe-webhook, and API
	// Gateway has no health route.
	var served []string
	for _, p := range s.Routes() {
		if p != "GET /healthz" {
			served = append(served, p)
		}
	}
	var routed []string
	for _, r := range apiRoutes {
		routed = append(routed, r.method+" "+r.path)
	}
	for _, p := range served {
		if !slices.Contains(routed, p) {
			t.Errorf("the API serves %s; the stack does not route it (infra apiRoutes)", p)
		}
	}
	for _, p := range routed {
		if !slices.Contains(served, p) {
			t.Errorf("the stack routes %s; the API does not serve it", p)
		}
	}

	h := s.Handler()
	for _, r := range apiRoutes {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			asked = nil
			path := r.path
			for _, param := range []string{"{id}", "{version}", "{wave_id}"} {
				path = strings.ReplaceAll(path, param, "w-1")
			}
			req := httptest.NewRequest(r.method, path, strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusForbidden {
				t.Fatalf("status %d, want 403 (authorization first): %s", rec.Code, rec.Body)
			}
			if scope := strings.TrimPrefix(r.scope, "ora/"); !slices.Contains(asked, scope) {
				t.Errorf("the stack requires %s; the handler asks for %v", scope, asked)
			}
		})
	}
}
