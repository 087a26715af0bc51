package observe

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"hash"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ora-runtime/ora/shared/ora"
)

// Signature freshness windows: Slack's 5 minutes, Stripe's 300 seconds, and
// the same 5 minutes for hmac sources.
const (
	SlackTolerance  = 5 * time.Minute
	StripeTolerance = 300 * time.Second
	HMACTolerance   = 5 * time.Minute
)

// Provider headers.
const (
	headerGitHubSignature = "X-Hub-Signature-256"
	headerGitHubDelivery  = "X-GitHub-Delivery"
	headerGitHubEvent     = "X-GitHub-Event"
	headerSlackSignature  = "X-Slack-Signature"
	headerSlackTimestamp  = "X-Slack-Request-Timestamp"
	headerSlackRetryNum   = "X-Slack-Retry-Num"
	headerSlackRetryWhy   = "X-Slack-Retry-Reason"
	headerStripeSignature = "Stripe-Signature"
	headerIdempotencyKey  = "Idempotency-Key"
	headerEventType       = "X-Event-Type"
)

func hashFunc(name string) (func() hash.Hash, error) {
	switch name {
	case "sha256":
		return sha256.New, nil
	case "sha1":
		return sha1.New, nil
	case "sha512":
		return sha512.New, nil
	}
	return nil, ora.Invalid("source.hash", "%q is not sha256, sha1 or sha512", name)
}

func mac(h func() hash.Hash, secret string, parts ...[]byte) []byte {
	m := hmac.New(h, []byte(secret))
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

func unauthorized(format string, args ...any) error {
	return ora.Errorf(ora.EUNAUTHORIZED, format, args...)
}

// verify checks the request's signature as cfg says, at time now. Errors:
// EUNAUTHORIZED (missing, malformed, wrong or stale signature).
func verify(cfg SourceConfig, header http.Header, body []byte, now time.Time) error {
	switch cfg.Type {
	case TypeNone:
		return nil
	case TypeGitHub:
		got, ok := strings.CutPrefix(header.Get(headerGitHubSignature), "sha256=")
		if !ok {
			return unauthorized("missing or malformed %s", headerGitHubSignature)
		}
		return compareHex(got, mac(sha256.New, cfg.Secret, body), headerGitHubSignature)
	case TypeSlack:
		ts := header.Get(headerSlackTimestamp)
		if err := fresh(ts, now, SlackTolerance, headerSlackTimestamp); err != nil {
			return err
		}
		got, ok := strings.CutPrefix(header.Get(headerSlackSignature), "v0=")
		if !ok {
			return unauthorized("missing or malformed %s", headerSlackSignature)
		}
		return compareHex(got, mac(sha256.New, cfg.Secret, []byte("v0:"+ts+":"), body), headerSlackSignature)
	case TypeStripe:
		return verifyStripe(cfg.Secret, header.Get(headerStripeSignature), body, now)
	case TypeHMAC:
		h, err := hashFunc(cfg.Hash)
		if err != nil {
			return err
		}
		got := header.Get(cfg.Header)
		got = strings.TrimPrefix(got, cfg.Hash+"=")
		if got == "" {
			return unauthorized("missing %s", cfg.Header)
		}
		if cfg.LegacyBodyOnly {
			return compareHex(got, mac(h, cfg.Secret, body), cfg.Header)
		}
		ts := header.Get(cfg.TimestampHeader)
		if err := fresh(ts, now, HMACTolerance, cfg.TimestampHeader); err != nil {
			return err
		}
		id := header.Get(cfg.DeliveryHeader)
		if id == "" {
			return unauthorized("missing %s (the delivery id, signed with the timestamp and the body)", cfg.DeliveryHeader)
		}
		return compareHex(got, mac(h, cfg.Secret, hmacMessage(ts, id, body)...), cfg.Header)
	}
	return ora.Errorf(ora.EINTERNAL, "source %s has unknown type %q", cfg.Name, cfg.Type)
}

// hmacMessage is what an hmac source signs: "<timestamp>.<delivery id>.<body>".
func hmacMessage(ts, id string, body []byte) [][]byte {
	return [][]byte{[]byte(ts + "." + id + "."), body}
}

// compareHex compares a hex signature with want in constant time.
func compareHex(got string, want []byte, name string) error {
	sig, err := hex.DecodeString(got)
	if err != nil {
		return unauthorized("malformed %s", name)
	}
	if !hmac.Equal(sig, want) {
		return unauthorized("%s does not match", name)
	}
	return nil
}

// fresh checks that a unix-seconds timestamp is within tolerance of now.
func fresh(ts string, now time.Time, tolerance time.Duration, name string) error {
	if ts == "" {
		return unauthorized("missing %s", name)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return unauthorized("malformed %s", name)
	}
	switch d := now.Sub(time.Unix(sec, 0)); {
	case d > tolerance:
		return unauthorized("%s is stale: %s old, more than %s", name, span(d), span(tolerance))
	case d < -tolerance:
		return unauthorized("%s is %s ahead of this server's clock, more than %s", name, span(-d), span(tolerance))
	}
	return nil
}

// span writes a duration to the second without zero units: "5m2s", "10m",
// "1h", "1h5m".
func span(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// verifyStripe checks a Stripe-Signature header: t=TIMESTAMP and one or more
// v1=HEX signatures over "TIMESTAMP.BODY"; any v1 matching is enough.
func verifyStripe(secret, header string, body []byte, now time.Time) error {
	if header == "" {
		return unauthorized("missing %s", headerStripeSignature)
	}
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	if ts == "" || len(sigs) == 0 {
		return unauthorized("malformed %s: want t=... and v1=...", headerStripeSignature)
	}
	if err := fresh(ts, now, StripeTolerance, headerStripeSignature+" t"); err != nil {
		return err
	}
	want := mac(sha256.New, secret, []byte(ts+"."), body)
	matched := false
	for _, s := range sigs {
		if b, err := hex.DecodeString(s); err == nil && hmac.Equal(b, want) {
			matched = true
		}
	}
	if !matched {
		return unauthorized("no %s v1 signature matches", headerStripeSignature)
	}
	return nil
}

// Sign returns the headers a request with body must carry to pass as a
// delivery from the source cfg at time now: the signature (and timestamp) the
// provider would send, Content-Type (JSON, or a form for a body that is a
// form: GitHub's form deliveries, Slack's commands and interactions), and for
// github an X-GitHub-Delivery derived from the body (sending the same file
// twice is a redelivery) and an X-GitHub-Event guessed from the body's keys
// (githubEventKeys, else ping; set it yourself to override); for hmac the
// delivery id is derived from the body the same way. Errors: EINVALID (a bad
// config).
func Sign(cfg SourceConfig, body []byte, now time.Time) (http.Header, error) {
	return SignDelivery(cfg, body, now, "")
}

// SignDelivery is Sign with the delivery id given (empty: derived from the
// body). For hmac the id goes in the delivery header and under the
// signature; other types ignore it (github's comes from the body, slack's
// and stripe's are in the body). `ora send` uses it. Errors: EINVALID.
func SignDelivery(cfg SourceConfig, body []byte, now time.Time, id string) (http.Header, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if id == "" {
		id = uuid.NewSHA1(uuid.NameSpaceURL, []byte("ora:"+ora.Digest(body))).String()
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if !json.Valid(body) {
		if _, err := url.ParseQuery(string(body)); err == nil {
			h.Set("Content-Type", formContentType) // GitHub's form deliveries, Slack's commands and interactions
		}
	}
	switch cfg.Type {
	case TypeGitHub:
		h.Set(headerGitHubSignature, "sha256="+hex.EncodeToString(mac(sha256.New, cfg.Secret, body)))
		h.Set(headerGitHubDelivery, id)
		h.Set(headerGitHubEvent, guessGitHubEvent(body))
	case TypeSlack:
		ts := strconv.FormatInt(now.Unix(), 10)
		h.Set(headerSlackTimestamp, ts)
		h.Set(headerSlackSignature, "v0="+hex.EncodeToString(mac(sha256.New, cfg.Secret, []byte("v0:"+ts+":"), body)))
	case TypeStripe:
		ts := strconv.FormatInt(now.Unix(), 10)
		h.Set(headerStripeSignature, "t="+ts+",v1="+hex.EncodeToString(mac(sha256.New, cfg.Secret, []byte(ts+"."), body)))
	case TypeHMAC:
		fn, err := hashFunc(cfg.Hash)
		if err != nil {
			return nil, err
		}
		if cfg.LegacyBodyOnly {
			h.Set(cfg.Header, hex.EncodeToString(mac(fn, cfg.Secret, body)))
			break
		}
		ts := strconv.FormatInt(now.Unix(), 10)
		h.Set(cfg.TimestampHeader, ts)
		h.Set(cfg.DeliveryHeader, id)
		h.Set(cfg.Header, hex.EncodeToString(mac(fn, cfg.Secret, hmacMessage(ts, id, body)...)))
	}
	return h, nil
}
