// Package factref keeps the facts of ledger entries by reference: the
// normalized body of each fact of an observed-fact or orientation-packet
// entry is stored once, content-addressed by its sha256, and the entry's
// stored form holds a reference in its place. The facts of a wave are mostly
// copies (the ledger source's facts carry the recent entries every wave reads
// again, and the wave's packet carries its facts once more), so a store keeps
// each body once and each row keeps only what differs per wave.
//
// A reference is the byte 0x01 followed by the body's sha256 in hex. Compact
// JSON never holds the byte 0x01 (a string escapes control characters), so a
// stored body with one is a body by reference. Join puts the bodies back
// byte for byte: an entry's body and digest are as written, so Verify and
// replay of a packet prove what the model saw. The stores (shared/sqlite,
// shared/dynamo) decide where the bodies live and how long.
package factref

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"

	"github.com/ora-runtime/ora/shared/ora"
)

// MinBytes is the smallest normalized body kept by reference: a reference
// takes RefBytes.
const MinBytes = 128

// Mark starts a reference in a stored body; RefBytes is a reference's
// length (the mark and 64 hex digits).
const (
	Mark     = 0x01
	RefBytes = 65
)

// key is the key whose values are kept by reference.
var key = []byte(`"normalized":`)

// ByRef reports whether entries of kind keep their facts by reference.
func ByRef(k ora.EntryKind) bool {
	return k == ora.KindObservedFact || k == ora.KindOrientationPacket
}

// Body is one normalized body and its content address (sha256, hex).
type Body struct {
	Digest string
	Bytes  []byte
}

// HasRefs reports whether a stored body holds references.
func HasRefs(stored []byte) bool { return bytes.IndexByte(stored, Mark) >= 0 }

// Split returns the stored form of an entry's body (each normalized body of
// at least MinBytes replaced by its reference) and those bodies; body itself
// and none when the kind keeps no facts by reference, body is not compact
// JSON as expected, or it already holds the mark.
func Split(kind ora.EntryKind, body []byte) ([]byte, []Body) {
	if !ByRef(kind) || len(body) == 0 || HasRefs(body) {
		return body, nil
	}
	spans := spans(body)
	if len(spans) == 0 {
		return body, nil
	}
	row := make([]byte, 0, len(body)/4)
	bodies := make([]Body, 0, len(spans))
	last := 0
	for _, s := range spans {
		v := body[s.start:s.end]
		sum := sha256.Sum256(v)
		d := hex.EncodeToString(sum[:])
		row = append(row, body[last:s.start]...)
		row = append(row, Mark)
		row = append(row, d...)
		last = s.end
		bodies = append(bodies, Body{Digest: d, Bytes: v})
	}
	return append(row, body[last:]...), bodies
}

// Digests returns the digests a stored body refers to, each once, in order.
func Digests(stored []byte) []string {
	var out []string
	seen := map[string]bool{}
	for i := 0; ; {
		j := bytes.IndexByte(stored[i:], Mark)
		if j < 0 || i+j+RefBytes > len(stored) {
			return out
		}
		d := string(stored[i+j+1 : i+j+RefBytes])
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
		i += j + RefBytes
	}
}

// Join puts the bodies get returns back into a stored body. It returns the
// digest of the first body get has not (nil), and no body, when one is
// missing. The caller checks the result against the entry's digest.
func Join(stored []byte, get func(digest string) []byte) (body []byte, missing string) {
	size := len(stored)
	for k := 0; ; {
		j := bytes.IndexByte(stored[k:], Mark)
		if j < 0 || k+j+RefBytes > len(stored) {
			break
		}
		d := string(stored[k+j+1 : k+j+RefBytes])
		v := get(d)
		if v == nil {
			return nil, d
		}
		size += len(v) - RefBytes
		k += j + RefBytes
	}
	out := make([]byte, 0, size)
	b := stored
	for {
		j := bytes.IndexByte(b, Mark)
		if j < 0 || j+RefBytes > len(b) {
			return append(out, b...), ""
		}
		out = append(out, b[:j]...)
		out = append(out, get(string(b[j+1:j+RefBytes]))...)
		b = b[j+RefBytes:]
	}
}

// span is one normalized body of a body.
type span struct{ start, end int }

// spans finds the values of "normalized" keys of at least MinBytes in
// compact JSON b, outermost first (a value is skipped whole, so a key inside
// one is not found). It returns none when b is not what it expects.
func spans(b []byte) []span {
	var out []span
	for i := 0; ; {
		j := bytes.Index(b[i:], key)
		if j < 0 {
			return out
		}
		k := i + j
		start := k + len(key)
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
		if end-start >= MinBytes {
			out = append(out, span{start, end})
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
