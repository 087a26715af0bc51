package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// MaxKeyLength is the longest key Do accepts, prefix included (DynamoDB allows
// 2048 bytes in a partition key).
const MaxKeyLength = 1024

// Options tune an Idempotency.
type Options struct {
	// Expiry is how long a record (and so a stored response) lives. Default
	// (and when not positive) 1 h, as Powertools' expires_after_seconds.
	Expiry time.Duration
	// Now returns the current time; tests replace it. Default time.Now.
	Now func() time.Time
	// InProgressFallback is how long the lock of a call whose context has no
	// deadline lasts. A Lambda context always has one (the invocation's
	// deadline); the default (and when not positive), 15 min, is Lambda's
	// longest timeout.
	InProgressFallback time.Duration
	// KeyPrefix, usually the function's name, is put before every key
	// ("prefix#key") so that two functions never share a record.
	KeyPrefix string
	// Logger receives the failures Do cannot return: a lock it could not
	// delete after the function failed. Default slog.Default().
	Logger *slog.Logger
}

// Idempotency makes function calls idempotent on an ora.IdempotencyStore.
type Idempotency struct {
	store ora.IdempotencyStore
	o     Options
}

// New returns an Idempotency keeping its records in store.
func New(store ora.IdempotencyStore, opts ...func(*Options)) *Idempotency {
	o := Options{
		Expiry:             time.Hour,
		Now:                time.Now,
		InProgressFallback: 15 * time.Minute,
	}
	for _, f := range opts {
		f(&o)
	}
	if o.Expiry <= 0 {
		o.Expiry = time.Hour
	}
	if o.InProgressFallback <= 0 {
		o.InProgressFallback = 15 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Idempotency{store: store, o: o}
}

// InProgressError is returned to a call whose key another invocation holds:
// that invocation is still running (or crashed, and its lock has not expired
// yet). The caller may retry; its ora code is ETRANSIENT, so taskerr.From maps
// it to a TransientError that the state machine retries.
type InProgressError struct {
	// Key is the record's key (with the prefix).
	Key string
	// ExpiresAt is when the lock can be taken over if its holder crashed.
	ExpiresAt time.Time
}

// Error says which key is held and until when.
func (e *InProgressError) Error() string {
	return fmt.Sprintf("idempotency: %s: already in progress (lock until %s)", e.Key, e.ExpiresAt.UTC().Format(time.RFC3339Nano))
}

// Unwrap returns the ETRANSIENT domain error, so ora.ErrorCode(err) is
// ETRANSIENT and errors.As finds an *ora.Error.
func (e *InProgressError) Unwrap() error {
	return &ora.Error{Code: ora.ETRANSIENT, Message: fmt.Sprintf("%s: already in progress", e.Key)}
}

// maxAttempts bounds the loop in Do: a conflict that carries no record (it was
// deleted between the write and the read) is retried this many times.
const maxAttempts = 3

// Do runs fn once per key while the key's record lives, and returns its result
// to every call with that key:
//   - the first call writes an INPROGRESS lock that lasts until ctx's deadline
//     (Options.InProgressFallback without one), runs fn, and stores its result
//     as COMPLETED for Options.Expiry;
//   - a call that finds the COMPLETED record returns the stored result without
//     running fn; one that finds the lock gets an *InProgressError;
//   - a call whose payload differs from the stored one gets EINVALID (field
//     "payload") and nothing runs;
//   - when fn fails, the lock is deleted and fn's error is returned unchanged,
//     so the next call runs fn again.
//
// Records are compared against Options.Now in code: an expired record is
// replaced whether or not the store's TTL has removed it. payload must encode
// to JSON; Out must round-trip through encoding/json. Errors: EINVALID for an
// empty or too long key, a payload that cannot be encoded, or a changed payload;
// *InProgressError; the store's errors (ETRANSIENT when throttled) wrapped with
// context; fn's error as it is.
func Do[Out any](ctx context.Context, i *Idempotency, key string, payload any, fn func(context.Context) (Out, error)) (Out, error) {
	var zero Out
	if key == "" {
		return zero, ora.Invalid("key", "idempotency key is empty")
	}
	if i.o.KeyPrefix != "" {
		key = i.o.KeyPrefix + "#" + key
	}
	if len(key) > MaxKeyLength {
		return zero, ora.Invalid("key", "idempotency key is %d bytes, more than %d", len(key), MaxKeyLength)
	}
	hash, err := PayloadHash(payload)
	if err != nil {
		return zero, err
	}

	for attempt := 1; ; attempt++ {
		now := i.o.Now()
		lock := ora.IdempotencyRecord{
			Key:                 key,
			Status:              ora.IdempotencyInProgress,
			PayloadHash:         hash,
			ExpiresAt:           now.Add(i.o.Expiry),
			InProgressExpiresAt: now.Add(i.o.InProgressFallback),
		}
		if d, ok := ctx.Deadline(); ok {
			lock.InProgressExpiresAt = d
		}
		err := i.store.PutInProgress(ctx, lock, now)
		if err == nil {
			return run(ctx, i, lock, fn)
		}
		if ora.ErrorCode(err) != ora.ECONFLICT {
			return zero, fmt.Errorf("idempotency: lock %s: %w", key, err)
		}
		existing, ok := ora.Existing[ora.IdempotencyRecord](err)
		if !ok {
			existing, err = i.store.Get(ctx, key)
			if ora.ErrorCode(err) == ora.ENOTFOUND && attempt < maxAttempts {
				continue // deleted since the write lost: try to take it again
			}
			if err != nil {
				return zero, fmt.Errorf("idempotency: read %s: %w", key, err)
			}
		}
		return replay[Out](i, existing, hash, now)
	}
}

// run calls fn under the lock and stores its result, or deletes the lock when
// fn fails.
func run[Out any](ctx context.Context, i *Idempotency, lock ora.IdempotencyRecord, fn func(context.Context) (Out, error)) (Out, error) {
	var zero Out
	out, fnErr := fn(ctx)
	if fnErr != nil {
		i.release(ctx, lock.Key)
		return out, fnErr
	}
	resp, err := json.Marshal(out)
	if err != nil {
		i.release(ctx, lock.Key)
		return zero, ora.Errorf(ora.EINTERNAL, "idempotency: %s: cannot encode the response: %v", lock.Key, err)
	}
	done := lock
	done.Status = ora.IdempotencyCompleted
	done.Response = resp
	done.ExpiresAt = i.o.Now().Add(i.o.Expiry)
	done.InProgressExpiresAt = time.Time{}
	if err := i.store.Complete(ctx, done); err != nil {
		// The function ran and its effect happened: hand its result back so
		// the caller can record it, rather than an error that makes it retry
		// into the lock until the lock expires. A duplicate before then gets
		// the in-progress error; after it, the function runs again, as after
		// any expired lock. (Powertools raises here instead.)
		i.o.Logger.Error("idempotency: the response was not saved; the lock stays until its in-progress expiry",
			"key", lock.Key, "in_progress_expires_at", lock.InProgressExpiresAt, "err", err)
	}
	return out, nil
}

// release deletes a lock after the function failed. A failure is logged, not
// returned: the function's error matters more, and the lock ends by itself at
// its in-progress expiry.
func (i *Idempotency) release(ctx context.Context, key string) {
	if err := i.store.Delete(context.WithoutCancel(ctx), key); err != nil {
		i.o.Logger.Error("idempotency: cannot delete the lock after the function failed; it holds until its in-progress expiry",
			"key", key, "error", err)
	}
}

// replay answers a call that found an existing, live record.
func replay[Out any](i *Idempotency, rec ora.IdempotencyRecord, hash string, now time.Time) (Out, error) {
	var zero Out
	if rec.PayloadHash != hash {
		return zero, ora.Invalid("payload", "idempotency key %s was used with another payload", rec.Key)
	}
	if !rec.ExpiresAt.After(now) {
		// The store kept a record its condition should have replaced: the
		// store and this code disagree on the time. A retry resolves it.
		return zero, ora.Transient(nil, "idempotency: %s: the store kept a record that expired at %s",
			rec.Key, rec.ExpiresAt.UTC().Format(time.RFC3339Nano))
	}
	switch rec.Status {
	case ora.IdempotencyCompleted:
		var out Out
		if err := json.Unmarshal(rec.Response, &out); err != nil {
			return zero, ora.Errorf(ora.EINTERNAL, "idempotency: %s: cannot decode the stored response: %v", rec.Key, err)
		}
		return out, nil
	case ora.IdempotencyInProgress:
		return zero, &InProgressError{Key: rec.Key, ExpiresAt: rec.InProgressExpiresAt}
	}
	return zero, ora.Errorf(ora.EINTERNAL, "idempotency: %s: unknown record status %q", rec.Key, rec.Status)
}

// Wrap returns fn made idempotent: each call's key comes from key(in), its
// payload is in, and Do runs it. It wraps any handler function.
func Wrap[In, Out any](i *Idempotency, key func(In) (string, error), fn func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		k, err := key(in)
		if err != nil {
			var zero Out
			if c := ora.ErrorCode(err); c != ora.EINTERNAL {
				return zero, fmt.Errorf("idempotency: key: %w", err)
			}
			return zero, &ora.Error{Code: ora.EINVALID, Field: "key", Message: "cannot derive the idempotency key", Err: err}
		}
		return Do(ctx, i, k, in, func(ctx context.Context) (Out, error) { return fn(ctx, in) })
	}
}

// PayloadHash returns the hex sha256 of payload's canonical JSON: encoded,
// decoded and encoded again, so object keys are sorted whatever their order in
// the input (a struct and a map with the same fields hash alike). EINVALID,
// field "payload", when payload cannot be encoded.
func PayloadHash(payload any) (string, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return "", ora.Invalid("payload", "cannot encode as JSON: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", ora.Invalid("payload", "cannot decode its JSON: %v", err)
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return "", ora.Invalid("payload", "cannot encode as JSON: %v", err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// IsInProgress reports whether err is (or wraps) an *InProgressError.
func IsInProgress(err error) bool {
	var ip *InProgressError
	return errors.As(err, &ip)
}
