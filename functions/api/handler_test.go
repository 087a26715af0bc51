package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/review"
	"github.com/ora-runtime/ora/shared/sqlite"
)

const (
	sampleSignal   = "sig-9f3b2c1d4e5a6b7c"
	sampleDecision = "dec-4a7c9e1b"
)

// fakeWaves answers Wave through a function field.
type fakeWaves struct {
	wave func(ctx context.Context, id string) (httpapi.Wave, error)
}

func (f fakeWaves) Wave(ctx context.Context, id string) (httpapi.Wave, error) { return f.wave(ctx, id) }

// settleCall is one Settle a fakeVerdicts received.
type settleCall struct {
	DecisionID string
	Approve    bool
	By, Reason string
}

// fakeVerdicts records Settle calls and answers through settle.
type fakeVerdicts struct {
	mu     sync.Mutex
	calls  []settleCall
	settle func(c settleCall) (ora.DecisionState, error)
}

func (f *fakeVerdicts) Settle(_ context.Context, id string, approve bool, by, reason string) (ora.DecisionState, error) {
	c := settleCall{id, approve, by, reason}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	return f.settle(c)
}

// openLedger opens a fresh SQLite ledger holding the sample signal's
// signal-received entry.
func openLedger(t *testing.T) *sqlite.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatalf("open ledger: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	at := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	raw := []byte(`{"ref":"refs/heads/main"}`)
	sig := ora.NormalizedSignal{
		ID: sampleSignal, Source: ora.Source{Type: ora.SourceWebhook, Name: "github", Provider: "github", EventType: "push"},
		Timestamp: at, Payload: raw, NormalizedAt: at, DedupKey: "github:72d3162e", RawDigest: ora.Digest(raw),
	}
	e, err := ora.NewEntry(sampleSignal, ora.KindSignalReceived, "", sig)
	if err != nil {
		t.Fatal(err)
	}
	e.AuthorType = ora.AuthorObserver
	if _, err := db.Append(ctx, e); err != nil {
		t.Fatalf("append signal: %v", err)
	}
	return db
}

// loadEvent reads a sample event of events/api.
func loadEvent(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "api", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ev
}

// invoke runs ev through the runtime's own decoding and encoding.
func invoke(t *testing.T, h *Handler, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	payload, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), payload)
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	return resp
}

// withClaims returns a copy of ev whose JWT carries claims and scopes
// (nil claims: no authorizer context at all).
func withClaims(ev events.APIGatewayV2HTTPRequest, claims map[string]string, scopes []string) events.APIGatewayV2HTTPRequest {
	if claims == nil {
		ev.RequestContext.Authorizer = nil
		return ev
	}
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims, Scopes: scopes},
	}
	return ev
}

func withScope(ev events.APIGatewayV2HTTPRequest, scope string) events.APIGatewayV2HTTPRequest {
	claims := map[string]string{}
	for k, v := range ev.RequestContext.Authorizer.JWT.Claims {
		claims[k] = v
	}
	claims["scope"] = scope
	return withClaims(ev, claims, nil)
}

func withPath(ev events.APIGatewayV2HTTPRequest, path string) events.APIGatewayV2HTTPRequest {
	ev.RawPath, ev.RequestContext.HTTP.Path = path, path
	return ev
}

func TestSampleEvents(t *testing.T) {
	ledger := openLedger(t)
	waves := fakeWaves{wave: func(_ context.Context, id string) (httpapi.Wave, error) {
		if id != sampleSignal {
			return httpapi.Wave{}, ora.Errorf(ora.ENOTFOUND, "no wave %s", id)
		}
		return httpapi.Wave{WaveID: id, Status: "SUCCEEDED", History: json.RawMessage(`[{"type":"ExecutionStarted","id":1}]`)}, nil
	}}
	verdicts := &fakeVerdicts{settle: func(c settleCall) (ora.DecisionState, error) {
		if c.DecisionID != sampleDecision {
			return ora.DecisionState{}, ora.Errorf(ora.ENOTFOUND, "no decision %s", c.DecisionID)
		}
		status := ora.StatusRejected
		if c.Approve {
			status = ora.StatusApproved
		}
		return ora.DecisionState{DecisionID: c.DecisionID, SignalID: sampleSignal, Status: status, Reason: c.Reason, Version: 2}, nil
	}}
	h := New(ledger, waves, verdicts, DefaultResourceServer, nil)

	const person = "7c9e2a14-5b3d-4f8e-a6c1-0d2f4b6a8e31"
	tests := map[string]struct {
		wantStatus int
		check      func(t *testing.T, body []byte)
		wantSettle *settleCall
	}{
		"get-signal.json": {wantStatus: http.StatusOK, check: func(t *testing.T, body []byte) {
			var got struct {
				Signal  ora.NormalizedSignal `json:"signal"`
				Entries []ora.Entry          `json:"entries"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Signal.ID != sampleSignal || len(got.Entries) != 1 || got.Entries[0].Kind != ora.KindSignalReceived {
				t.Errorf("GET /signals = signal %q, %d entries, want %s and its signal-received entry", got.Signal.ID, len(got.Entries), sampleSignal)
			}
		}},
		"get-wave.json": {wantStatus: http.StatusOK, check: func(t *testing.T, body []byte) {
			var got httpapi.Wave
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.WaveID != sampleSignal || got.Status != "SUCCEEDED" || !strings.Contains(string(got.History), "ExecutionStarted") {
				t.Errorf("GET /waves = %+v, want the fake's SUCCEEDED wave with its history", got)
			}
		}},
		"approve-decision.json": {wantStatus: http.StatusOK,
			wantSettle: &settleCall{sampleDecision, true, person, "checked the diff, safe to notify"},
			check: func(t *testing.T, body []byte) {
				var got ora.DecisionState
				if err := json.Unmarshal(body, &got); err != nil {
					t.Fatal(err)
				}
				if got.Status != ora.StatusApproved {
					t.Errorf("approve answered status %q, want approved", got.Status)
				}
			}},
		"reject-decision.json": {wantStatus: http.StatusOK,
			wantSettle: &settleCall{sampleDecision, false, person, "wrong channel for this"},
			check: func(t *testing.T, body []byte) {
				var got ora.DecisionState
				if err := json.Unmarshal(body, &got); err != nil {
					t.Fatal(err)
				}
				if got.Status != ora.StatusRejected {
					t.Errorf("reject answered status %q, want rejected", got.Status)
				}
			}},
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "api", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample events: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			tt, ok := tests[name]
			if !ok {
				t.Fatalf("no expectation for sample %s: add one", name)
			}
			verdicts.calls = nil
			resp := invoke(t, h, loadEvent(t, name))
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d %s, want %d", resp.StatusCode, resp.Body, tt.wantStatus)
			}
			if ct := resp.Headers["Content-Type"]; ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			tt.check(t, []byte(resp.Body))
			switch {
			case tt.wantSettle == nil && len(verdicts.calls) != 0:
				t.Errorf("Settle calls %+v, want none", verdicts.calls)
			case tt.wantSettle != nil && (len(verdicts.calls) != 1 || verdicts.calls[0] != *tt.wantSettle):
				t.Errorf("Settle calls %+v, want [%+v]", verdicts.calls, *tt.wantSettle)
			}
		})
	}
}

func TestAuthorizationAndErrors(t *testing.T) {
	ledger := openLedger(t)
	waves := fakeWaves{wave: func(_ context.Context, id string) (httpapi.Wave, error) {
		return httpapi.Wave{}, ora.Errorf(ora.ENOTFOUND, "no wave %s", id)
	}}
	verdicts := &fakeVerdicts{settle: func(c settleCall) (ora.DecisionState, error) {
		cur := ora.DecisionState{DecisionID: c.DecisionID, Status: ora.StatusApproved}
		return ora.DecisionState{}, ora.Conflict(cur, "decision %s is approved, not awaiting approval", c.DecisionID)
	}}
	h := New(ledger, waves, verdicts, DefaultResourceServer, nil)
	signal, wave := loadEvent(t, "get-signal.json"), loadEvent(t, "get-wave.json")
	approve, reject := loadEvent(t, "approve-decision.json"), loadEvent(t, "reject-decision.json")
	badBody := reject
	badBody.Body = "not base64!"

	tests := []struct {
		name       string
		ev         events.APIGatewayV2HTTPRequest
		wantStatus int
		wantError  string
		wantSettle bool
	}{
		{name: "read without claims", ev: withClaims(signal, nil, nil), wantStatus: http.StatusUnauthorized, wantError: "access token"},
		{name: "wave without claims", ev: withClaims(wave, nil, nil), wantStatus: http.StatusUnauthorized},
		{name: "approve without claims", ev: withClaims(approve, nil, nil), wantStatus: http.StatusUnauthorized},
		{name: "claims without a subject", ev: withClaims(approve, map[string]string{"scope": "ora/ora.approve", "token_use": "access"}, nil), wantStatus: http.StatusUnauthorized, wantError: "subject"},
		{name: "read without the read scope", ev: withScope(signal, "ora/ora.approve"), wantStatus: http.StatusForbidden, wantError: "orientation.read"},
		{name: "approve with only the read scope", ev: withScope(approve, "openid ora/orientation.read"), wantStatus: http.StatusForbidden, wantError: "ora.approve"},
		{name: "reject with only the read scope", ev: withScope(reject, "ora/orientation.read"), wantStatus: http.StatusForbidden},
		{name: "another resource server's scope", ev: withScope(approve, "billing/ora.approve"), wantStatus: http.StatusForbidden},
		{name: "a bare scope counts", ev: withScope(approve, "ora.approve"), wantStatus: http.StatusConflict, wantSettle: true},
		{name: "unknown signal", ev: withPath(signal, "/signals/sig-unknown"), wantStatus: http.StatusNotFound},
		{name: "unknown wave", ev: withPath(wave, "/waves/sig-unknown"), wantStatus: http.StatusNotFound},
		{name: "approve settled decision", ev: approve, wantStatus: http.StatusConflict, wantError: "not awaiting approval", wantSettle: true},
		{name: "reject settled decision", ev: reject, wantStatus: http.StatusConflict, wantSettle: true},
		{name: "body flagged base64 but not", ev: badBody, wantStatus: http.StatusBadRequest, wantError: "base64"},
		{name: "route the API does not serve", ev: withPath(signal, "/webhooks/github"), wantStatus: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verdicts.calls = nil
			resp := invoke(t, h, tt.ev)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d %s, want %d", resp.StatusCode, resp.Body, tt.wantStatus)
			}
			if !strings.Contains(resp.Body, tt.wantError) {
				t.Errorf("body %s, want it to mention %q", resp.Body, tt.wantError)
			}
			if got := len(verdicts.calls) > 0; got != tt.wantSettle {
				t.Errorf("Settle called: %v, want %v", got, tt.wantSettle)
			}
			if tt.wantStatus == http.StatusUnauthorized && resp.Headers["Www-Authenticate"] == "" {
				t.Errorf("401 without WWW-Authenticate; headers %v", resp.Headers)
			}
		})
	}
}

// recordingSettler is a review.TaskSettler that records the outputs it sends.
type recordingSettler struct {
	outputs []string
}

func (s *recordingSettler) SendTaskSuccess(_ context.Context, token string, output []byte) error {
	s.outputs = append(s.outputs, token+" "+string(output))
	return nil
}

type nopNotifier struct{}

func (nopNotifier) Notify(context.Context, string, string) error { return nil }

// TestApproveOverReview replays the approve sample through the handler wired
// as main wires it, the review service over a SQLite ledger: the decision
// escalated by the review service ends approved, the waiting task gets the
// verdict with the token's subject, and a second verdict is a 409 that settles
// nothing.
func TestApproveOverReview(t *testing.T) {
	ctx := context.Background()
	ledger := openLedger(t)
	dec := ora.ReasonerDecision{
		ID: sampleDecision, SignalID: sampleSignal, ActionType: "notify", Confidence: 0.3, Reasoning: "unsure",
		AuthorType: ora.AuthorArchitect, Scope: ora.Scope{AllowedOperations: []string{"notify"}}, Tier: 1,
		Timestamp: time.Date(2026, 11, 20, 12, 0, 1, 0, time.UTC),
	}
	if _, err := ledger.RecordDecision(ctx, dec); err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	settler := &recordingSettler{}
	rev := review.New(ledger, func(o *review.Options) { o.Settler, o.Notifier = settler, nopNotifier{} })
	if _, err := rev.Escalate(ctx, sampleSignal, sampleDecision, "token-1"); err != nil {
		t.Fatalf("Escalate: %v", err)
	}
	h := New(ledger, fakeWaves{}, rev, DefaultResourceServer, nil)

	resp := invoke(t, h, loadEvent(t, "approve-decision.json"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approve: status %d %s, want 200", resp.StatusCode, resp.Body)
	}
	var st ora.DecisionState
	if err := json.Unmarshal([]byte(resp.Body), &st); err != nil {
		t.Fatal(err)
	}
	if st.Status != ora.StatusApproved || st.DecisionID != sampleDecision {
		t.Errorf("approve answered %+v, want %s approved", st, sampleDecision)
	}
	want := `token-1 {"verdict":"approved","reason":"checked the diff, safe to notify","by":"7c9e2a14-5b3d-4f8e-a6c1-0d2f4b6a8e31"}`
	if len(settler.outputs) != 1 || settler.outputs[0] != want {
		t.Errorf("task outputs %q, want [%q]", settler.outputs, want)
	}

	resp = invoke(t, h, loadEvent(t, "reject-decision.json"))
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("reject after approve: status %d %s, want 409", resp.StatusCode, resp.Body)
	}
	if len(settler.outputs) != 1 {
		t.Errorf("task settled %d times, want once", len(settler.outputs))
	}
	got, err := ledger.Decision(ctx, sampleDecision)
	if err != nil || got.Status != ora.StatusApproved {
		t.Errorf("stored decision %+v, %v; want approved", got, err)
	}
}

func TestToRequestKeepsRequestFields(t *testing.T) {
	ev := loadEvent(t, "reject-decision.json")
	ev.RawQueryString = "verbose=1&why=a%20b"
	ev.RawPath = "/decisions/dec%2F1/reject"
	ev.Cookies = []string{"a=1", "b=2"}
	req, err := toRequest(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"method", req.Method, http.MethodPost},
		{"path", req.URL.Path, "/decisions/dec/1/reject"},
		{"escaped path", req.URL.EscapedPath(), "/decisions/dec%2F1/reject"},
		{"query", req.URL.Query().Get("why"), "a b"},
		{"body (base64 decoded)", string(body), `{"reason":"wrong channel for this"}`},
		{"content-type", req.Header.Get("Content-Type"), "application/x-www-form-urlencoded"},
		{"cookie", req.Header.Get("Cookie"), "a=1; b=2"},
		{"request id", req.Header.Get("X-Request-Id"), "Cx2cBiHhoAMEbdz="},
		{"host", req.Host, "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if _, err := toRequest(context.Background(), events.APIGatewayV2HTTPRequest{RawPath: "/x"}); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("toRequest without a method: error %v, want EINVALID", err)
	}
}
