package observe_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
)

// hmac sources sign "<timestamp>.<delivery id>.<body>": a replay with the
// same id is a duplicate, one with another id or outside the window is a
// 401, and neither writes anything; legacy_body_only keeps the old scheme.
func TestHMACReplay(t *testing.T) {
	ctx := context.Background()
	body := []byte(`{"type":"build.finished"}`)
	ci := sources[3] // hmac, X-CI-Signature, sha1
	legacy := observe.SourceConfig{Name: "old", Type: observe.TypeHMAC, Secret: "old-secret", LegacyBodyOnly: true}
	ledger := &observetest.Ledger{}
	obs, err := observe.New(ledger, &observetest.Waves{}, append(append([]observe.SourceConfig{}, sources...), legacy,
		observe.SourceConfig{Name: "custom", Type: observe.TypeHMAC, Secret: "c-secret", TimestampHeader: "X-Sent-At", DeliveryHeader: "X-Delivery"}),
		func(o *observe.Options) { o.Now = func() time.Time { return now } })
	if err != nil {
		t.Fatal(err)
	}
	h, err := observe.SignDelivery(ci, body, now, "d-1")
	if err != nil {
		t.Fatal(err)
	}
	first, err := obs.Webhook(ctx, "ci", h, body)
	if err != nil || first.Duplicate {
		t.Fatalf("first delivery: %+v, %v", first, err)
	}
	if ledger.Len() != 1 {
		t.Fatalf("entries %d, want 1", ledger.Len())
	}
	with := func(h http.Header, k, v string) http.Header {
		c := h.Clone()
		c.Set(k, v)
		return c
	}
	without := func(h http.Header, k string) http.Header {
		c := h.Clone()
		c.Del(k)
		return c
	}
	stale, _ := observe.SignDelivery(ci, body, now.Add(-observe.HMACTolerance-time.Second), "d-2")
	future, _ := observe.SignDelivery(ci, body, now.Add(observe.HMACTolerance+time.Second), "d-3")
	tests := []struct {
		name      string
		source    string
		header    http.Header
		wantCode  string // "" : accepted
		duplicate bool
	}{
		{"same delivery again", "ci", h, "", true},
		{"same signature, new id", "ci", with(h, "Idempotency-Key", "d-99"), ora.EUNAUTHORIZED, false},
		{"same signature, new timestamp", "ci", with(h, "X-Ora-Timestamp", fmt.Sprint(now.Unix()+1)), ora.EUNAUTHORIZED, false},
		{"no timestamp", "ci", without(h, "X-Ora-Timestamp"), ora.EUNAUTHORIZED, false},
		{"no delivery id", "ci", without(h, "Idempotency-Key"), ora.EUNAUTHORIZED, false},
		{"older than the window", "ci", stale, ora.EUNAUTHORIZED, false},
		{"later than the window", "ci", future, ora.EUNAUTHORIZED, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := obs.Webhook(ctx, tt.source, tt.header, body)
			if ora.ErrorCode(err) != tt.wantCode {
				t.Fatalf("got %v, want code %q", err, tt.wantCode)
			}
			if tt.wantCode == "" && (r.Duplicate != tt.duplicate || r.SignalID != first.SignalID) {
				t.Errorf("receipt %+v, want duplicate of %s", r, first.SignalID)
			}
			if ledger.Len() != 1 {
				t.Errorf("entries %d, want still 1", ledger.Len())
			}
		})
	}

	t.Run("configured header names", func(t *testing.T) {
		cfg, _ := obs.Source("custom")
		h, err := observe.SignDelivery(cfg, body, now, "x-7")
		if err != nil || h.Get("X-Sent-At") == "" || h.Get("X-Delivery") != "x-7" {
			t.Fatalf("headers %v, %v", h, err)
		}
		r, err := obs.Webhook(ctx, "custom", h, body)
		if err != nil || r.SignalID != observe.SignalID("custom", "x-7") {
			t.Errorf("receipt %+v, %v; want the signal of delivery x-7", r, err)
		}
		// An unsigned Idempotency-Key never replaces the signed id.
		h.Set("Idempotency-Key", "other")
		if r2, err := obs.Webhook(ctx, "custom", h, body); err != nil || !r2.Duplicate || r2.SignalID != r.SignalID {
			t.Errorf("with an unsigned Idempotency-Key: %+v, %v; want the same signal, duplicate", r2, err)
		}
	})

	t.Run("legacy_body_only", func(t *testing.T) {
		h, err := observe.Sign(legacy, body, now)
		if err != nil || h.Get("X-Ora-Timestamp") != "" {
			t.Fatalf("legacy headers %v, %v: want no timestamp", h, err)
		}
		h.Set("Idempotency-Key", "l-1")
		if _, err := obs.Webhook(ctx, "old", h, body); err != nil {
			t.Fatalf("body-only signature on a legacy source: %v", err)
		}
		// Not on a source that did not opt in.
		ciLegacy := ci
		ciLegacy.LegacyBodyOnly = true
		h2, _ := observe.SignDelivery(ciLegacy, body, now, "d-5")
		if _, err := obs.Webhook(ctx, "ci", h2, body); ora.ErrorCode(err) != ora.EUNAUTHORIZED {
			t.Errorf("body-only signature on a v2 source: %v, want %s", err, ora.EUNAUTHORIZED)
		}
	})
}

// One input contract, whichever home and store: a body must be valid UTF-8
// and JSON; otherwise EINVALID (400) naming the byte offset, and nothing is
// written.
func TestBodiesMustBeUTF8JSON(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"invalid UTF-8", "{\"a\":\"\xff\xfe\"}", "invalid UTF-8 at byte offset 6"},
		{"truncated UTF-8", "{\"a\":\"\xe2\x82\"}", "invalid UTF-8 at byte offset 6"},
		{"not JSON", `{"a":1,}`, "byte offset 8"},
		{"empty", ``, "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			h, err := observe.SignDelivery(sources[3], []byte(tt.body), now, "u-1")
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.obs.Webhook(context.Background(), "ci", h, []byte(tt.body))
			if ora.ErrorCode(err) != ora.EINVALID || ora.ErrorField(err) != "body" || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want EINVALID on body naming %q", err, tt.want)
			}
			if e.ledger.Len() != 0 {
				t.Errorf("entries %d, want none", e.ledger.Len())
			}
		})
	}
}
