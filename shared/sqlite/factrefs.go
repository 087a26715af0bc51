package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/factref"
	"github.com/ora-runtime/ora/shared/ora"
)

// Facts by reference (shared/factref): the ledger keeps each fact's
// normalized body once, in fact_bodies under its sha256, and an
// observed-fact or orientation-packet row holds its body with each
// normalized body of at least factref.MinBytes replaced by a reference.
// Reading puts the normalized bodies back byte for byte: an entry's body,
// digest and every contract are as before, and the digest is checked against
// the resolved bytes.
//
// A fact body expires with the last row that refers to it: its expires_at is
// the latest of theirs, rounded up to the minute (NULL, kept, when one of
// them is kept), and Sweep deletes it after the rows.
var _ = registerSchema("retention-facts", `
CREATE TABLE IF NOT EXISTS fact_bodies (
	digest     TEXT NOT NULL PRIMARY KEY,
	body       BLOB NOT NULL,
	expires_at TEXT
);
CREATE INDEX IF NOT EXISTS fact_bodies_expiry ON fact_bodies (expires_at) WHERE expires_at IS NOT NULL;
`)

// factBody is a normalized body to keep, with the expiry it needs.
type factBody struct {
	digest  string
	body    []byte
	expires sql.NullString
}

// splitFacts returns the row body of e, its normalized bodies by reference
// (factref.Split), and those bodies; e's own body when it keeps none by
// reference.
func splitFacts(e ora.Entry) ([]byte, []factBody) {
	row, split := factref.Split(e.Kind, e.Body)
	if len(split) == 0 {
		return e.Body, nil
	}
	expires := sql.NullString{}
	if e.ExpiresAt != nil {
		// Rounded up to the minute, so the many rows that share a body
		// move its expiry once a minute, not once a row.
		expires = sql.NullString{String: formatTime(e.ExpiresAt.Truncate(time.Minute).Add(time.Minute)), Valid: true}
	}
	bodies := make([]factBody, len(split))
	for i, b := range split {
		bodies[i] = factBody{digest: b.Digest, body: b.Bytes, expires: expires}
	}
	return row, bodies
}

// putFactBodies stores bodies in tx, each unless it is known to be stored
// with an expiry at least as late; it returns the expiries to remember once
// tx commits (noteFactBodies).
func (d *DB) putFactBodies(ctx context.Context, tx *sql.Tx, bodies []factBody) ([]factBody, error) {
	var put []factBody
	for _, b := range bodies {
		if d.factKnown(b) {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO fact_bodies (digest, body, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (digest) DO UPDATE SET expires_at = excluded.expires_at
			WHERE fact_bodies.expires_at IS NOT NULL AND (excluded.expires_at IS NULL OR excluded.expires_at > fact_bodies.expires_at)`,
			b.digest, b.body, b.expires); err != nil {
			return nil, fmt.Errorf("fact body %s: %w", b.digest, translate(err))
		}
		put = append(put, b)
	}
	return put, nil
}

// factCache remembers, per fact body, the expiry it is stored with (known:
// committed by this process; a sweep deletes only bodies past it), and keeps
// recently read bodies for reading again.
type factCache struct {
	mu      sync.Mutex
	expires map[string]sql.NullString
	bodies  map[string][]byte
	size    int
	// whole holds whole entry bodies by the entry's digest: those this
	// process wrote or put together lately, which a wave's next steps read
	// again (compile its facts, reason its packet).
	whole     map[string][]byte
	wholeSize int
}

// factCache bounds: known expiries, and the bytes of bodies kept for reads.
const (
	factKnownMax = 1 << 16
	factBytesMax = 8 << 20
	wholeMax     = 16 << 20
)

// keepWhole remembers the whole body of an entry kept by reference, under
// its digest; the caller vouches that body matches it.
func (d *DB) keepWhole(digest string, body []byte) {
	d.facts.mu.Lock()
	defer d.facts.mu.Unlock()
	if len(body) > wholeMax/8 {
		return
	}
	if d.facts.whole == nil || d.facts.wholeSize+len(body) > wholeMax {
		d.facts.whole, d.facts.wholeSize = map[string][]byte{}, 0
	}
	if _, ok := d.facts.whole[digest]; !ok {
		d.facts.whole[digest] = body
		d.facts.wholeSize += len(body)
	}
}

// factKnown reports whether b is stored with an expiry at least as late as
// b needs.
func (d *DB) factKnown(b factBody) bool {
	d.facts.mu.Lock()
	defer d.facts.mu.Unlock()
	x, ok := d.facts.expires[b.digest]
	if !ok {
		return false
	}
	return !x.Valid || (b.expires.Valid && x.String >= b.expires.String)
}

// noteFactBodies remembers the expiries of bodies a committed transaction
// stored (never of one rolled back: a row would then refer to nothing).
func (d *DB) noteFactBodies(put []factBody) {
	if len(put) == 0 {
		return
	}
	d.facts.mu.Lock()
	defer d.facts.mu.Unlock()
	if d.facts.expires == nil || len(d.facts.expires)+len(put) > factKnownMax {
		d.facts.expires = make(map[string]sql.NullString, len(put))
	}
	for _, b := range put {
		x, ok := d.facts.expires[b.digest]
		if !ok || (x.Valid && (!b.expires.Valid || b.expires.String > x.String)) {
			d.facts.expires[b.digest] = b.expires
		}
	}
}

// forgetFactBodies drops the known expiries (a sweep deleted bodies).
func (d *DB) forgetFactBodies() {
	d.facts.mu.Lock()
	d.facts.expires = nil
	d.facts.mu.Unlock()
}

// resolveFacts puts back the normalized bodies of the entries stored by
// reference, checking each entry's digest.
func (d *DB) resolveFacts(ctx context.Context, entries []ora.Entry) error {
	var want []string
	need := map[string][]byte{}
	d.facts.mu.Lock()
	for i, e := range entries {
		if !factref.HasRefs(e.Body) {
			continue
		}
		if b, ok := d.facts.whole[e.Digest]; ok {
			entries[i].Body = b
		}
	}
	d.facts.mu.Unlock()
	for _, e := range entries {
		for _, dg := range factref.Digests(e.Body) {
			if _, ok := need[dg]; !ok {
				need[dg] = nil
				want = append(want, dg)
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	d.facts.mu.Lock()
	missing := want[:0:0]
	for _, dg := range want {
		if b, ok := d.facts.bodies[dg]; ok {
			need[dg] = b
		} else {
			missing = append(missing, dg)
		}
	}
	d.facts.mu.Unlock()
	if len(missing) > 0 {
		list, _ := json.Marshal(missing)
		rows, err := d.r.QueryContext(ctx, `SELECT digest, body FROM fact_bodies WHERE digest IN (SELECT value FROM json_each(?))`, string(list))
		if err != nil {
			return translate(err)
		}
		for rows.Next() {
			var (
				dg string
				b  []byte
			)
			if err := rows.Scan(&dg, &b); err != nil {
				rows.Close()
				return translate(err)
			}
			need[dg] = b
		}
		if err := rows.Close(); err != nil {
			return translate(err)
		}
		d.keepFactBodies(missing, need)
	}
	for i := range entries {
		if !factref.HasRefs(entries[i].Body) {
			continue
		}
		out, gone := factref.Join(entries[i].Body, func(dg string) []byte { return need[dg] })
		if gone != "" {
			return ora.Errorf(ora.EINTERNAL, "entry %s/%s/%q: fact body %s is missing from fact_bodies (expired or never stored)",
				entries[i].SignalID, entries[i].Kind, entries[i].Qualifier, gone)
		}
		if ora.Digest(out) != entries[i].Digest {
			return ora.Errorf(ora.EINTERNAL, "entry %s/%s/%q: its body put together from fact_bodies does not match its digest",
				entries[i].SignalID, entries[i].Kind, entries[i].Qualifier)
		}
		entries[i].Body = out
		d.keepWhole(entries[i].Digest, out)
	}
	return nil
}

// keepFactBodies keeps the bodies just read for the next reads, within
// factBytesMax (all are dropped when it is reached: simple, and the bodies
// a wave reads again come back with the next read).
func (d *DB) keepFactBodies(digests []string, bodies map[string][]byte) {
	d.facts.mu.Lock()
	defer d.facts.mu.Unlock()
	for _, dg := range digests {
		b := bodies[dg]
		if b == nil {
			continue
		}
		if d.facts.bodies == nil || d.facts.size+len(b) > factBytesMax {
			d.facts.bodies, d.facts.size = map[string][]byte{}, 0
		}
		d.facts.bodies[dg] = b
		d.facts.size += len(b)
	}
}
