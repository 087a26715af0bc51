package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// A window is one row per entity; a member (a signal that joined another's
// window) one row per entity and signal, kept an hour after its window so
// that a retried delivery finds the window it joined. The table of the first
// version (coalesce_window: no seal, no members) held windows of half a
// second; it is dropped.
var _ = registerSchema("coalesce", `
DROP TABLE IF EXISTS coalesce_window;
CREATE TABLE IF NOT EXISTS coalesce_windows (
	entity     TEXT    NOT NULL PRIMARY KEY,
	leader     TEXT    NOT NULL,           -- the signal whose wave holds the window's signals
	expires_at INTEGER NOT NULL,           -- Unix nanoseconds: the end of the window
	sealed     INTEGER NOT NULL DEFAULT 0  -- 1 once the leader closed it to new members
);
CREATE TABLE IF NOT EXISTS coalesce_members (
	entity     TEXT    NOT NULL,
	signal_id  TEXT    NOT NULL,
	leader     TEXT    NOT NULL,
	expires_at INTEGER NOT NULL, -- the end of the window it joined
	PRIMARY KEY (entity, signal_id)
);
`)

// memberKeep is how long a member row outlives its window.
const memberKeep = time.Hour

// Coalesce claims the coalescing window of entity for signalID when none is
// open (none yet, the last one ended or was sealed), or joins the open one
// as a member, and returns the window's leader (signalID when this call
// claimed it) and its end; a signal that joined a window before (a retried
// delivery) gets that window back, sealed or not. See observe.Coalescer. One
// write transaction decides, so it holds across processes sharing the file.
// Errors: EINVALID (an empty entity or signal id, a window that is not
// positive), ETRANSIENT.
func (d *DB) Coalesce(ctx context.Context, entity, signalID string, window time.Duration) (leader string, until time.Time, err error) {
	switch {
	case entity == "":
		return "", time.Time{}, fmt.Errorf("coalesce: %w", ora.Invalid("entity", "required"))
	case signalID == "":
		return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, ora.Invalid("signal_id", "required"))
	case window <= 0:
		return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, ora.Invalid("window", "%v is not positive", window))
	}
	now := d.now()
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, translate(err))
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var end int64
	done := func() (string, time.Time, error) {
		if err := tx.Commit(); err != nil {
			return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, translate(err))
		}
		return leader, time.Unix(0, end).UTC(), nil
	}
	err = tx.QueryRowContext(ctx, `SELECT leader, expires_at FROM coalesce_members WHERE entity = ? AND signal_id = ?`,
		entity, signalID).Scan(&leader, &end)
	switch {
	case err == nil: // a retried delivery of a member
		return done()
	case !errors.Is(err, sql.ErrNoRows):
		return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, translate(err))
	}
	err = tx.QueryRowContext(ctx, `INSERT INTO coalesce_windows (entity, leader, expires_at, sealed) VALUES (?, ?, ?, 0)
		ON CONFLICT (entity) DO UPDATE SET leader = excluded.leader, expires_at = excluded.expires_at, sealed = 0
			WHERE coalesce_windows.expires_at <= ? OR coalesce_windows.sealed = 1
		RETURNING leader, expires_at`,
		entity, signalID, now.Add(window).UnixNano(), now.UnixNano()).Scan(&leader, &end)
	switch {
	case err == nil: // claimed; members of windows long gone are cleared
		if _, err = tx.ExecContext(ctx, `DELETE FROM coalesce_members WHERE entity = ? AND expires_at < ?`,
			entity, now.Add(-memberKeep).UnixNano()); err != nil {
			return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, translate(err))
		}
		return done()
	case !errors.Is(err, sql.ErrNoRows):
		return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, translate(err))
	}
	// An open window holds the entity: join it (unless this is its leader's
	// retried delivery).
	if err = tx.QueryRowContext(ctx, `SELECT leader, expires_at FROM coalesce_windows WHERE entity = ?`, entity).Scan(&leader, &end); err != nil {
		return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, translate(err))
	}
	if leader != signalID {
		if _, err = tx.ExecContext(ctx, `INSERT INTO coalesce_members (entity, signal_id, leader, expires_at) VALUES (?, ?, ?, ?)`,
			entity, signalID, leader, end); err != nil {
			return "", time.Time{}, fmt.Errorf("coalesce %s: join %s: %w", entity, leader, translate(err))
		}
	}
	return done()
}

// Seal closes leader's window of entity to new members and returns its
// members, sorted; see observe.Coalescer. A window already sealed, or taken
// over by a later leader, is left as it is: either way no signal joins
// leader's window any more. Errors: EINVALID, ETRANSIENT.
func (d *DB) Seal(ctx context.Context, entity, leader string) ([]string, error) {
	if entity == "" || leader == "" {
		return nil, fmt.Errorf("seal: %w", ora.Invalid("entity", "an entity and a leader are required"))
	}
	if _, err := d.w.ExecContext(ctx, `UPDATE coalesce_windows SET sealed = 1 WHERE entity = ? AND leader = ?`, entity, leader); err != nil {
		return nil, fmt.Errorf("seal %s: %w", entity, translate(err))
	}
	return d.Members(ctx, entity, leader)
}

// Members returns the signals that joined leader's window of entity,
// sorted, and writes nothing; see observe.Coalescer. Errors: EINVALID,
// ETRANSIENT.
func (d *DB) Members(ctx context.Context, entity, leader string) ([]string, error) {
	if entity == "" || leader == "" {
		return nil, fmt.Errorf("coalescing members: %w", ora.Invalid("entity", "an entity and a leader are required"))
	}
	// The write connection: it sees every join committed before it.
	rows, err := d.w.QueryContext(ctx, `SELECT signal_id FROM coalesce_members WHERE entity = ? AND leader = ? ORDER BY signal_id`, entity, leader)
	if err != nil {
		return nil, fmt.Errorf("coalescing members of %s: %w", entity, translate(err))
	}
	defer rows.Close()
	var members []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("coalescing members of %s: %w", entity, translate(err))
		}
		members = append(members, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("coalescing members of %s: %w", entity, translate(err))
	}
	return members, nil
}
