package ora

import (
	"context"
	"time"
)

// IdempotencyStatus is the state of an idempotency record.
type IdempotencyStatus string

// The states of an idempotency record: a lock held while the function runs,
// then the stored response.
const (
	IdempotencyInProgress IdempotencyStatus = "INPROGRESS"
	IdempotencyCompleted  IdempotencyStatus = "COMPLETED"
)

// IdempotencyRecord is what an idempotency store keeps for one key: the lock
// while the wrapped function runs (INPROGRESS), then its response (COMPLETED).
// PayloadHash is the sha256 of the canonical JSON of the call's payload, so a
// second call with the same key and another payload is told apart. ExpiresAt
// ends the record's life (the store's TTL attribute, but checked in code);
// InProgressExpiresAt ends the lock of an invocation that never finished.
type IdempotencyRecord struct {
	Key                 string            `json:"key"`
	Status              IdempotencyStatus `json:"status"`
	PayloadHash         string            `json:"payload_hash"`
	Response            []byte            `json:"response,omitempty"`
	ExpiresAt           time.Time         `json:"expires_at"`
	InProgressExpiresAt time.Time         `json:"in_progress_expires_at,omitempty"`
}

// IdempotencyStore keeps idempotency records. shared/sqlite and shared/dynamo
// implement it; shared/idempotency builds the Powertools-style wrapper on it.
type IdempotencyStore interface {
	// PutInProgress stores rec (status INPROGRESS) when no record exists for
	// rec.Key, or the existing one has expired (ExpiresAt <= now), or it is
	// INPROGRESS and its InProgressExpiresAt <= now (a crashed invocation's
	// lock is taken over). Otherwise it returns ECONFLICT carrying the existing
	// IdempotencyRecord. It is one conditional write. EINVALID for a record
	// without key or expiries; ETRANSIENT when the store is throttled or busy.
	PutInProgress(ctx context.Context, rec IdempotencyRecord, now time.Time) error
	// Complete stores rec as COMPLETED with its Response and ExpiresAt,
	// replacing the lock. EINVALID for a record without key or expiry;
	// ETRANSIENT when the store is throttled or busy.
	Complete(ctx context.Context, rec IdempotencyRecord) error
	// Delete removes the record for key (the wrapped function failed); a key
	// with no record is not an error. EINVALID for an empty key; ETRANSIENT
	// when the store is throttled or busy.
	Delete(ctx context.Context, key string) error
	// Get returns the record for key, expired or not. ENOTFOUND when there is
	// none; EINVALID for an empty key; ETRANSIENT when the store is throttled.
	Get(ctx context.Context, key string) (IdempotencyRecord, error)
}
