package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

var _ = registerSchema("debounce", `
CREATE TABLE IF NOT EXISTS debounce (
	key        TEXT    NOT NULL PRIMARY KEY,
	expires_at INTEGER NOT NULL -- Unix nanoseconds: the end of the window
);
`)

// Debounce reports whether this is the first call for key within window; see
// ora.Debouncer. One statement inserts the key or takes over a record whose
// window has ended (expires_at < now), so it holds across processes sharing
// the file.
func (d *DB) Debounce(ctx context.Context, key string, window time.Duration) (bool, error) {
	switch {
	case key == "":
		return false, fmt.Errorf("debounce: %w", ora.Invalid("key", "required"))
	case window <= 0:
		return false, fmt.Errorf("debounce %s: %w", key, ora.Invalid("window", "%v is not positive", window))
	}
	now := d.now()
	res, err := d.w.ExecContext(ctx, `INSERT INTO debounce (key, expires_at) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE debounce.expires_at < ?`,
		key, now.Add(window).UnixNano(), now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("debounce %s: %w", key, translate(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("debounce %s: %w", key, translate(err))
	}
	return n == 1, nil
}
