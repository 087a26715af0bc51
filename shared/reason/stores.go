package reason

import (
	"context"
	"time"
)

// PatternCache keeps crystallized decisions (Pattern: the decision, its
// source and its signal's words) by signal fingerprint, each under the motor
// version that produced it; the bridge's finished stages use it too.
// shared/sqlite and shared/dynamo implement it in the ledger store. Bodies
// are opaque JSON to the store.
type PatternCache interface {
	// Get returns the body stored for fingerprint. Errors: ENOTFOUND when
	// there is none, it has expired, or it was stored under another motor
	// version (the motor changed: rules, prompts or model); ETRANSIENT.
	Get(ctx context.Context, fingerprint, motorVersion string) ([]byte, error)
	// Put stores body for fingerprint under motorVersion, replacing what was
	// there, expiring after ttl. Errors: EINVALID (empty key, ttl <= 0),
	// ETRANSIENT.
	Put(ctx context.Context, fingerprint, motorVersion string, body []byte, ttl time.Duration) error
}

// SpendMeter counts model spend per UTC day ("2006-01-02").
type SpendMeter interface {
	// Add adds usd to day's total atomically (concurrent adds never lose one)
	// and returns the new total. Errors: EINVALID (bad day, negative or NaN
	// amount), ETRANSIENT.
	Add(ctx context.Context, day string, usd float64) (float64, error)
	// Total returns day's total, 0 when nothing was spent. Errors: EINVALID,
	// ETRANSIENT.
	Total(ctx context.Context, day string) (float64, error)
}

// Day returns the spend-meter key of t: its UTC date.
func Day(t time.Time) string { return t.UTC().Format("2006-01-02") }
