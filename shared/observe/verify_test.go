package observe

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Published examples: GitHub's "Validating webhook deliveries" and Slack's
// "Verifying requests from Slack" pages. They prove the signing is the
// providers', not merely self-consistent.
func TestSignMatchesProviderExamples(t *testing.T) {
	t.Run("github", func(t *testing.T) {
		h, err := Sign(SourceConfig{Name: "gh", Type: TypeGitHub, Secret: "It's a Secret to Everybody"}, []byte("Hello, World!"), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		want := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
		if got := h.Get("X-Hub-Signature-256"); got != want {
			t.Errorf("signature = %s, want %s", got, want)
		}
	})
	t.Run("slack", func(t *testing.T) {
		body := "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
		h, err := Sign(SourceConfig{Name: "sl", Type: TypeSlack, Secret: "8f742231b10e8888abcd99yyyzzz85a5"}, []byte(body), time.Unix(1531420618, 0))
		if err != nil {
			t.Fatal(err)
		}
		want := "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
		if got := h.Get("X-Slack-Signature"); got != want {
			t.Errorf("signature = %s, want %s", got, want)
		}
	})
}

func TestVerify(t *testing.T) {
	now := time.Unix(1795176000, 0)
	body := []byte(`{"id":"evt_1","type":"ping"}`)
	sign := func(t *testing.T, cfg SourceConfig, at time.Time) http.Header {
		t.Helper()
		h, err := Sign(cfg, body, at)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	gh := SourceConfig{Name: "gh", Type: TypeGitHub, Secret: "s3cret"}
	sl := SourceConfig{Name: "sl", Type: TypeSlack, Secret: "s3cret"}
	st := SourceConfig{Name: "st", Type: TypeStripe, Secret: "whsec_s3cret"}
	hm := SourceConfig{Name: "hm", Type: TypeHMAC, Secret: "s3cret", Header: "X-Ora-Signature", Hash: "sha512"}
	h1 := SourceConfig{Name: "h1", Type: TypeHMAC, Secret: "s3cret", Hash: "sha1"}
	for _, c := range []*SourceConfig{&gh, &sl, &st, &hm, &h1} {
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		cfg    SourceConfig
		header func(t *testing.T) http.Header
		ok     bool
	}{
		{"github signed", gh, func(t *testing.T) http.Header { return sign(t, gh, now) }, true},
		{"github missing", gh, func(*testing.T) http.Header { return http.Header{} }, false},
		{"github no prefix", gh, func(t *testing.T) http.Header {
			h := sign(t, gh, now)
			h.Set("X-Hub-Signature-256", h.Get("X-Hub-Signature-256")[len("sha256="):])
			return h
		}, false},
		{"github other secret", gh, func(t *testing.T) http.Header {
			return sign(t, SourceConfig{Name: "x", Type: TypeGitHub, Secret: "other"}, now)
		}, false},
		{"github not hex", gh, func(*testing.T) http.Header { return http.Header{"X-Hub-Signature-256": {"sha256=zz"}} }, false},
		{"slack signed", sl, func(t *testing.T) http.Header { return sign(t, sl, now) }, true},
		{"slack 4 minutes old", sl, func(t *testing.T) http.Header { return sign(t, sl, now.Add(-4*time.Minute)) }, true},
		{"slack 6 minutes old", sl, func(t *testing.T) http.Header { return sign(t, sl, now.Add(-6*time.Minute)) }, false},
		{"slack 6 minutes ahead", sl, func(t *testing.T) http.Header { return sign(t, sl, now.Add(6*time.Minute)) }, false},
		{"slack timestamp swapped", sl, func(t *testing.T) http.Header {
			h := sign(t, sl, now)
			h.Set("X-Slack-Request-Timestamp", strconv.FormatInt(now.Unix()-1, 10))
			return h
		}, false},
		{"slack no timestamp", sl, func(t *testing.T) http.Header {
			h := sign(t, sl, now)
			h.Del("X-Slack-Request-Timestamp")
			return h
		}, false},
		{"stripe signed", st, func(t *testing.T) http.Header { return sign(t, st, now) }, true},
		{"stripe second v1 matches", st, func(t *testing.T) http.Header {
			h := sign(t, st, now)
			h.Set("Stripe-Signature", "t="+strconv.FormatInt(now.Unix(), 10)+",v1=00ff,"+h.Get("Stripe-Signature")[len("t=1795176000,"):])
			return h
		}, true},
		{"stripe 301 s old", st, func(t *testing.T) http.Header { return sign(t, st, now.Add(-301*time.Second)) }, false},
		{"stripe no v1", st, func(*testing.T) http.Header { return http.Header{"Stripe-Signature": {"t=1795176000,v0=abc"}} }, false},
		{"stripe missing", st, func(*testing.T) http.Header { return http.Header{} }, false},
		{"hmac sha512 custom header", hm, func(t *testing.T) http.Header { return sign(t, hm, now) }, true},
		{"hmac with hash prefix", hm, func(t *testing.T) http.Header {
			h := sign(t, hm, now)
			h.Set("X-Ora-Signature", "sha512="+h.Get("X-Ora-Signature"))
			return h
		}, true},
		{"hmac wrong hash", hm, func(t *testing.T) http.Header {
			h := sign(t, SourceConfig{Name: "x", Type: TypeHMAC, Secret: "s3cret", Header: "X-Ora-Signature"}, now)
			return h
		}, false},
		{"hmac sha1 default header", h1, func(t *testing.T) http.Header { return sign(t, h1, now) }, true},
		{"hmac missing", h1, func(*testing.T) http.Header { return http.Header{} }, false},
		{"none", SourceConfig{Name: "n", Type: TypeNone}, func(*testing.T) http.Header { return http.Header{} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verify(tt.cfg, tt.header(t), body, now)
			if tt.ok && err != nil {
				t.Fatalf("verify: %v, want nil", err)
			}
			if !tt.ok && ora.ErrorCode(err) != ora.EUNAUTHORIZED {
				t.Fatalf("verify: %v, want %s", err, ora.EUNAUTHORIZED)
			}
		})
	}
}

func TestSourceConfigValidate(t *testing.T) {
	tests := []struct {
		name      string
		cfg       SourceConfig
		wantField string // "" means valid
	}{
		{"github", SourceConfig{Name: "github", Type: TypeGitHub, Secret: "x"}, ""},
		{"hmac defaults", SourceConfig{Name: "ci", Type: TypeHMAC, Secret: "x"}, ""},
		{"none", SourceConfig{Name: "open", Type: TypeNone}, ""},
		{"no name", SourceConfig{Type: TypeGitHub, Secret: "x"}, "source.name"},
		{"bad name", SourceConfig{Name: "a/b", Type: TypeGitHub, Secret: "x"}, "source.name"},
		{"no type", SourceConfig{Name: "a", Secret: "x"}, "source.type"},
		{"unknown type", SourceConfig{Name: "a", Type: "gitlab", Secret: "x"}, "source.type"},
		{"no secret", SourceConfig{Name: "a", Type: TypeStripe}, "source.secret"},
		{"none with secret", SourceConfig{Name: "a", Type: TypeNone, Secret: "x"}, "source.secret"},
		{"bad hash", SourceConfig{Name: "a", Type: TypeHMAC, Secret: "x", Hash: "md5"}, "source.hash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			err := cfg.Validate()
			if got := ora.ErrorField(err); got != tt.wantField {
				t.Fatalf("field = %q (%v), want %q", got, err, tt.wantField)
			}
			if tt.wantField == "" && cfg.Type == TypeHMAC && (cfg.Header != DefaultHMACHeader || cfg.Hash != DefaultHMACHash) {
				t.Errorf("hmac defaults = %q %q, want %q %q", cfg.Header, cfg.Hash, DefaultHMACHeader, DefaultHMACHash)
			}
		})
	}
}

// A stale timestamp says how old it is; one ahead says how far ahead.
func TestFreshnessWording(t *testing.T) {
	now := time.Unix(1795176000, 0)
	tests := []struct {
		name string
		at   time.Time
		want string
	}{
		{"past", now.Add(-(5*time.Minute + 2*time.Second)), "X-Slack-Request-Timestamp is stale: 5m2s old, more than 5m"},
		{"future", now.Add(10 * time.Minute), "X-Slack-Request-Timestamp is 10m ahead of this server's clock, more than 5m"},
		{"an hour ahead", now.Add(time.Hour), "is 1h ahead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fresh(strconv.FormatInt(tt.at.Unix(), 10), now, SlackTolerance, headerSlackTimestamp)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "from now") {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
