package observe_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
)

// A provider's time in another unit (Slack documents event_time in
// microseconds; a Stripe created in milliseconds) or far off is not the
// signal's time: the receive time is, and the entry keeps the provider's.
func TestImplausibleProviderTimestamps(t *testing.T) {
	tests := []struct {
		name, source, body string
		want               time.Time
		kept               string
	}{
		{"slack event_time in microseconds (Slack's documented app_mention)", "slack",
			`{"type":"event_callback","event_id":"Ev123ABC456","event_time":1515449522000016,"event":{"type":"app_mention","ts":"1515449522.000016"}}`,
			now, "1515449522000016"},
		{"slack event_time 123456789 (Slack's current example)", "slack",
			`{"type":"event_callback","event_id":"Ev123ABC457","event_time":123456789,"event":{"type":"app_mention"}}`,
			now, "123456789"},
		{"slack event_time in seconds", "slack",
			`{"type":"event_callback","event_id":"Ev123ABC458","event_time":1795175990,"event":{"type":"app_mention"}}`,
			time.Unix(1795175990, 0), ""},
		{"stripe created in milliseconds", "stripe",
			`{"id":"evt_1","object":"event","type":"invoice.paid","created":1795175990000,"data":{"object":{"id":"in_1"}}}`,
			now, "1795175990000"},
		{"stripe created in seconds", "stripe",
			`{"id":"evt_2","object":"event","type":"invoice.paid","created":1795175990,"data":{"object":{"id":"in_2"}}}`,
			time.Unix(1795175990, 0), ""},
		{"stripe created two days ahead", "stripe",
			`{"id":"evt_3","object":"event","type":"invoice.paid","created":1795348800,"data":{"object":{"id":"in_3"}}}`,
			now, "1795348800"},
		{"stripe created a fraction", "stripe",
			`{"id":"evt_4","object":"event","type":"invoice.paid","created":1795175990.5,"data":{"object":{"id":"in_4"}}}`,
			time.Unix(1795175990, 0), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r, err := e.obs.Webhook(context.Background(), tt.source, signed(t, tt.source, tt.body), []byte(tt.body))
			if err != nil {
				t.Fatalf("webhook: %v, want it captured", err)
			}
			entry, sig := stored(t, e.ledger, r.SignalID)
			if !sig.Timestamp.Equal(tt.want) {
				t.Errorf("timestamp = %v, want %v", sig.Timestamp, tt.want)
			}
			if got := entry.Meta[observe.MetaProviderTimestamp]; got != tt.kept {
				t.Errorf("meta %s = %q, want %q", observe.MetaProviderTimestamp, got, tt.kept)
			}
			if !strings.Contains(string(sig.Payload), tt.body[len(tt.body)-20:]) {
				t.Errorf("payload %s is not the body", sig.Payload)
			}
		})
	}
}

const issuesBody = `{"action":"opened","issue":{"number":42,"title":"Wave stuck","body":null},"repository":{"full_name":"octo-org/ora-agent"},"sender":{"login":"octocat"}}`

// GitHub's default content type: the JSON in a form's payload field, the
// signature over the raw form body.
func TestGitHubFormDeliveries(t *testing.T) {
	form := "payload=" + url.QueryEscape(issuesBody)
	githubHeader := func(t *testing.T, signedBody string) map[string][]string {
		h := signed(t, "github", signedBody)
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		h.Set("X-GitHub-Event", "issues")
		return h
	}
	t.Run("captured, the payload decoded", func(t *testing.T) {
		e := newEnv(t)
		r, err := e.obs.Webhook(context.Background(), "github", githubHeader(t, form), []byte(form))
		if err != nil {
			t.Fatal(err)
		}
		_, sig := stored(t, e.ledger, r.SignalID)
		if string(sig.Payload) != issuesBody || sig.Source.EventType != "issues.opened" {
			t.Errorf("payload %s event %q, want the JSON and issues.opened", sig.Payload, sig.Source.EventType)
		}
		if sig.DedupKey != observe.GitHubDedupKey([]byte(form), now) {
			t.Errorf("dedup key %q, want the form body's", sig.DedupKey)
		}
	})
	t.Run("Sign sends a form as a form, the event guessed from its payload", func(t *testing.T) {
		e := newEnv(t)
		h := signed(t, "github", form)
		if h.Get("Content-Type") != "application/x-www-form-urlencoded" || h.Get("X-GitHub-Event") != "issues" {
			t.Errorf("headers %v, want the form content type and issues", h)
		}
		if _, err := e.obs.Webhook(context.Background(), "github", h, []byte(form)); err != nil {
			t.Error(err)
		}
	})
	tests := []struct {
		name, body, signedBody string
		code                   string
		text                   string
	}{
		{"signed over the JSON, not the form", form, issuesBody, ora.EUNAUTHORIZED, "does not match"},
		{"payload not JSON", "payload=%7Bnot", "payload=%7Bnot", ora.EINVALID, "body.payload: not JSON"},
		{"payload not an object", "payload=%5B1%5D", "payload=%5B1%5D", ora.EINVALID, "body.payload: must be one JSON object"},
		{"no payload field", "action=opened", "action=opened", ora.EINVALID, "carries its JSON in the payload field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			_, err := e.obs.Webhook(context.Background(), "github", githubHeader(t, tt.signedBody), []byte(tt.body))
			if ora.ErrorCode(err) != tt.code || !strings.Contains(err.Error(), tt.text) {
				t.Errorf("err = %v, want %s containing %q", err, tt.code, tt.text)
			}
			if e.ledger.Len() != 0 || e.waves.Calls() != 0 {
				t.Errorf("%d entries, %d starts; want nothing written", e.ledger.Len(), e.waves.Calls())
			}
		})
	}
}

// Slack's form-encoded requests: slash commands and interactions are named
// and deduplicated by what they carry; the unsigned ssl_check is answered
// without a wave.
func TestSlackForms(t *testing.T) {
	interaction := func(v any) string {
		b, _ := json.Marshal(v)
		return "payload=" + url.QueryEscape(string(b))
	}
	tests := []struct {
		name, body          string
		eventType, dedupKey string
		field, value        string // a decoded payload field rules can test
	}{
		{"slash command", "token=t&team_id=T1&channel_id=C1&user_id=U1&command=%2Fdeploy&text=staging&trigger_id=111.222.abc&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F1",
			"slash_command.deploy", "111.222.abc", "text", "staging"},
		{"block_actions", interaction(map[string]any{"type": "block_actions", "trigger_id": "333.444.def", "user": map[string]any{"id": "U1"},
			"actions": []any{map[string]any{"action_id": "approve", "block_id": "b1", "type": "button", "value": "v", "action_ts": "1795175999.1"}}}),
			"interactive.block_actions", "333.444.def/approve@1795175999.1", "type", "block_actions"},
		{"view_submission", interaction(map[string]any{"type": "view_submission", "trigger_id": "555.666.ghi", "view": map[string]any{"id": "V1", "hash": "h1"}}),
			"interactive.view_submission", "555.666.ghi", "type", "view_submission"},
		{"view_closed", interaction(map[string]any{"type": "view_closed", "view": map[string]any{"id": "V2", "hash": "h2"}, "is_cleared": false}),
			"interactive.view_closed", "view:V2@h2", "type", "view_closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			h := signed(t, "slack", tt.body)
			h.Set("Content-Type", "application/x-www-form-urlencoded")
			r, err := e.obs.Webhook(context.Background(), "slack", h, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			_, sig := stored(t, e.ledger, r.SignalID)
			if sig.Source.EventType != tt.eventType || sig.DedupKey != tt.dedupKey {
				t.Errorf("event %q dedup %q, want %q %q", sig.Source.EventType, sig.DedupKey, tt.eventType, tt.dedupKey)
			}
			var payload map[string]any
			if err := json.Unmarshal(sig.Payload, &payload); err != nil || payload[tt.field] != tt.value {
				t.Errorf("payload %s (%v): want %s = %q decoded", sig.Payload, err, tt.field, tt.value)
			}
		})
	}

	ssl := []struct {
		name, body string
		probe      bool
	}{
		{"ssl_check unsigned", "ssl_check=1&token=gIkuvaNzQIHg97ATvDxqgjtO", true},
		{"ssl_check with a command is not a check", "ssl_check=1&command=%2Fdeploy", false},
		{"a command unsigned", "command=%2Fdeploy", false},
	}
	for _, tt := range ssl {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			h := map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}}
			r, err := e.obs.Webhook(context.Background(), "slack", h, []byte(tt.body))
			if tt.probe && (err != nil || r != (observe.Receipt{Probe: true})) {
				t.Errorf("receipt %+v, %v; want only Probe", r, err)
			}
			if !tt.probe && ora.ErrorCode(err) != ora.EUNAUTHORIZED {
				t.Errorf("err = %v, want %s", err, ora.EUNAUTHORIZED)
			}
			if e.ledger.Len() != 0 || e.waves.Calls() != 0 {
				t.Errorf("%d entries, %d starts; want nothing written", e.ledger.Len(), e.waves.Calls())
			}
		})
	}
}
