package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/stepfn"
)

var _ ora.ExpiryReader = (*DB)(nil)

// The retention tables: an index of the entries that expire (partial: kept
// entries are not in it), and the record of each expired entry whose digest
// is kept (ora.DigestKeptKinds): an orientation packet's digest outlives its body,
// so a replay of it can say when it expired.
var _ = registerSchema("retention", `
CREATE INDEX IF NOT EXISTS ledger_entries_expiry ON ledger_entries (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS ledger_expired (
	signal_id  TEXT NOT NULL,
	kind       TEXT NOT NULL,
	qualifier  TEXT NOT NULL,
	digest     TEXT NOT NULL,
	created_at TEXT NOT NULL,
	expired_at TEXT NOT NULL,
	PRIMARY KEY (signal_id, kind, qualifier)
);
`)

// SweepOptions bound one Sweep.
type SweepOptions struct {
	// Batch is the most rows of each table one Sweep deletes, each table's
	// in a short transaction of its own, so writers wait for one batch at
	// most; of executions, each with its history, a tenth of it. Default
	// 200.
	Batch int
	// Executions is how long the engine's finished executions are kept
	// after they stopped; 0 keeps them.
	Executions time.Duration
	// VacuumPages is the most free pages one Sweep returns to the file
	// system (incremental vacuum). Default 256 (1 MB).
	VacuumPages int
	// WALBytes is the WAL size above which Sweep checkpoints it in TRUNCATE
	// mode (back to zero bytes). Default 16 MB.
	WALBytes int64
}

// Swept counts what one Sweep removed.
type Swept struct {
	Entries, FactBodies, Debounce, Idempotency, Executions int
	// VacuumedPages is how many free pages went back to the file system.
	VacuumedPages int
	// WALTruncated reports a TRUNCATE checkpoint.
	WALTruncated bool
}

// More reports whether a table filled its batch, so another Sweep may find
// more at once.
func (s Swept) More(batch int) bool {
	return s.Entries >= batch || s.FactBodies >= batch || s.Debounce >= batch || s.Idempotency >= batch || s.Executions >= max(1, batch/10)
}

// Total is how many rows the sweep deleted.
func (s Swept) Total() int {
	return s.Entries + s.FactBodies + s.Debounce + s.Idempotency + s.Executions
}

// Sweep deletes one bounded batch of each kind of expired row as of now:
// ledger entries past their expires_at (recording the digest of the kinds
// whose digest is kept, ora.DigestKeptKinds), the fact bodies no row
// refers to any more (factrefs.go), debounce records past their window,
// idempotency records past their expiry, and the engine's executions that
// stopped more than o.Executions ago (their history and checkpoint parts
// with them). Then it returns up to o.VacuumPages free pages to the file
// system when the file was created with incremental vacuum (AutoVacuum), and
// truncates the WAL when it has grown past o.WALBytes. Running it from a
// goroutine of its own keeps it off the waves' path: each batch is one short
// write transaction. Errors: ETRANSIENT, or the driver's.
func (d *DB) Sweep(ctx context.Context, now time.Time, o SweepOptions) (Swept, error) {
	if o.Batch <= 0 {
		o.Batch = 200
	}
	if o.VacuumPages <= 0 {
		o.VacuumPages = 256
	}
	if o.WALBytes <= 0 {
		o.WALBytes = 16 << 20
	}
	var s Swept
	var err error
	if s.Entries, err = d.sweepEntries(ctx, now, o.Batch); err != nil {
		return s, fmt.Errorf("sqlite: sweep ledger entries: %w", err)
	}
	// Fact bodies after the rows: a body expires with the last row that
	// refers to it, or later.
	if s.FactBodies, err = d.deleteBatch(ctx, `DELETE FROM fact_bodies WHERE rowid IN
		(SELECT rowid FROM fact_bodies WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT ?)`, formatTime(now), o.Batch); err != nil {
		return s, fmt.Errorf("sqlite: sweep fact bodies: %w", err)
	}
	if s.FactBodies > 0 {
		d.forgetFactBodies()
	}
	if s.Debounce, err = d.deleteBatch(ctx, `DELETE FROM debounce WHERE rowid IN
		(SELECT rowid FROM debounce WHERE expires_at < ? LIMIT ?)`, now.UnixNano(), o.Batch); err != nil {
		return s, fmt.Errorf("sqlite: sweep debounce records: %w", err)
	}
	if s.Idempotency, err = d.deleteBatch(ctx, `DELETE FROM idempotency WHERE rowid IN
		(SELECT rowid FROM idempotency WHERE expires_at <= ?1 AND (status != 'INPROGRESS' OR in_progress_expires_at <= ?1) LIMIT ?2)`,
		now.UnixNano(), o.Batch); err != nil {
		return s, fmt.Errorf("sqlite: sweep idempotency records: %w", err)
	}
	if o.Executions > 0 {
		if s.Executions, err = d.sweepExecutions(ctx, now.Add(-o.Executions), max(1, o.Batch/10)); err != nil {
			return s, fmt.Errorf("sqlite: sweep executions: %w", err)
		}
	}
	if s.Total() > 0 {
		if s.VacuumedPages, err = d.vacuum(ctx, o.VacuumPages); err != nil {
			return s, fmt.Errorf("sqlite: incremental vacuum: %w", err)
		}
	}
	if fi, err := os.Stat(d.path + "-wal"); err == nil && fi.Size() > o.WALBytes {
		if err := d.TruncateWAL(ctx); err != nil {
			return s, fmt.Errorf("sqlite: truncate the WAL: %w", err)
		}
		s.WALTruncated = true
	}
	return s, nil
}

// deleteBatch runs one DELETE and returns how many rows it removed.
func (d *DB) deleteBatch(ctx context.Context, query string, args ...any) (int, error) {
	res, err := d.w.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, translate(err)
	}
	n, err := res.RowsAffected()
	return int(n), translate(err)
}

// expiredBatch selects one batch of expired entries, oldest expiry first;
// both statements of sweepEntries select the same rows in one transaction.
const expiredBatch = `SELECT rowid FROM ledger_entries WHERE expires_at IS NOT NULL AND expires_at <= ?1
	ORDER BY expires_at, rowid LIMIT ?2`

// sweepEntries deletes a batch of expired entries in one transaction,
// recording first the digests the ledger keeps.
func (d *DB) sweepEntries(ctx context.Context, now time.Time, batch int) (int, error) {
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, translate(err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	at := formatTime(now)
	kept := ora.DigestKeptKinds()
	for _, k := range kept {
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger_expired (signal_id, kind, qualifier, digest, created_at, expired_at)
			SELECT signal_id, kind, qualifier, digest, created_at, expires_at FROM ledger_entries
			WHERE rowid IN (`+expiredBatch+`) AND kind = ?3 ON CONFLICT DO NOTHING`, at, batch, string(k)); err != nil {
			return 0, translate(err)
		}
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM ledger_entries WHERE rowid IN (`+expiredBatch+`)`, at, batch)
	if err != nil {
		return 0, translate(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, translate(err)
	}
	return int(n), translate(tx.Commit())
}

// sweepExecutions deletes up to batch executions that stopped before cutoff,
// with their history and checkpoint parts. It reads executions in the order
// they were created and stops at the first that started after cutoff (none
// after it can have stopped before); ones still running, or stopped since,
// are passed over by a cursor that starts again from the oldest once a pass
// reaches the end.
func (d *DB) sweepExecutions(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT rowid, arn, status, execution FROM stepfn_executions
		WHERE rowid > ? ORDER BY rowid LIMIT ?`, d.execCursor.Load(), batch)
	if err != nil {
		return 0, translate(err)
	}
	var (
		arns   []string
		last   int64
		seen   int
		recent bool // met an execution that started after cutoff
		stored struct {
			StartDate time.Time `json:"startDate"`
			StopDate  time.Time `json:"stopDate"`
		}
	)
	for rows.Next() {
		var (
			rowid       int64
			arn, status string
			desc        string
		)
		if err := rows.Scan(&rowid, &arn, &status, &desc); err != nil {
			rows.Close()
			return 0, translate(err)
		}
		seen++
		stored.StartDate, stored.StopDate = time.Time{}, time.Time{}
		if err := json.Unmarshal([]byte(desc), &stored); err == nil && !stored.StartDate.Before(cutoff) {
			recent = true
			break
		}
		last = rowid
		if status != stepfn.StatusRunning && !stored.StopDate.IsZero() && stored.StopDate.Before(cutoff) {
			arns = append(arns, arn)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, translate(err)
	}
	if recent || seen < batch {
		d.execCursor.Store(0) // the next pass starts again from the oldest
	} else {
		d.execCursor.Store(last)
	}
	if len(arns) == 0 {
		return 0, nil
	}
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, translate(err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	for _, arn := range arns {
		for _, q := range []string{
			`DELETE FROM stepfn_history WHERE arn = ?`,
			`DELETE FROM stepfn_checkpoint_parts WHERE arn = ?`,
			// The status is read again: a redrive since the read keeps it.
			`DELETE FROM stepfn_executions WHERE arn = ? AND status != 'RUNNING'`,
		} {
			if _, err := tx.ExecContext(ctx, q, arn); err != nil {
				return 0, translate(err)
			}
		}
	}
	return len(arns), translate(tx.Commit())
}

// AutoVacuum returns the file's auto_vacuum mode: "none", "full" or
// "incremental". Open creates new files incremental; a file created before
// keeps "none" until it is rebuilt (see docs/ledger.md), and then the space of
// swept rows is reused by new ones but not returned to the file system.
func (d *DB) AutoVacuum(ctx context.Context) (string, error) {
	var mode int
	if err := d.w.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
		return "", fmt.Errorf("sqlite: auto_vacuum of %s: %w", d.path, translate(err))
	}
	switch mode {
	case 1:
		return "full", nil
	case 2:
		return "incremental", nil
	}
	return "none", nil
}

// vacuum returns up to pages free pages to the file system, when the file
// is in incremental mode.
func (d *DB) vacuum(ctx context.Context, pages int) (int, error) {
	var mode, free int
	if err := d.w.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil || mode != 2 {
		return 0, translate(err)
	}
	if err := d.w.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil || free == 0 {
		return 0, translate(err)
	}
	rows, err := d.w.QueryContext(ctx, fmt.Sprintf("PRAGMA incremental_vacuum(%d)", pages))
	if err != nil {
		return 0, translate(err)
	}
	for rows.Next() {
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, translate(err)
	}
	return min(free, pages), nil
}

// TruncateWAL checkpoints the WAL in TRUNCATE mode, which copies it back
// into the database and cuts it to zero bytes. It runs on the checkpointing
// connection (the writer's when there is none) with a busy timeout of 50 ms:
// while it waits for readers to finish, SQLite holds writers back, so it
// gives up soon rather than stall the waves, and the next sweep tries again.
// Sweep calls it when the WAL has grown past its limit. Errors: ETRANSIENT
// (readers or a writer kept it busy).
func (d *DB) TruncateWAL(ctx context.Context) error {
	pool := d.cp
	if pool == nil {
		pool = d.w
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return translate(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 50"); err != nil {
		return translate(err)
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", d.busy.Milliseconds()))
	}()
	// The background checkpointer may hold the checkpoint lock for a
	// moment (SQLite answers busy at once then): a few tries.
	for try := 0; ; try++ {
		var busy, logged, done int
		err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logged, &done)
		if err != nil && ora.ErrorCode(translate(err)) != ora.ETRANSIENT {
			return translate(err)
		}
		if err == nil && busy == 0 {
			return nil
		}
		if try == 4 {
			return ora.Errorf(ora.ETRANSIENT, "the WAL of %s is in use; truncated at the next sweep", d.path)
		}
		select {
		case <-ctx.Done():
			return translate(ctx.Err())
		case <-time.After(time.Duration(try+1) * 10 * time.Millisecond):
		}
	}
}

// ExpiredEntries returns the expired entries of signalID whose digests the
// ledger keeps; see ora.ExpiryReader.
func (d *DB) ExpiredEntries(ctx context.Context, signalID string) ([]ora.ExpiredEntry, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT kind, qualifier, digest, created_at, expired_at FROM ledger_expired
		WHERE signal_id = ? ORDER BY kind, qualifier`, signalID)
	if err != nil {
		return nil, fmt.Errorf("ledger: expired entries of %s: %w", signalID, translate(err))
	}
	defer rows.Close()
	var out []ora.ExpiredEntry
	for rows.Next() {
		var (
			x                 ora.ExpiredEntry
			kind, created, at string
		)
		if err := rows.Scan(&kind, &x.Qualifier, &x.Digest, &created, &at); err != nil {
			return nil, fmt.Errorf("ledger: expired entries of %s: %w", signalID, translate(err))
		}
		x.SignalID, x.Kind = signalID, ora.EntryKind(kind)
		if x.CreatedAt, err = parseTime(created); err == nil {
			x.ExpiredAt, err = parseTime(at)
		}
		if err != nil {
			return nil, fmt.Errorf("ledger: expired entries of %s: %w", signalID, err)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: expired entries of %s: %w", signalID, translate(err))
	}
	return out, nil
}
