package orient

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// PacketDigest returns the sha256 of the packet's canonical JSON (its
// encoding/json encoding, which is deterministic) with Digest empty.
//
// The packet is not marshalled whole: digestWriter writes the same bytes
// encoding/json would, straight into the hash, field by field (a 150,000-token
// packet is about 600 KB of JSON, which json.Marshal builds by reflection and
// copies). Each value it cannot write byte-exactly by itself (a string with
// characters JSON escapes, a normalized body that is not compact ASCII, an
// unusual float) it hands to json.Marshal, so the digest is always
// encoding/json's; a test holds the two equal over random packets.
func PacketDigest(p ora.OrientationPacket) (string, error) {
	p.Digest = ""
	d := digestWriter{h: sha256.New(), buf: make([]byte, 0, 32<<10)}
	if err := d.packet(&p); err != nil {
		return "", ora.Errorf(ora.EINTERNAL, "encode packet: %v", err)
	}
	return hex.EncodeToString(d.sum()), nil
}

// encodePacket returns json.Marshal(p)'s bytes, written by digestWriter
// (without reflection, and without compacting every fact's normalized body
// again).
func encodePacket(p *ora.OrientationPacket) ([]byte, error) {
	d := digestWriter{buf: make([]byte, 0, 4096)}
	if err := d.packet(p); err != nil {
		return nil, ora.Errorf(ora.EINTERNAL, "encode packet: %v", err)
	}
	return d.buf, nil
}

// digestWriter writes JSON into a hash through a buffer or, with no hash,
// into the buffer alone (encodePacket, the fetch step's facts).
type digestWriter struct {
	h   hash.Hash
	buf []byte
	// inexact is set once a value was written that decoding the JSON
	// would not give back as it is (a string or normalized body encoding/json
	// changes, a float in exponent form, a time not in UTC, a nil normalized
	// body): see keepFacts.
	inexact bool
}

func (d *digestWriter) flush() {
	if d.h != nil && len(d.buf) > 0 {
		d.h.Write(d.buf)
		d.buf = d.buf[:0]
	}
}

// grow flushes the buffer when it is nearly full.
func (d *digestWriter) grow() {
	if d.h != nil && len(d.buf) > cap(d.buf)-1024 {
		d.flush()
	}
}

func (d *digestWriter) sum() []byte {
	d.flush()
	return d.h.Sum(nil)
}

func (d *digestWriter) raw(s string) { d.buf = append(d.buf, s...) }

func (d *digestWriter) int(n int) { d.buf = strconv.AppendInt(d.buf, int64(n), 10) }

// marshal appends encoding/json's encoding of v.
func (d *digestWriter) marshal(v any) error {
	d.inexact = true
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if d.h == nil {
		d.buf = append(d.buf, b...)
		return nil
	}
	d.flush()
	d.h.Write(b)
	return nil
}

// plainByte marks the bytes encoding/json writes as they are inside a
// string: printable ASCII but '"', '\\' and the characters it escapes for
// HTML ('<', '>', '&'). rawByte marks those it leaves as they are in a
// compact raw message: the same, with '"' and '\\' (a raw message's own
// escapes), and without the space.
var plainByte, rawByte = func() (p, r [256]bool) {
	for c := 0x21; c <= 0x7e; c++ {
		r[c] = c != '<' && c != '>' && c != '&'
		p[c] = r[c] && c != '"' && c != '\\'
	}
	p[' '] = true
	return p, r
}()

// plain reports whether encoding/json writes s as it is between quotes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return false
		}
	}
	return true
}

func (d *digestWriter) str(s string) error {
	if !plain(s) {
		return d.marshal(s)
	}
	d.buf = append(d.buf, '"')
	d.buf = append(d.buf, s...)
	d.buf = append(d.buf, '"')
	return nil
}

// compactASCII reports whether encoding/json writes the raw message as it is:
// valid JSON of printable ASCII with no whitespace outside its strings
// (compact already) and no character it escapes for HTML.
func compactASCII(b []byte) bool {
	in := false // inside a string
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case !in && c == '"':
			in = true
		case !in:
			if !rawByte[c] {
				return false
			}
		case c == '"':
			in = false
		case c == '\\':
			i++ // the escaped byte: checked by json.Valid below
			if i < len(b) && !rawByte[b[i]] {
				return false
			}
		case !plainByte[c]:
			return false
		}
	}
	return validJSON(b)
}

// validJSON is json.Valid, remembering the bodies (by sha256) found valid:
// a wave's facts are encoded three times (sized, written, compiled into the
// packet) and recent ledger entries' facts recur wave after wave, and a
// sha256 costs a tenth of the validity scan.
func validJSON(b []byte) bool {
	if len(b) < 64 {
		return json.Valid(b)
	}
	sum := sha256.Sum256(b)
	validBodies.Lock()
	_, ok := validBodies.m[sum]
	validBodies.Unlock()
	if ok {
		return true
	}
	if !json.Valid(b) {
		return false
	}
	validBodies.Lock()
	if validBodies.m == nil || len(validBodies.m) >= validBodiesMax {
		validBodies.m = make(map[[sha256.Size]byte]struct{}, 1024)
	}
	validBodies.m[sum] = struct{}{}
	validBodies.Unlock()
	return true
}

// validBodies is validJSON's memory; when full it starts again, empty.
var validBodies struct {
	sync.Mutex
	m map[[sha256.Size]byte]struct{}
}

const validBodiesMax = 16384

func (d *digestWriter) packet(p *ora.OrientationPacket) error {
	d.raw(`{"packet_id":`)
	if err := d.str(p.ID); err != nil {
		return err
	}
	d.raw(`,"wave_id":`)
	if err := d.str(p.WaveID); err != nil {
		return err
	}
	d.raw(`,"profile_id":`)
	if err := d.str(p.ProfileID); err != nil {
		return err
	}
	d.raw(`,"profile_version":`)
	d.int(p.ProfileVersion)
	d.raw(`,"token_budget":`)
	d.int(p.TokenBudget)
	d.raw(`,"token_used":`)
	d.int(p.TokenUsed)
	if p.Truncated {
		d.raw(`,"truncated":true`)
	}
	d.raw(`,"bands":`)
	if p.Bands == nil {
		d.raw("null")
	} else {
		d.raw("[")
		for i := range p.Bands {
			if i > 0 {
				d.raw(",")
			}
			if err := d.band(&p.Bands[i]); err != nil {
				return err
			}
		}
		d.raw("]")
	}
	d.raw(`,"digest_sha256":`)
	if err := d.str(p.Digest); err != nil {
		return err
	}
	d.raw("}")
	return nil
}

func (d *digestWriter) band(b *ora.PacketBand) error {
	d.raw(`{"band":`)
	if err := d.str(string(b.Band)); err != nil {
		return err
	}
	d.raw(`,"min_tokens":`)
	d.int(b.MinTokens)
	d.raw(`,"target_tokens":`)
	d.int(b.TargetTokens)
	d.raw(`,"max_tokens":`)
	d.int(b.MaxTokens)
	d.raw(`,"used_tokens":`)
	d.int(b.UsedTokens)
	d.raw(`,"facts":`)
	if b.Facts == nil {
		d.raw("null}")
		return nil
	}
	d.raw("[")
	for i := range b.Facts {
		if i > 0 {
			d.raw(",")
		}
		if err := d.fact(&b.Facts[i]); err != nil {
			return err
		}
	}
	d.raw("]}")
	return nil
}

func (d *digestWriter) fact(f *ora.Fact) error {
	d.grow()
	d.raw(`{"fact_id":`)
	if err := d.str(f.ID); err != nil {
		return err
	}
	d.raw(`,"wave_id":`)
	if err := d.str(f.WaveID); err != nil {
		return err
	}
	d.raw(`,"source_type":`)
	if err := d.str(f.SourceType); err != nil {
		return err
	}
	if f.SourceRef != "" {
		d.raw(`,"source_ref":`)
		if err := d.str(f.SourceRef); err != nil {
			return err
		}
	}
	d.raw(`,"provenance":`)
	if err := d.strMap(f.Provenance); err != nil {
		return err
	}
	d.raw(`,"normalized":`)
	switch {
	case f.Normalized == nil:
		d.inexact = true // decoded, it is the bytes null
		d.raw("null")
	case compactASCII(f.Normalized):
		if d.h != nil && len(d.buf)+len(f.Normalized) > cap(d.buf) {
			d.flush()
			d.h.Write(f.Normalized)
		} else {
			d.buf = append(d.buf, f.Normalized...)
		}
	default:
		if err := d.marshal(f.Normalized); err != nil {
			return err
		}
	}
	if f.DedupeKey != "" {
		d.raw(`,"dedupe_key":`)
		if err := d.str(f.DedupeKey); err != nil {
			return err
		}
	}
	if f.Band != "" {
		d.raw(`,"band":`)
		if err := d.str(string(f.Band)); err != nil {
			return err
		}
	}
	d.raw(`,"utility_score":`)
	if u := math.Abs(f.Utility); u == 0 || (u >= 1e-6 && u < 1e21) {
		d.buf = strconv.AppendFloat(d.buf, f.Utility, 'f', -1, 64)
	} else if err := d.marshal(f.Utility); err != nil { // exponents, NaN and infinities
		return err
	}
	d.raw(`,"estimated_tokens":`)
	d.int(f.EstimatedTokens)
	d.raw(`,"created_at":`)
	if err := d.time(f.CreatedAt); err != nil {
		return err
	}
	d.raw("}")
	return nil
}

// time writes t as time.Time's MarshalJSON does (RFC 3339 with nanoseconds),
// leaving to it the years and zone offsets it refuses.
func (d *digestWriter) time(t time.Time) error {
	if t.Location() != time.UTC {
		d.inexact = true // decoded, its location is another
	}
	_, off := t.Zone()
	if y := t.Year(); y < 0 || y > 9999 || off <= -24*3600 || off >= 24*3600 {
		b, err := t.MarshalJSON()
		if err != nil {
			return err
		}
		d.buf = append(d.buf, b...)
		return nil
	}
	d.buf = append(d.buf, '"')
	d.buf = t.AppendFormat(d.buf, time.RFC3339Nano)
	d.buf = append(d.buf, '"')
	return nil
}

// strMap writes a map of strings as encoding/json does: keys sorted, nil as
// null.
func (d *digestWriter) strMap(m map[string]string) error {
	if m == nil {
		d.raw("null")
		return nil
	}
	var arr [8]string
	keys := arr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	d.raw("{")
	for i, k := range keys {
		if i > 0 {
			d.raw(",")
		}
		if err := d.str(k); err != nil {
			return err
		}
		d.raw(":")
		if err := d.str(m[k]); err != nil {
			return err
		}
	}
	d.raw("}")
	return nil
}
