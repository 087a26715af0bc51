package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Facts by reference. The facts of a wave are mostly copies: the ledger
// source's facts carry the bodies of the recent entries every wave reads
// again, and the wave's packet carries its facts once more. So the ledger
// keeps each fact's normalized body once, in fact_bodies under its sha256,
// and an observed-fact or orientation-packet row holds its body with each
// normalized body of at least refMinBytes replaced by a reference: the byte
// 0x01 followed by the body's sha256 in hex. Compact JSON never holds the byte
// 0x01 (a string escapes control characters), so a stored body with one is a
// body by reference. Reading puts the normalized bodies back byte for byte:
// an entry's body, digest and every contract are as before, and the digest
// is checked against the resolved bytes.
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

// refMinBytes is the smallest normalized body kept by reference: a
// reference takes 65 bytes.
const refMinBytes = 128

// refMark starts a reference in a stored body.
const refMark = 0x01

// refKey is the key whose values are kept by reference.
var refKey = []byte(`"normalized":`)

// byRef reports whether entries of kind keep their facts by reference.
func byRef(k ora.EntryKind) bool {
	return k == ora.KindObservedFact || k == ora.KindOrientationPacket
}

// factSpan is one normalized body of a stored body.
type factSpan struct{ start, end int }

// factSpans finds the values of "normalized" keys of at least refMinBytes
// in compact JSON b, outermost first (a value is skipped whole, so a key
// inside one is not found). It returns none when b is not what it expects.
func factSpans(b []byte) []factSpan {
	var out []factSpan
	for i := 0; ; {
		j := bytes.Index(b[i:], refKey)
		if j < 0 {
			return out
		}
		k := i + j
		start := k + len(refKey)
		// A key: preceded by '{' or ',' (a quote inside a string is
		// escaped, so `,"normalized":` there reads `,\"normalized\":`).
		if k == 0 || (b[k-1] != '{' && b[k-1] != ',') {
			i = start
			continue
		}
		end, ok := skipValue(b, start)
		if !ok {
			return nil
		}
		if end-start >= refMinBytes {
			out = append(out, factSpan{start, end})
		}
		i = end
	}
}

// skipValue returns the end of the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, ok := skipString(b, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	for j := i; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']':
			return j, j > i
		}
	}
	return 0, false
}

// skipString returns the end of the JSON string starting at b[i] ('"').
func skipString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// factBody is a normalized body to keep, with the expiry it needs.
type factBody struct {
	digest  string
	body    []byte
	expires sql.NullString
}

// splitFacts returns the row body of e, its normalized bodies by reference,
// and those bodies; e's own body when it keeps none by reference.
func splitFacts(e ora.Entry) ([]byte, []factBody) {
	if !byRef(e.Kind) || len(e.Body) == 0 || bytes.IndexByte(e.Body, refMark) >= 0 {
		return e.Body, nil
	}
	spans := factSpans(e.Body)
	if len(spans) == 0 {
		return e.Body, nil
	}
	expires := sql.NullString{}
	if e.ExpiresAt != nil {
		// Rounded up to the minute, so the many rows that share a body
		// move its expiry once a minute, not once a row.
		expires = sql.NullString{String: formatTime(e.ExpiresAt.Truncate(time.Minute).Add(time.Minute)), Valid: true}
	}
	row := make([]byte, 0, len(e.Body)/4)
	bodies := make([]factBody, 0, len(spans))
	last := 0
	for _, s := range spans {
		v := e.Body[s.start:s.end]
		sum := sha256.Sum256(v)
		d := hex.EncodeToString(sum[:])
		row = append(row, e.Body[last:s.start]...)
		row = append(row, refMark)
		row = append(row, d...)
		last = s.end
		bodies = append(bodies, factBody{digest: d, body: v, expires: expires})
	}
	row = append(row, e.Body[last:]...)
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
		if bytes.IndexByte(e.Body, refMark) < 0 {
			continue
		}
		if b, ok := d.facts.whole[e.Digest]; ok {
			entries[i].Body = b
		}
	}
	d.facts.mu.Unlock()
	for _, e := range entries {
		for i := 0; ; {
			j := bytes.IndexByte(e.Body[i:], refMark)
			if j < 0 || i+j+65 > len(e.Body) {
				break
			}
			dg := string(e.Body[i+j+1 : i+j+65])
			if _, ok := need[dg]; !ok {
				need[dg] = nil
				want = append(want, dg)
			}
			i += j + 65
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
		b := entries[i].Body
		if bytes.IndexByte(b, refMark) < 0 {
			continue
		}
		size := len(b)
		for k := 0; ; {
			j := bytes.IndexByte(b[k:], refMark)
			if j < 0 || k+j+65 > len(b) {
				break
			}
			size += len(need[string(b[k+j+1:k+j+65])]) - 65
			k += j + 65
		}
		out := make([]byte, 0, size)
		for {
			j := bytes.IndexByte(b, refMark)
			if j < 0 || j+65 > len(b) {
				out = append(out, b...)
				break
			}
			v := need[string(b[j+1:j+65])]
			if v == nil {
				return ora.Errorf(ora.EINTERNAL, "entry %s/%s/%q: fact body %s is missing from fact_bodies",
					entries[i].SignalID, entries[i].Kind, entries[i].Qualifier, b[j+1:j+65])
			}
			out = append(out, b[:j]...)
			out = append(out, v...)
			b = b[j+65:]
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
