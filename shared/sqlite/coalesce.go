package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

var _ = registerSchema("coalesce", `
CREATE TABLE IF NOT EXISTS coalesce_window (
	entity     TEXT    NOT NULL PRIMARY KEY,
	leader     TEXT    NOT NULL, -- the signal whose wave holds the window's signals
	expires_at INTEGER NOT NULL  -- Unix nanoseconds: the end of the window
);
`)

// Coalesce claims the coalescing window of entity for signalID when none is
// open, and returns the window's leader (signalID when this call claimed it)
// and its end; see observe.Coalescer. One statement inserts the window or
// takes over one that has ended, so it holds across processes sharing the
// file. Errors: EINVALID (an empty entity or signal id, a window that is not
// positive), ETRANSIENT.
func (d *DB) Coalesce(ctx context.Context, entity, signalID string, window time.Duration) (string, time.Time, error) {
	switch {
	case entity == "":
		return "", time.Time{}, fmt.Errorf("coalesce: %w", ora.Invalid("entity", "required"))
	case signalID == "":
		return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, ora.Invalid("signal_id", "required"))
	case window <= 0:
		return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, ora.Invalid("window", "%v is not positive", window))
	}
	now := d.now()
	var leader string
	var end int64
	err := d.w.QueryRowContext(ctx, `INSERT INTO coalesce_window (entity, leader, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (entity) DO UPDATE SET leader = excluded.leader, expires_at = excluded.expires_at
			WHERE coalesce_window.expires_at <= ?
		RETURNING leader, expires_at`,
		entity, signalID, now.Add(window).UnixNano(), now.UnixNano()).Scan(&leader, &end)
	switch {
	case err == nil:
		return leader, time.Unix(0, end).UTC(), nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, translate(err))
	}
	// No row returned: an open window holds the entity; read its leader.
	err = d.w.QueryRowContext(ctx, `SELECT leader, expires_at FROM coalesce_window WHERE entity = ?`, entity).Scan(&leader, &end)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, translate(err))
	}
	return leader, time.Unix(0, end).UTC(), nil
}
