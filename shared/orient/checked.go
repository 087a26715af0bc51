package orient

import (
	"bytes"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// checkedPackets remembers, by the sha256 of their exact bytes, the
// orientation-packet bodies this process wrote or whose digest it checked.
// Checking a packet's digest means encoding the whole packet again (most of
// the reason step's CPU); the check is a function of the body's bytes, so a
// body seen before passes again without it, and any other body, changed in a
// single byte, is checked in full.
var checkedPackets struct {
	sync.Mutex
	m map[[sha256.Size]byte]struct{}
}

// checkedPacketsMax bounds checkedPackets: when full it starts again, empty.
const checkedPacketsMax = 4096

// packetChecked reports whether body is a packet body seen before.
func packetChecked(body []byte) bool {
	sum := sha256.Sum256(body)
	checkedPackets.Lock()
	defer checkedPackets.Unlock()
	_, ok := checkedPackets.m[sum]
	return ok
}

// notePacket records body as a packet body whose digest matches its content.
func notePacket(body []byte) {
	sum := sha256.Sum256(body)
	checkedPackets.Lock()
	defer checkedPackets.Unlock()
	if checkedPackets.m == nil || len(checkedPackets.m) >= checkedPacketsMax {
		checkedPackets.m = make(map[[sha256.Size]byte]struct{}, 64)
	}
	checkedPackets.m[sum] = struct{}{}
}

// canonicalPackets holds, by digest, the canonical JSON PacketDigest encoded
// last, so that Compile writes the packet it just compiled without encoding
// it a second time. It is small: Compile takes its packet's right away.
var canonicalPackets struct {
	sync.Mutex
	m map[string][]byte
}

// canonicalPacketsMax bounds canonicalPackets: when full it starts again.
const canonicalPacketsMax = 64

func keepCanonical(digest string, b []byte) {
	canonicalPackets.Lock()
	defer canonicalPackets.Unlock()
	if canonicalPackets.m == nil || len(canonicalPackets.m) >= canonicalPacketsMax {
		canonicalPackets.m = make(map[string][]byte, 8)
	}
	canonicalPackets.m[digest] = b
}

func takeCanonical(digest string) ([]byte, bool) {
	canonicalPackets.Lock()
	defer canonicalPackets.Unlock()
	b, ok := canonicalPackets.m[digest]
	delete(canonicalPackets.m, digest)
	return b, ok
}

// canonicalTail is how the canonical JSON of a packet ends: its digest,
// empty, is its last field.
const canonicalTail = `,"digest_sha256":""}`

// packetEntry is ora.NewEntry for the wave's packet p, whose Digest
// PacketDigest computed: its body is the canonical JSON the digest was
// computed from with the digest filled in, which is what encoding p gives,
// when that JSON is still at hand and hashes to p.Digest; else p encoded.
func packetEntry(signalID string, p ora.OrientationPacket) (ora.Entry, error) {
	b, ok := takeCanonical(p.Digest)
	if !ok || !bytes.HasSuffix(b, []byte(canonicalTail)) || ora.Digest(b) != p.Digest || !isHex(p.Digest) {
		return ora.NewEntry(signalID, ora.KindOrientationPacket, "", p)
	}
	body := make([]byte, 0, len(b)+len(p.Digest))
	body = append(body, b[:len(b)-2]...) // without the closing `"}`
	body = append(body, p.Digest...)
	body = append(body, `"}`...)
	return ora.Entry{
		SignalID:  signalID,
		Kind:      ora.KindOrientationPacket,
		Body:      body,
		Digest:    ora.Digest(body),
		CreatedAt: time.Now().UTC(),
	}, nil
}

// isHex reports whether s is lowercase hexadecimal, which JSON encodes as is.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}
