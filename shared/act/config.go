package act

import "time"

// Config is the actor's part of the configuration file (the `actions` key) and
// of a Lambda's environment. Every allow-list is closed by default: an empty
// list allows nothing.
type Config struct {
	HTTP   HTTPConfig   `yaml:"http" json:"http"`
	Object ObjectConfig `yaml:"object" json:"object"`
	Notify NotifyConfig `yaml:"notify" json:"notify"`
	// MaxParallel bounds the actions of one decision that run at once
	// (actions.max_parallel); 0 means DefaultMaxParallel.
	MaxParallel int `yaml:"max_parallel,omitempty" json:"max_parallel,omitempty"`
}

// HTTPConfig bounds the http.request action.
type HTTPConfig struct {
	// AllowedHosts lists where requests may go: "host", "host:port",
	// "scheme://host" or "scheme://host:port"; scheme, host and port match
	// exactly, a missing port being the scheme's (80 for http, 443 for https).
	AllowedHosts []string `yaml:"allowed_hosts" json:"allowed_hosts"`
	// SigningSecret keys the HMAC-SHA256 signature of each request body, sent
	// in the X-Ora-Signature header as "sha256=<hex>".
	SigningSecret string `yaml:"signing_secret" json:"signing_secret"`
	// TimeoutSeconds bounds each request; 0 means 10 seconds, and more than
	// MaxActionTimeout (60 s) means 60 s.
	TimeoutSeconds int `yaml:"timeout_seconds" json:"timeout_seconds"`
}

// Timeout returns the request timeout: 10 s when unset, at most
// MaxActionTimeout (the action's idempotency lock must outlast it).
func (c HTTPConfig) Timeout() time.Duration {
	if c.TimeoutSeconds <= 0 {
		return 10 * time.Second
	}
	return min(time.Duration(c.TimeoutSeconds)*time.Second, MaxActionTimeout)
}

// ObjectConfig bounds the object.put action.
type ObjectConfig struct {
	// AllowedPrefixes lists the key prefixes objects may be written under.
	AllowedPrefixes []string `yaml:"allowed_prefixes" json:"allowed_prefixes"`
	// Root is the folder objects are written to by the local implementation.
	Root string `yaml:"root" json:"root"`
	// Bucket is the S3 bucket objects are written to on AWS.
	Bucket string `yaml:"bucket" json:"bucket"`
}

// NotifyConfig configures the notify action.
type NotifyConfig struct {
	// TopicARN is the SNS topic notifications go to on AWS; empty locally,
	// where notifications go to the log (and the ledger, as evidence).
	TopicARN string `yaml:"topic_arn" json:"topic_arn"`
}
