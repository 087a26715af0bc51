package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

var _ = registerSchema("patterns", `
CREATE TABLE IF NOT EXISTS patterns (
	fingerprint   TEXT    NOT NULL PRIMARY KEY,
	motor_version TEXT    NOT NULL,
	body          TEXT    NOT NULL,
	expires_at    INTEGER NOT NULL -- Unix nanoseconds
);
CREATE TABLE IF NOT EXISTS spend (
	day       TEXT    NOT NULL PRIMARY KEY, -- UTC date, 2006-01-02
	micro_usd INTEGER NOT NULL              -- millionths of a US dollar
);
`)

// Patterns is the reasoner's pattern cache in the database (see
// reason.PatternCache): one row per signal fingerprint, holding the body, the
// motor version that produced it and its expiry.
type Patterns struct{ db *DB }

// Patterns returns the database's pattern cache.
func (d *DB) Patterns() *Patterns { return &Patterns{db: d} }

// Get returns the body stored for fingerprint. Errors: EINVALID (empty key),
// ENOTFOUND when there is none, it has expired or it was stored under another
// motor version, ETRANSIENT.
func (p *Patterns) Get(ctx context.Context, fingerprint, motorVersion string) ([]byte, error) {
	if fingerprint == "" || motorVersion == "" {
		return nil, fmt.Errorf("patterns: get: %w", ora.Invalid("fingerprint", "fingerprint and motor version are required"))
	}
	var motor, body string
	var expires int64
	err := p.db.r.QueryRowContext(ctx, `SELECT motor_version, body, expires_at FROM patterns WHERE fingerprint = ?`, fingerprint).Scan(&motor, &body, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, ora.Errorf(ora.ENOTFOUND, "patterns: no pattern for %s", fingerprint)
	case err != nil:
		return nil, fmt.Errorf("patterns: get %s: %w", fingerprint, translate(err))
	case expires <= p.db.now().UnixNano():
		return nil, ora.Errorf(ora.ENOTFOUND, "patterns: the pattern for %s has expired", fingerprint)
	case motor != motorVersion:
		return nil, ora.Errorf(ora.ENOTFOUND, "patterns: the pattern for %s is from motor %q, not %q", fingerprint, motor, motorVersion)
	}
	return []byte(body), nil
}

// Put stores body for fingerprint under motorVersion, replacing any earlier
// pattern, expiring after ttl. Errors: EINVALID, ETRANSIENT.
func (p *Patterns) Put(ctx context.Context, fingerprint, motorVersion string, body []byte, ttl time.Duration) error {
	switch {
	case fingerprint == "" || motorVersion == "":
		return fmt.Errorf("patterns: put: %w", ora.Invalid("fingerprint", "fingerprint and motor version are required"))
	case ttl <= 0:
		return fmt.Errorf("patterns: put %s: %w", fingerprint, ora.Invalid("ttl", "%v is not positive", ttl))
	case len(body) == 0:
		return fmt.Errorf("patterns: put %s: %w", fingerprint, ora.Invalid("body", "required"))
	}
	_, err := p.db.w.ExecContext(ctx, `INSERT INTO patterns (fingerprint, motor_version, body, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (fingerprint) DO UPDATE SET motor_version = excluded.motor_version, body = excluded.body, expires_at = excluded.expires_at`,
		fingerprint, motorVersion, string(body), p.db.now().Add(ttl).UnixNano())
	if err != nil {
		return fmt.Errorf("patterns: put %s: %w", fingerprint, translate(err))
	}
	return nil
}

// Spend is the reasoner's per-day spend counter in the database (see
// reason.SpendMeter). Amounts are kept as whole millionths of a dollar, so
// sums are exact.
type Spend struct{ db *DB }

// Spend returns the database's spend counter.
func (d *DB) Spend() *Spend { return &Spend{db: d} }

func checkDay(day string) error {
	if _, err := time.Parse("2006-01-02", day); err != nil {
		return ora.Invalid("day", "%q is not a date (2006-01-02)", day)
	}
	return nil
}

// Add adds usd to day's total in one statement (an upsert that adds to the
// stored amount, so concurrent adds never lose one) and returns the new total.
// Errors: EINVALID (bad day, negative or NaN amount), ETRANSIENT.
func (s *Spend) Add(ctx context.Context, day string, usd float64) (float64, error) {
	if err := checkDay(day); err != nil {
		return 0, fmt.Errorf("spend: add: %w", err)
	}
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0 {
		return 0, fmt.Errorf("spend: add %s: %w", day, ora.Invalid("usd", "%v is not a non-negative amount", usd))
	}
	var total int64
	err := s.db.w.QueryRowContext(ctx, `INSERT INTO spend (day, micro_usd) VALUES (?, ?)
		ON CONFLICT (day) DO UPDATE SET micro_usd = spend.micro_usd + excluded.micro_usd RETURNING micro_usd`,
		day, int64(math.Round(usd*1e6))).Scan(&total)
	if err != nil {
		return 0, fmt.Errorf("spend: add %s: %w", day, translate(err))
	}
	return float64(total) / 1e6, nil
}

// Total returns day's total, 0 when nothing was spent. Errors: EINVALID,
// ETRANSIENT.
func (s *Spend) Total(ctx context.Context, day string) (float64, error) {
	if err := checkDay(day); err != nil {
		return 0, fmt.Errorf("spend: total: %w", err)
	}
	var total int64
	err := s.db.r.QueryRowContext(ctx, `SELECT micro_usd FROM spend WHERE day = ?`, day).Scan(&total)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("spend: total %s: %w", day, translate(err))
	}
	return float64(total) / 1e6, nil
}
