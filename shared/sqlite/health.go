package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ora-runtime/ora/shared/ora"
)

// One row, rewritten by each write probe (Health): a store that cannot
// write fails the probe rather than the next wave.
var _ = registerSchema("health", `
CREATE TABLE IF NOT EXISTS ora_health (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	at TEXT NOT NULL
);`)

// Health checks that the database takes a write: it rewrites one row of its
// own. Errors: ETRANSIENT when the file is busy, otherwise an error naming
// the file and why it cannot be written (read-only file or folder, full
// disk, ...).
func (d *DB) Health(ctx context.Context) error {
	_, err := d.w.ExecContext(ctx, `INSERT INTO ora_health (id, at) VALUES (1, ?)
		ON CONFLICT (id) DO UPDATE SET at = excluded.at`, d.now().UTC().Format(timeLayout))
	if err != nil {
		return d.fileError("write to", translate(err))
	}
	return nil
}

// QuickCheck runs SQLite's PRAGMA quick_check, the integrity check that
// reads every page without cross-checking indexes against their tables.
// Errors: one naming the file and the first problems SQLite reports.
func (d *DB) QuickCheck(ctx context.Context) error {
	rows, err := d.w.QueryContext(ctx, "PRAGMA quick_check(10)")
	if err != nil {
		return d.fileError("check", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return d.fileError("check", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return d.fileError("check", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("sqlite: %s is corrupt (PRAGMA quick_check: %s): restore it from a backup", d.path, strings.Join(problems, "; "))
	}
	return nil
}

// fileError says what could not be done to the database file, and why in
// words where SQLite's code has a usual cause.
func (d *DB) fileError(what string, err error) error {
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("sqlite: cannot open or create %s (or its -wal and -shm files beside it): is its folder writable? %w", d.path, err)
		case sqlite3.SQLITE_IOERR:
			return fmt.Errorf("sqlite: cannot %s %s (or the -wal and -shm files beside it): is its folder writable, the disk full? %w", what, d.path, err)
		case sqlite3.SQLITE_READONLY:
			return fmt.Errorf("sqlite: cannot %s %s: the file or its folder is read-only: %w", what, d.path, err)
		case sqlite3.SQLITE_FULL:
			return fmt.Errorf("sqlite: cannot %s %s: the disk is full: %w", what, d.path, err)
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("sqlite: %s is corrupt or not a database: restore it from a backup: %w", d.path, err)
		}
	}
	if ora.ErrorCode(err) == ora.ETRANSIENT {
		return fmt.Errorf("sqlite: %s %s: %w", what, d.path, err)
	}
	return fmt.Errorf("sqlite: cannot %s %s: %w", what, d.path, err)
}
