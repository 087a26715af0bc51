package observe_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
)

// TestCaptureRedactsRegisteredValues: a raw input holding a value of the
// registry of secrets is captured redacted, in every form the raw input
// keeps it (a JSON body, a form body URL-encoded, a header, a schedule's
// payload); the stored raw normalizes again to the stored signal (what the
// witness checks), the signal names what was redacted and the digest of
// the bytes as received; a raw input without any value is stored as it was.
func TestCaptureRedactsRegisteredValues(t *testing.T) {
	const canary = "canary+token/0042=" // '+', '/', '=' are escaped in a form
	tests := []struct {
		name     string
		capture  func(t *testing.T, o *observe.Observer) (observe.Receipt, error)
		redacted bool
	}{
		{name: "JSON body", redacted: true, capture: func(t *testing.T, o *observe.Observer) (observe.Receipt, error) {
			body := `{"type":"deploy","note":"the token is ` + canary + `"}`
			return o.Webhook(context.Background(), "ci", ci(t, body, "k1"), []byte(body))
		}},
		{name: "form body", redacted: true, capture: func(t *testing.T, o *observe.Observer) (observe.Receipt, error) {
			body := "command=%2Fora&text=" + url.QueryEscape("login "+canary) + "&user_id=U1"
			h := signed(t, "slack", body)
			h.Set("Content-Type", "application/x-www-form-urlencoded")
			return o.Webhook(context.Background(), "slack", h, []byte(body))
		}},
		{name: "delivery id header", redacted: true, capture: func(t *testing.T, o *observe.Observer) (observe.Receipt, error) {
			body := `{"type":"deploy"}`
			return o.Webhook(context.Background(), "ci", ci(t, body, "id-"+canary), []byte(body))
		}},
		{name: "schedule payload", redacted: true, capture: func(t *testing.T, o *observe.Observer) (observe.Receipt, error) {
			return o.Schedule(context.Background(), []byte(`{"job":"sync","scheduled_time":"2026-11-20T03:00:00Z","payload":{"key":"`+canary+`"}}`))
		}},
		{name: "nothing to redact", capture: func(t *testing.T, o *observe.Observer) (observe.Receipt, error) {
			body := `{"type":"deploy","note":"nothing secret"}`
			return o.Webhook(context.Background(), "ci", ci(t, body, "k2"), []byte(body))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			secrets := ora.NewSecrets()
			secrets.Add("connection:deploy", canary)
			e := newEnv(t, func(o *observe.Options) { o.Secrets = secrets })
			r, err := tc.capture(t, e.obs)
			if err != nil {
				t.Fatal(err)
			}
			entry, sig := stored(t, e.ledger, r.SignalID)
			var d observe.Delivery
			_ = json.Unmarshal(sig.Raw, &d)
			for where, b := range map[string][]byte{"entry": entry.Body, "raw": sig.Raw, "raw body": d.Body, "meta": []byte(strings.Join(mapValues(entry.Meta), " "))} {
				if strings.Contains(string(b), canary) || strings.Contains(string(b), url.QueryEscape(canary)) {
					t.Errorf("the canary is in the stored %s: %s", where, b)
				}
			}
			if err := sig.Validate(); err != nil {
				t.Errorf("stored signal: %v", err)
			}
			again, err := observe.Normalize(sig.Source.Type, sig.Raw)
			if err != nil {
				t.Fatalf("the stored raw does not normalize: %v", err)
			}
			if again.ID != sig.ID || again.DedupKey != sig.DedupKey || string(again.Payload) != string(sig.Payload) || again.Source != sig.Source {
				t.Errorf("re-normalized %+v, stored %+v", again, sig)
			}
			if !tc.redacted {
				if sig.Redacted != nil || sig.ReceivedDigest != "" {
					t.Errorf("redacted %v, received digest %q; want neither", sig.Redacted, sig.ReceivedDigest)
				}
				return
			}
			if strings.Join(sig.Redacted, ",") != "connection:deploy" {
				t.Errorf("redacted = %v, want [connection:deploy]", sig.Redacted)
			}
			if sig.ReceivedDigest == "" || sig.ReceivedDigest == sig.RawDigest {
				t.Errorf("received digest %q, raw digest %q: want the digest of the bytes as received, apart", sig.ReceivedDigest, sig.RawDigest)
			}
			if !strings.Contains(string(entry.Body)+string(d.Body)+strings.Join(mapValues(d.Header), " "), ora.Marker("connection:deploy")) &&
				!strings.Contains(string(sig.Raw), ora.Marker("connection:deploy")) {
				t.Errorf("the stored raw holds no marker: %s", sig.Raw)
			}
		})
	}
}

// ci signs a delivery of the ci source with its delivery id.
func ci(t *testing.T, body, key string) http.Header {
	t.Helper()
	h, err := observe.SignDelivery(sources[3], []byte(body), now, key)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
