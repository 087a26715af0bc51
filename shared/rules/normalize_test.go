package rules_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
)

// delivery reads a webhook sample of events/webhook (an API Gateway HTTP API
// request) and returns its headers and body, with patch applied to the body.
func delivery(t *testing.T, file string, patch func(map[string]any)) (http.Header, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "webhook", file))
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Headers         map[string]string `json:"headers"`
		Body            string            `json:"body"`
		IsBase64Encoded bool              `json:"isBase64Encoded"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	for k, v := range req.Headers {
		h.Set(k, v)
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded { // API Gateway's form bodies
		if body, err = base64.StdEncoding.DecodeString(req.Body); err != nil {
			t.Fatal(err)
		}
	}
	if patch != nil {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		patch(m)
		body, _ = json.Marshal(m)
	}
	return h, body
}

// The default rules see signals as normalization makes them: every provider
// event a rule names, from a real-shaped delivery (events/webhook, patched for
// the variants), goes through the observer and is matched by that rule.
func TestDefaultRulesThroughNormalization(t *testing.T) {
	clock := time.Unix(1795176000, 0).UTC()
	sources := []observe.SourceConfig{
		{Name: "github", Type: observe.TypeGitHub, Secret: "gh"},
		{Name: "slack", Type: observe.TypeSlack, Secret: "sl"},
		{Name: "stripe", Type: observe.TypeStripe, Secret: "whsec_st"},
	}
	set := parseDefault(t)
	event := func(kv ...any) func(map[string]any) {
		return func(m map[string]any) {
			for i := 0; i < len(kv); i += 2 {
				path, v := strings.Split(kv[i].(string), "."), kv[i+1]
				cur := m
				for _, p := range path[:len(path)-1] {
					cur = cur[p].(map[string]any)
				}
				cur[path[len(path)-1]] = v
			}
		}
	}
	tests := []struct {
		name, source, file string
		patch              func(map[string]any)
		rule               string
	}{
		{"push to main", "github", "github-push.json", nil, "github-push-default-branch"},
		{"push to a branch", "github", "github-push.json", event("ref", "refs/heads/feature/x"), "github-push-other-branch"},
		{"issues opened", "github", "github-issues.json", nil, "github-issue-opened"},
		{"issues reopened", "github", "github-issues.json", event("action", "reopened"), "github-issue-opened"},
		{"issues closed", "github", "github-issues.json", event("action", "closed"), "github-issue-closed"},
		{"issues labeled", "github", "github-issues.json", event("action", "labeled"), ""},
		{"slack app_mention", "slack", "slack-event-callback.json", nil, "slack-message"},
		{"slack message", "slack", "slack-event-callback.json", event("event.type", "message"), "slack-message"},
		{"stripe payment_intent.succeeded", "stripe", "stripe-payment-intent-succeeded.json", nil, "stripe-payment-succeeded"},
		{"stripe invoice.paid", "stripe", "stripe-payment-intent-succeeded.json", event("type", "invoice.paid"), "stripe-payment-succeeded"},
		{"stripe checkout.session.completed", "stripe", "stripe-payment-intent-succeeded.json", event("type", "checkout.session.completed"), "stripe-payment-succeeded"},
		{"stripe charge.dispute.created", "stripe", "stripe-payment-intent-succeeded.json", event("type", "charge.dispute.created"), "stripe-payment-problem"},
		{"stripe payment_intent.payment_failed", "stripe", "stripe-payment-intent-succeeded.json", event("type", "payment_intent.payment_failed"), "stripe-payment-problem"},
		{"stripe invoice.payment_failed", "stripe", "stripe-payment-intent-succeeded.json", event("type", "invoice.payment_failed"), "stripe-payment-problem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, body := delivery(t, tt.file, tt.patch)
			var cfg observe.SourceConfig
			for _, s := range sources {
				if s.Name == tt.source {
					cfg = s
				}
			}
			signed, err := observe.Sign(cfg, body, clock)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range signed {
				if k == "X-Github-Event" || k == "X-Github-Delivery" {
					continue // the sample's own
				}
				h[k] = v
			}
			sig := captured(t, sources, clock, tt.source, h, body)
			m, err := set.Evaluate(sig)
			if err != nil {
				t.Fatal(err)
			}
			if m.Rule != tt.rule {
				t.Errorf("event type %q: rule %q, want %q", sig.Source.EventType, m.Rule, tt.rule)
			}
		})
	}
}

// captured runs one delivery through an observer of sources at clock and
// returns the signal it recorded.
func captured(t *testing.T, sources []observe.SourceConfig, clock time.Time, source string, h http.Header, body []byte) ora.NormalizedSignal {
	t.Helper()
	ledger := &observetest.Ledger{}
	obs, err := observe.New(ledger, &observetest.Waves{}, sources, func(o *observe.Options) { o.Now = func() time.Time { return clock } })
	if err != nil {
		t.Fatal(err)
	}
	rec, err := obs.Webhook(context.Background(), source, h, body)
	if err != nil {
		t.Fatalf("webhook: %v", err)
	}
	entries, err := ledger.Entries(context.Background(), rec.SignalID)
	if err != nil || len(entries) != 1 {
		t.Fatalf("entries %v, %v", entries, err)
	}
	var sig ora.NormalizedSignal
	if err := json.Unmarshal(entries[0].Body, &sig); err != nil {
		t.Fatal(err)
	}
	return sig
}
