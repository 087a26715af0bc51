package ora

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// encodedBodies holds the sha256 sums of the entry bodies NewEntry encoded
// in this process, which are JSON by construction: Validate, which
// Append runs on every entry, finds a body there by the sum it computes for
// the digest check and skips scanning it again for JSON validity. The check
// is a function of the body's exact bytes, so any other body, one byte
// changed, is scanned in full.
var encodedBodies struct {
	sync.Mutex
	m map[[sha256.Size]byte]struct{}
}

// encodedBodiesMax bounds encodedBodies: when full it starts again, empty.
const encodedBodiesMax = 8192

func noteEncoded(sum [sha256.Size]byte) {
	encodedBodies.Lock()
	defer encodedBodies.Unlock()
	if encodedBodies.m == nil || len(encodedBodies.m) >= encodedBodiesMax {
		encodedBodies.m = make(map[[sha256.Size]byte]struct{}, 256)
	}
	encodedBodies.m[sum] = struct{}{}
}

func encodedBefore(sum [sha256.Size]byte) bool {
	encodedBodies.Lock()
	defer encodedBodies.Unlock()
	_, ok := encodedBodies.m[sum]
	return ok
}

// hexDigest is Digest of a body whose sum is known.
func hexDigest(sum [sha256.Size]byte) string { return hex.EncodeToString(sum[:]) }
