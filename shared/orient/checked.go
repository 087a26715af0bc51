package orient

import (
	"crypto/sha256"
	"sync"

	"github.com/ora-runtime/ora/shared/ora"
)

// checkedPackets remembers, by the sha256 of their exact bytes, the
// orientation-packet bodies this process wrote or whose digest it checked.
// Checking a packet's digest means encoding the whole packet again (most of
// the reason step's CPU); the check is a function of the body's bytes, so a
// body seen before passes again without it, and any other body, changed in a
// single byte, is checked in full.
//
// It also keeps the most recent packets themselves (at most
// recentPacketBytes of their bodies): in ora dev the compile step writes a
// packet and the reason step, in the same process, reads it back, and
// decoding a busy wave's ~190 KB packet was most of the reasoner's read. A
// kept packet is one whose encoding is exactly the body it is kept under
// (Compile encodes it to write it; Packet decoded it from it), so reading it
// from here gives what decoding the body gives. Packets handed out share
// their bands and facts: callers do not modify them.
var checkedPackets struct {
	sync.Mutex
	m      map[[sha256.Size]byte]struct{}
	recent map[[sha256.Size]byte]recentPacket
	order  [][sha256.Size]byte // recent's keys, oldest first
	bytes  int                 // the sum of recent's body sizes
}

type recentPacket struct {
	p    *ora.OrientationPacket
	size int
}

// checkedPacketsMax bounds checkedPackets: when full it starts again, empty.
const checkedPacketsMax = 4096

// recentPacketBytes bounds the packets kept: their bodies' sizes at most
// this many bytes (a busy wave's packet is ~190 KB, so some forty of them).
const recentPacketBytes = 8 << 20

// packetChecked reports whether body is a packet body seen before.
func packetChecked(body []byte) bool {
	_, ok, _ := lookupPacket(body)
	return ok
}

// lookupPacket returns body's sha256, whether the body was seen before, and
// the packet decoded from it when it is still kept.
func lookupPacket(body []byte) ([sha256.Size]byte, bool, *ora.OrientationPacket) {
	sum := sha256.Sum256(body)
	checkedPackets.Lock()
	defer checkedPackets.Unlock()
	_, ok := checkedPackets.m[sum]
	if !ok {
		return sum, false, nil
	}
	return sum, true, checkedPackets.recent[sum].p
}

// notePacket records body as a packet body whose digest matches its content.
func notePacket(body []byte) { keepPacket(sha256.Sum256(body), len(body), nil) }

// keepPacket records the body of sum (size bytes) as checked and, when p is
// not nil, keeps p, the packet whose encoding the body is.
func keepPacket(sum [sha256.Size]byte, size int, p *ora.OrientationPacket) {
	checkedPackets.Lock()
	defer checkedPackets.Unlock()
	if checkedPackets.m == nil || len(checkedPackets.m) >= checkedPacketsMax {
		checkedPackets.m = make(map[[sha256.Size]byte]struct{}, 64)
		checkedPackets.recent = nil
		checkedPackets.order = nil
		checkedPackets.bytes = 0
	}
	checkedPackets.m[sum] = struct{}{}
	if p == nil || size > recentPacketBytes {
		return
	}
	if checkedPackets.recent == nil {
		checkedPackets.recent = map[[sha256.Size]byte]recentPacket{}
	}
	if _, ok := checkedPackets.recent[sum]; ok {
		return
	}
	for checkedPackets.bytes+size > recentPacketBytes && len(checkedPackets.order) > 0 {
		old := checkedPackets.order[0]
		checkedPackets.order = checkedPackets.order[1:]
		checkedPackets.bytes -= checkedPackets.recent[old].size
		delete(checkedPackets.recent, old)
	}
	checkedPackets.recent[sum] = recentPacket{p: p, size: size}
	checkedPackets.order = append(checkedPackets.order, sum)
	checkedPackets.bytes += size
}
