package ora

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxItemBytes is the one size limit of a stored ledger entry, shared by both
// ledger adapters: DynamoDB's item limit (400 KB, attribute names and values
// counted). The embedded SQLite ledger enforces it too, so a wave that runs
// under ora dev also fits on AWS. EntrySize is the measure compared with it.
const MaxItemBytes = 400 * 1024

// ErrEntryTooLarge is in the chain of the EINVALID error a ledger returns for
// an entry over MaxItemBytes that cannot be stored by reference; test for it
// with errors.Is.
var ErrEntryTooLarge = errors.New("ledger entry over the item size limit")

// entryOverhead bounds the bytes of a DynamoDB entry item outside the strings
// EntrySize counts one by one: every attribute name (pk, sk, gsi1pk, gsi1sk,
// type, signal_id, kind, qualifier, author_type, body or body_ref, digest,
// created_at, expires_at, meta, ttl), the key prefixes, the index shard, the
// two timestamps, the TTL number and the map's own bytes.
const entryOverhead = 512

// EntrySize is an upper bound of the bytes e takes as a DynamoDB item: the
// signal id, kind and qualifier are counted three times (they appear in the
// keys, the index sort key and their own attributes), the body once, each
// meta pair once, plus a fixed entryOverhead. Both ledgers compare it with
// MaxItemBytes.
func EntrySize(e Entry) int {
	n := entryOverhead + 3*(len(e.SignalID)+len(e.Kind)+len(e.Qualifier)) +
		len(e.AuthorType) + len(e.Digest) + len(e.Body)
	for k, v := range e.Meta {
		n += len(k) + len(v) + 1
	}
	return n
}

// Offloadable reports whether entries of kind k may keep their body outside
// the ledger item (in a BodyStore, by reference) when it is too large: the
// kinds that carry outside content of unbounded size — a signal's payload
// (webhook, S3 object, stream record), observed facts, orientation packets
// and execution evidence. Every other kind is ora's own small record; one
// over the limit is refused.
func (k EntryKind) Offloadable() bool {
	switch k {
	case KindSignalReceived, KindObservedFact, KindOrientationPacket, KindExecutionEvidence:
		return true
	}
	return false
}

// BodyStore holds entry bodies too large for a ledger item, under their
// content address (BodyKey): an S3 bucket on AWS, the local object folder in
// ora dev. Writing the same key twice writes the same bytes, so a retried or
// racing write is harmless.
type BodyStore interface {
	// PutBody writes body at key. Errors: ETRANSIENT, or the store's error.
	PutBody(ctx context.Context, key string, body []byte) error
	// GetBody reads the body at key. Errors: ENOTFOUND, ETRANSIENT.
	GetBody(ctx context.Context, key string) ([]byte, error)
}

// BodyPrefix is the key prefix of offloaded bodies in a BodyStore.
const BodyPrefix = "ledger/bodies/sha256/"

// BodyKey is the content-addressed key of a body whose sha256 is digest.
func BodyKey(digest string) string { return BodyPrefix + digest }

// ExpiringBodyPrefix is the key prefix of the bodies of entries that expire
// within ExpiringBodyAge of their creation (observed facts and orientation
// packets, by DefaultRetention): the stack's bucket deletes objects under it
// ExpiringBodyDays after they were last written, so bodies go when their
// items do instead of growing the bucket forever.
const ExpiringBodyPrefix = "ledger/bodies/expiring/sha256/"

// ExpiringBodyAge is the longest an entry may live for its body to be kept
// under ExpiringBodyPrefix; ExpiringBodyDays, a day more, is the bucket's
// expiration of that prefix, so a body outlives every item that refers to it
// (an object's age counts from its last write, which is at or after the
// creation of every entry that stored it).
const (
	ExpiringBodyAge  = 30 * 24 * time.Hour
	ExpiringBodyDays = 31
)

// BodyKeyOf is where the body of e is kept by reference: under
// ExpiringBodyPrefix when e expires within ExpiringBodyAge of its creation,
// under BodyPrefix otherwise. Both the key and the choice follow from the
// stored entry (its digest, created_at and expires_at), so readers find the
// body without storing its key.
func BodyKeyOf(e Entry) string {
	if e.ExpiresAt != nil && !e.ExpiresAt.After(e.CreatedAt.Add(ExpiringBodyAge)) {
		return ExpiringBodyPrefix + e.Digest
	}
	return BodyKey(e.Digest)
}

// SizeCheck is what a ledger does with a prepared entry before writing it:
// keep its body in the item (offload false) when EntrySize fits
// MaxItemBytes; store the body by reference (offload true) when it does not,
// the kind is Offloadable, a BodyStore is configured and the entry without its
// body fits; otherwise refuse it with an EINVALID error (field "body", with
// ErrEntryTooLarge in its chain) naming the kind, the key and the size.
func SizeCheck(e Entry, haveStore bool) (offload bool, err error) {
	return SizeCheckAbove(e, haveStore, MaxItemBytes)
}

// SizeCheckAbove is SizeCheck with an offload threshold below the item
// limit: an Offloadable entry larger than above (EntrySize) is stored by
// reference when a BodyStore is configured, even though it would fit an item.
// DynamoDB bills writes per KB and strongly consistent reads per 4 KB of
// every item a query returns, so a large body read by several stages costs
// less as one object than as item bytes; above is clamped to MaxItemBytes.
func SizeCheckAbove(e Entry, haveStore bool, above int) (offload bool, err error) {
	size := EntrySize(e)
	if size <= MaxItemBytes && (size <= above || !haveStore || !e.Kind.Offloadable()) {
		return false, nil
	}
	key := e.SignalID + "/" + string(e.Kind) + "/" + e.Qualifier
	if !e.Kind.Offloadable() || !haveStore {
		why := "kind " + string(e.Kind) + " is not stored by reference"
		if e.Kind.Offloadable() {
			why = "no body store is configured"
		}
		return false, tooLarge(key, e.Kind, size, why)
	}
	stub := e
	stub.Body = []byte(BodyKeyOf(e))
	if s := EntrySize(stub); s > MaxItemBytes {
		return false, tooLarge(key, e.Kind, s, "even with its body stored by reference (its meta and ids are too large)")
	}
	return true, nil
}

func tooLarge(key string, kind EntryKind, size int, why string) error {
	return &Error{Code: EINVALID, Field: "body", Err: ErrEntryTooLarge, Message: fmt.Sprintf(
		"%s entry %q is %d bytes, over the %d-byte item limit: %s", kind, key, size, MaxItemBytes, why)}
}

// LoadBody reads the offloaded body of e from store (BodyKeyOf) and checks
// it against e's digest. Errors: EINTERNAL when no store is configured, the
// body is missing or its bytes do not match; the store's other errors
// (ETRANSIENT).
func LoadBody(ctx context.Context, store BodyStore, e Entry) ([]byte, error) {
	digest := e.Digest
	key := BodyKeyOf(e)
	if store == nil {
		return nil, Errorf(EINTERNAL, "entry body %s is stored by reference but no body store is configured", key)
	}
	if strings.ContainsAny(digest, "/.") || digest == "" {
		return nil, Errorf(EINTERNAL, "entry digest %q is not a content address", digest)
	}
	b, err := store.GetBody(ctx, key)
	if ErrorCode(err) == ENOTFOUND {
		// The entry exists, so a missing body is a broken store, not an
		// absent record: never ENOTFOUND, which reads as "no such entry".
		return nil, &Error{Code: EINTERNAL, Message: "entry body " + key + " is missing from the body store", Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("read entry body %s: %w", key, err)
	}
	if Digest(b) != digest {
		return nil, Errorf(EINTERNAL, "entry body %s does not match its digest", key)
	}
	return b, nil
}
