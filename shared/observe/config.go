package observe

import (
	"fmt"
	"regexp"

	"github.com/ora-runtime/ora/shared/ora"
)

// Webhook provider types a SourceConfig may name.
const (
	TypeGitHub = "github"
	TypeSlack  = "slack"
	TypeStripe = "stripe"
	TypeHMAC   = "hmac"
	TypeNone   = "none"
)

// Defaults for the generic hmac provider.
const (
	DefaultHMACHeader          = "X-Signature"
	DefaultHMACHash            = "sha256"
	DefaultHMACTimestampHeader = "X-Ora-Timestamp"
	DefaultHMACDeliveryHeader  = "Idempotency-Key"
)

// SourceConfig is one configured webhook source: requests to
// POST /webhooks/{Name} are verified as Type.
type SourceConfig struct {
	// Name is the path segment, e.g. "github"; letters, digits, '-', '_' and '.'.
	Name string `json:"name" yaml:"name"`
	// Type is the provider: github, slack, stripe, hmac or none.
	Type string `json:"type" yaml:"type"`
	// Secret is the shared signing secret (GitHub webhook secret, Slack signing
	// secret, Stripe endpoint secret whsec_..., or the hmac key). Required for
	// every type but none.
	Secret string `json:"secret,omitempty" yaml:"secret,omitempty"`
	// Header is the hmac type's signature header (default X-Signature).
	Header string `json:"header,omitempty" yaml:"header,omitempty"`
	// Hash is the hmac type's hash: sha256 (default), sha1 or sha512.
	Hash string `json:"hash,omitempty" yaml:"hash,omitempty"`
	// TimestampHeader is the hmac type's header holding the unix seconds the
	// sender signed at (default X-Ora-Timestamp); it must be within
	// HMACTolerance of now.
	TimestampHeader string `json:"timestamp_header,omitempty" yaml:"timestamp_header,omitempty"`
	// DeliveryHeader is the hmac type's header holding the delivery id
	// (default Idempotency-Key): signed, and the signal's dedup key, so a
	// replay is a duplicate.
	DeliveryHeader string `json:"delivery_header,omitempty" yaml:"delivery_header,omitempty"`
	// LegacyBodyOnly makes an hmac source verify a signature of the body
	// alone, with no timestamp and an unsigned delivery id: replayable, kept
	// only for senders that cannot sign more.
	LegacyBodyOnly bool `json:"legacy_body_only,omitempty" yaml:"legacy_body_only,omitempty"`
}

var sourceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Validate checks the config and fills the hmac defaults. Errors: EINVALID.
func (c *SourceConfig) Validate() error {
	if !sourceName.MatchString(c.Name) {
		return ora.Invalid("source.name", "%q must be 1-64 letters, digits, '.', '-' or '_'", c.Name)
	}
	switch c.Type {
	case TypeGitHub, TypeSlack, TypeStripe:
	case TypeHMAC:
		if c.Header == "" {
			c.Header = DefaultHMACHeader
		}
		if c.Hash == "" {
			c.Hash = DefaultHMACHash
		}
		if c.TimestampHeader == "" {
			c.TimestampHeader = DefaultHMACTimestampHeader
		}
		if c.DeliveryHeader == "" {
			c.DeliveryHeader = DefaultHMACDeliveryHeader
		}
		if _, err := hashFunc(c.Hash); err != nil {
			return fmt.Errorf("source %s: %w", c.Name, err)
		}
	case TypeNone:
		if c.Secret != "" {
			return ora.Invalid("source.secret", "source %s is type none: a secret would be ignored", c.Name)
		}
		return nil
	case "":
		return ora.Invalid("source.type", "source %s: required (github, slack, stripe, hmac or none)", c.Name)
	default:
		return ora.Invalid("source.type", "source %s: %q is not github, slack, stripe, hmac or none", c.Name, c.Type)
	}
	if c.Secret == "" {
		return ora.Invalid("source.secret", "source %s: required for a %s source: the secret the provider signs its deliveries with", c.Name, c.Type)
	}
	return nil
}
