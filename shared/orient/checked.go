package orient

import (
	"crypto/sha256"
	"sync"
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
