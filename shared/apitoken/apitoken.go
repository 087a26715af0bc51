// Package apitoken signs and verifies the bearer tokens of the REST API
// profile (CDK context ora:api=rest), which has no Cognito: a token is a
// JWT signed with HMAC-SHA256 (HS256) under a key kept in Secrets Manager
// (the stack's ApiTokenKey secret). The API's Lambda authorizer verifies it
// locally, without calling an identity provider; the api function then
// checks each route's scope from the claims the authorizer passes on.
//
// Claims: sub (the caller, required), scope (space-separated scopes, as
// OAuth access tokens carry them), exp (required, seconds since the epoch),
// iat, and ora_namespace (optional).
package apitoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// MinKeyBytes is the shortest signing key accepted: HS256 keys shorter than
// the hash add no strength.
const MinKeyBytes = 32

// MaxLifetime is the longest a token may live; longer ones are refused when
// verified, so a leaked token expires.
const MaxLifetime = 7 * 24 * time.Hour

// Claims are what a token asserts.
type Claims struct {
	Subject   string `json:"sub"`
	Scope     string `json:"scope,omitempty"`
	Namespace string `json:"ora_namespace,omitempty"`
	IssuedAt  int64  `json:"iat,omitempty"`
	ExpiresAt int64  `json:"exp"`
}

var header = b64([]byte(`{"alg":"HS256","typ":"JWT"}`))

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func sign(key []byte, msg string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return b64(m.Sum(nil))
}

// Sign returns a token for c valid from now for ttl. Errors: EINVALID for a
// short key, an empty subject or a ttl outside (0, MaxLifetime].
func Sign(key []byte, c Claims, now time.Time, ttl time.Duration) (string, error) {
	switch {
	case len(key) < MinKeyBytes:
		return "", ora.Invalid("key", "%d bytes, want at least %d", len(key), MinKeyBytes)
	case c.Subject == "":
		return "", ora.Invalid("sub", "required")
	case ttl <= 0 || ttl > MaxLifetime:
		return "", ora.Invalid("ttl", "%v is outside (0, %v]", ttl, MaxLifetime)
	}
	c.IssuedAt, c.ExpiresAt = now.Unix(), now.Add(ttl).Unix()
	body, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("apitoken: %w", err)
	}
	msg := header + "." + b64(body)
	return msg + "." + sign(key, msg), nil
}

// Verify checks token's signature under key (in constant time), its
// algorithm, and that it is unexpired at now and not longer-lived than
// MaxLifetime; it returns the claims. Errors: EUNAUTHORIZED naming what is
// wrong (never the key).
func Verify(key []byte, token string, now time.Time) (Claims, error) {
	unauthorized := func(format string, args ...any) (Claims, error) {
		return Claims{}, ora.Errorf(ora.EUNAUTHORIZED, "bearer token: "+format, args...)
	}
	if len(key) < MinKeyBytes {
		return unauthorized("the signing key is not configured")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return unauthorized("not a JWT (three dot-separated parts)")
	}
	if !hmac.Equal([]byte(sign(key, parts[0]+"."+parts[1])), []byte(parts[2])) {
		return unauthorized("bad signature")
	}
	h, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return unauthorized("header is not base64url")
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(h, &hdr) != nil || hdr.Alg != "HS256" {
		return unauthorized("algorithm is not HS256")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return unauthorized("payload is not base64url")
	}
	var c Claims
	if err := json.Unmarshal(b, &c); err != nil {
		return unauthorized("payload is not JSON claims")
	}
	switch {
	case c.Subject == "":
		return unauthorized("no subject (sub)")
	case c.ExpiresAt == 0:
		return unauthorized("no expiry (exp)")
	case now.Unix() >= c.ExpiresAt:
		return unauthorized("expired at %s", time.Unix(c.ExpiresAt, 0).UTC().Format(time.RFC3339))
	case time.Unix(c.ExpiresAt, 0).Sub(now) > MaxLifetime:
		return unauthorized("lives longer than %v", MaxLifetime)
	}
	return c, nil
}

// Scopes returns the token's scopes.
func (c Claims) Scopes() []string { return strings.Fields(c.Scope) }
