package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// idempotencyDDL is the table of idempotency records. Times are Unix
// nanoseconds; 0 stands for "not set" (a COMPLETED record has no in-progress
// expiry).
const idempotencyDDL = `
CREATE TABLE IF NOT EXISTS idempotency (
	key                    TEXT PRIMARY KEY,
	status                 TEXT NOT NULL CHECK (status IN ('INPROGRESS', 'COMPLETED')),
	payload_hash           TEXT NOT NULL,
	response               BLOB,
	expires_at             INTEGER NOT NULL,
	in_progress_expires_at INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS idempotency_expires_at ON idempotency (expires_at);`

var _ = registerSchema("idempotency", idempotencyDDL)

// IdempotencyStore keeps ora.IdempotencyRecords in the idempotency table. Open
// creates the table.
type IdempotencyStore struct {
	db *DB
}

var _ ora.IdempotencyStore = (*IdempotencyStore)(nil)

// NewIdempotencyStore returns the idempotency store of db.
func NewIdempotencyStore(db *DB) *IdempotencyStore { return &IdempotencyStore{db: db} }

// PutInProgress writes rec as INPROGRESS with one upsert whose update only
// applies when the existing record has expired or is a lock past its
// in-progress expiry; when it does not apply, the record found is returned in
// an ECONFLICT error. The upsert and the read run in one IMMEDIATE transaction,
// so the record returned is the one that made the write lose.
func (s *IdempotencyStore) PutInProgress(ctx context.Context, rec ora.IdempotencyRecord, now time.Time) (err error) {
	if err := checkIdempotencyRecord(rec, ora.IdempotencyInProgress); err != nil {
		return err
	}
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return idempotencyErr("lock", rec.Key, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	res, err := tx.ExecContext(ctx, `
INSERT INTO idempotency (key, status, payload_hash, response, expires_at, in_progress_expires_at)
VALUES (?1, 'INPROGRESS', ?2, NULL, ?3, ?4)
ON CONFLICT (key) DO UPDATE SET
	status = excluded.status,
	payload_hash = excluded.payload_hash,
	response = NULL,
	expires_at = excluded.expires_at,
	in_progress_expires_at = excluded.in_progress_expires_at
WHERE idempotency.expires_at <= ?5
   OR (idempotency.status = 'INPROGRESS' AND idempotency.in_progress_expires_at <= ?5)`,
		rec.Key, rec.PayloadHash, unixNano(rec.ExpiresAt), unixNano(rec.InProgressExpiresAt), unixNano(now))
	if err != nil {
		return idempotencyErr("lock", rec.Key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return idempotencyErr("lock", rec.Key, err)
	}
	if n == 1 {
		if err := tx.Commit(); err != nil {
			return idempotencyErr("lock", rec.Key, err)
		}
		return nil
	}
	existing, err := getIdempotency(ctx, tx, rec.Key)
	if err != nil {
		return err
	}
	_ = tx.Rollback()
	return ora.Conflict(existing, "idempotency record %s exists (%s)", rec.Key, existing.Status)
}

// Complete replaces the record with rec as COMPLETED.
func (s *IdempotencyStore) Complete(ctx context.Context, rec ora.IdempotencyRecord) error {
	if err := checkIdempotencyRecord(rec, ora.IdempotencyCompleted); err != nil {
		return err
	}
	_, err := s.db.w.ExecContext(ctx, `
INSERT INTO idempotency (key, status, payload_hash, response, expires_at, in_progress_expires_at)
VALUES (?1, 'COMPLETED', ?2, ?3, ?4, ?5)
ON CONFLICT (key) DO UPDATE SET
	status = excluded.status,
	payload_hash = excluded.payload_hash,
	response = excluded.response,
	expires_at = excluded.expires_at,
	in_progress_expires_at = excluded.in_progress_expires_at`,
		rec.Key, rec.PayloadHash, rec.Response, unixNano(rec.ExpiresAt), unixNano(rec.InProgressExpiresAt))
	if err != nil {
		return idempotencyErr("complete", rec.Key, err)
	}
	return nil
}

// Delete removes the record for key.
func (s *IdempotencyStore) Delete(ctx context.Context, key string) error {
	if key == "" {
		return ora.Invalid("key", "idempotency key is empty")
	}
	if _, err := s.db.w.ExecContext(ctx, `DELETE FROM idempotency WHERE key = ?`, key); err != nil {
		return idempotencyErr("delete", key, err)
	}
	return nil
}

// Get returns the record for key, expired or not.
func (s *IdempotencyStore) Get(ctx context.Context, key string) (ora.IdempotencyRecord, error) {
	if key == "" {
		return ora.IdempotencyRecord{}, ora.Invalid("key", "idempotency key is empty")
	}
	return getIdempotency(ctx, s.db.r, key)
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func getIdempotency(ctx context.Context, q queryRower, key string) (ora.IdempotencyRecord, error) {
	var (
		rec        ora.IdempotencyRecord
		status     string
		exp, ipExp int64
	)
	err := q.QueryRowContext(ctx, `
SELECT key, status, payload_hash, response, expires_at, in_progress_expires_at
FROM idempotency WHERE key = ?`, key).Scan(&rec.Key, &status, &rec.PayloadHash, &rec.Response, &exp, &ipExp)
	if errors.Is(err, sql.ErrNoRows) {
		return ora.IdempotencyRecord{}, ora.Errorf(ora.ENOTFOUND, "idempotency record %s not found", key)
	}
	if err != nil {
		return ora.IdempotencyRecord{}, idempotencyErr("get", key, err)
	}
	rec.Status = ora.IdempotencyStatus(status)
	rec.ExpiresAt = fromUnixNano(exp)
	rec.InProgressExpiresAt = fromUnixNano(ipExp)
	return rec, nil
}

// checkIdempotencyRecord validates a record before a write: a key, the status
// the write stores (or none), an expiry, and for a lock its in-progress expiry.
func checkIdempotencyRecord(rec ora.IdempotencyRecord, status ora.IdempotencyStatus) error {
	switch {
	case rec.Key == "":
		return ora.Invalid("key", "idempotency key is empty")
	case rec.Status != "" && rec.Status != status:
		return ora.Invalid("status", "is %q, want %q", rec.Status, status)
	case rec.ExpiresAt.IsZero():
		return ora.Invalid("expires_at", "is not set")
	case status == ora.IdempotencyInProgress && rec.InProgressExpiresAt.IsZero():
		return ora.Invalid("in_progress_expires_at", "is not set")
	}
	return nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// idempotencyErr wraps a driver error with context after translate (ledger.go)
// has mapped it: a busy or locked database, or a deadline, is ETRANSIENT.
func idempotencyErr(op, key string, err error) error {
	return fmt.Errorf("sqlite: idempotency %s %s: %w", op, key, translate(err))
}
