package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
)

type fakeVerdicts struct {
	settle func(ctx context.Context, id string, approve bool, by, reason string) (ora.DecisionState, error)
}

func (f fakeVerdicts) Settle(ctx context.Context, id string, approve bool, by, reason string) (ora.DecisionState, error) {
	return f.settle(ctx, id, approve, by, reason)
}

type fakeEntries func(ctx context.Context, id string) ([]ora.Entry, error)

func (f fakeEntries) Entries(ctx context.Context, id string) ([]ora.Entry, error) { return f(ctx, id) }

func server(t *testing.T) (*Server, *[]string) {
	t.Helper()
	var calls []string
	s := &Server{
		Entries: fakeEntries(func(_ context.Context, id string) ([]ora.Entry, error) {
			if id != "sig-1" {
				return nil, ora.Errorf(ora.ENOTFOUND, "no signal %q", id)
			}
			return []ora.Entry{{SignalID: id, Kind: ora.KindSignalReceived, Body: json.RawMessage(`{"id":"sig-1"}`)}}, nil
		}),
		Verdicts: fakeVerdicts{settle: func(_ context.Context, id string, approve bool, by, reason string) (ora.DecisionState, error) {
			calls = append(calls, id+"/"+by+"/"+reason)
			switch id {
			case "settled":
				return ora.DecisionState{}, ora.Conflict(ora.DecisionState{Status: ora.StatusApproved}, "already approved")
			case "missing":
				return ora.DecisionState{}, ora.Errorf(ora.ENOTFOUND, "no decision")
			case "boom":
				return ora.DecisionState{}, ora.Errorf(ora.EINTERNAL, "secret detail")
			}
			return ora.DecisionState{DecisionID: id, Status: ora.StatusApproved}, nil
		}},
		Authorize: StaticTokens([]Token{
			{Token: "approver-token", Subject: "alice", Scopes: []string{ScopeApprove, ScopeRead}},
			{Token: "reader-token", Subject: "bob", Scopes: []string{ScopeRead}},
		}),
	}
	return s, &calls
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		name, method, path, token, body string
		want                            int
		wantBody                        string
	}{
		{"health", "GET", "/healthz", "", "", 200, `"ok"`},
		{"signal", "GET", "/signals/sig-1", "", "", 200, `"signal":{"id":"sig-1"}`},
		{"unknown signal", "GET", "/signals/nope", "", "", 404, `no signal`},
		{"approve", "POST", "/decisions/d1/approve", "approver-token", `{"reason":"fine"}`, 200, `"approved"`},
		{"approve without token", "POST", "/decisions/d1/approve", "", `{}`, 401, `bearer token is required`},
		{"approve with an unknown token", "POST", "/decisions/d1/approve", "forged-token", `{}`, 401, `unknown bearer token`},
		{"approve without the scope", "POST", "/decisions/d1/approve", "reader-token", `{}`, 403, `lacks scope ora.approve`},
		{"approve settled", "POST", "/decisions/settled/approve", "approver-token", `{}`, 409, `already approved`},
		{"approve unknown", "POST", "/decisions/missing/reject", "approver-token", `{}`, 404, `no decision`},
		{"approve with a malformed body", "POST", "/decisions/d1/approve", "approver-token", `{"reason":`, 400, `body`},
		{"internal error hides its detail", "POST", "/decisions/boom/approve", "approver-token", `{}`, 500, `internal error`},
		{"no webhook route without an observer", "POST", "/webhooks/github", "", `{}`, 404, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := server(t)
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.want || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("%s %s: got %d %s, want %d containing %q", tt.method, tt.path, rec.Code, rec.Body, tt.want, tt.wantBody)
			}
			if strings.Contains(rec.Body.String(), "secret detail") {
				t.Errorf("an internal error reached the client: %s", rec.Body)
			}
		})
	}
}

func TestSettlePassesPrincipalAndReason(t *testing.T) {
	s, calls := server(t)
	req := httptest.NewRequest("POST", "/decisions/d7/reject", strings.NewReader(`{"reason":"not now"}`))
	req.Header.Set("Authorization", "Bearer approver-token")
	s.Handler().ServeHTTP(httptest.NewRecorder(), req)
	if len(*calls) != 1 || (*calls)[0] != "d7/alice/not now" {
		t.Errorf("Settle calls: got %v, want [d7/alice/not now]", *calls)
	}
}

func TestReadAuth(t *testing.T) {
	s, _ := server(t)
	s.ReadAuth = true
	for token, want := range map[string]int{"": 401, "reader-token": 200} {
		req := httptest.NewRequest("GET", "/signals/sig-1", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("token %q: got %d, want %d", token, rec.Code, want)
		}
	}
}

func TestStatus(t *testing.T) {
	for code, want := range map[string]int{
		ora.EINVALID: 400, ora.EUNAUTHORIZED: 401, ora.EFORBIDDEN: 403, ora.ENOTFOUND: 404,
		ora.ECONFLICT: 409, ora.ETRANSIENT: 503, ora.EINTERNAL: 500, "": 500,
	} {
		if got := Status(code); got != want {
			t.Errorf("Status(%q) = %d, want %d", code, got, want)
		}
	}
}

type fakeWaves func(ctx context.Context, id string) (Wave, error)

func (f fakeWaves) Wave(ctx context.Context, id string) (Wave, error) { return f(ctx, id) }

type fakeWebhooks struct{ calls int }

func (f *fakeWebhooks) Webhook(context.Context, string, http.Header, []byte) (WebhookReceipt, error) {
	f.calls++
	return WebhookReceipt{SignalID: "s"}, nil
}

// The escalation's task token settles a wave without ora.approve: no read
// route returns it, neither from the ledger's architect-intent nor from the
// wave's history (where Step Functions keeps it inside a JSON string).
func TestReadRoutesNeverReturnTaskTokens(t *testing.T) {
	const token = "AQCEAAAAKgAAAAMAAAAAAAAAAf-very-secret-token"
	s, _ := server(t)
	intent := json.RawMessage(`{"decision_id":"d1","requires_human_audit":true,"task_token":"` + token + `"}`)
	s.Entries = fakeEntries(func(context.Context, string) ([]ora.Entry, error) {
		return []ora.Entry{
			{SignalID: "sig-1", Kind: ora.KindSignalReceived, Body: json.RawMessage(`{"id":"sig-1"}`), Digest: ora.Digest([]byte(`{"id":"sig-1"}`))},
			{SignalID: "sig-1", Kind: ora.KindArchitectIntent, Body: intent, Digest: ora.Digest(intent), Meta: map[string]string{"task_token": token}},
		}, nil
	})
	params, _ := json.Marshal(map[string]any{"FunctionName": "escalate", "Payload": map[string]string{"signal_id": "sig-1", "task_token": token}})
	history, _ := json.Marshal([]map[string]any{{"type": "TaskScheduled", "taskScheduledEventDetails": map[string]any{"parameters": string(params)}}})
	s.Waves = fakeWaves(func(context.Context, string) (Wave, error) {
		return Wave{WaveID: "sig-1", Status: "RUNNING", History: history}, nil
	})
	for _, path := range []string{"/signals/sig-1", "/waves/sig-1"} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		if strings.Contains(rec.Body.String(), token) || !strings.Contains(rec.Body.String(), Redacted) {
			t.Errorf("GET %s returned the task token (or redacted nothing): %s", path, rec.Body)
		}
	}
	// Entries without a secret keep their exact bytes.
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/signals/sig-1", nil))
	if !strings.Contains(rec.Body.String(), `"signal":{"id":"sig-1"}`) {
		t.Errorf("signal body changed: %s", rec.Body)
	}
}

// A dot segment in a path is a 404, never a redirect to the cleaned path,
// and reaches no route.
func TestDotSegmentsAreNotFound(t *testing.T) {
	s, _ := server(t)
	hooks := &fakeWebhooks{}
	s.Webhooks = hooks
	for _, path := range []string{"/webhooks/../github", "/webhooks/%2e%2e/github", "/webhooks/./github", "/signals/../healthz"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", path, strings.NewReader(`{}`))
		if strings.HasPrefix(path, "/signals") {
			req.Method = "GET"
		}
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s %s: %d (Location %q), want 404", req.Method, path, rec.Code, rec.Header().Get("Location"))
		}
	}
	if hooks.calls != 0 {
		t.Errorf("a dot-segment path reached the webhook route %d times", hooks.calls)
	}
}
