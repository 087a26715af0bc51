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
	m map[[sha256.Size]byte]struct{}
}

// recentPackets keeps the most recent packets by the sha256 of their bodies.
var recentPackets = recentCache[[sha256.Size]byte, *ora.OrientationPacket]{max: recentPacketBytes}

// checkedPacketsMax bounds checkedPackets: when full it starts again, empty.
const checkedPacketsMax = 4096

// recentPacketBytes bounds the packets kept: their bodies' sizes at most
// this many bytes (a busy wave's packet is ~190 KB, so some forty of them).
const recentPacketBytes = 8 << 20

// lookupPacket returns body's sha256, whether the body was seen before, and
// the packet decoded from it when it is still kept.
func lookupPacket(body []byte) ([sha256.Size]byte, bool, *ora.OrientationPacket) {
	sum := sha256.Sum256(body)
	checkedPackets.Lock()
	_, ok := checkedPackets.m[sum]
	checkedPackets.Unlock()
	if !ok {
		return sum, false, nil
	}
	p, _ := recentPackets.get(sum)
	return sum, true, p
}

// keepPacket records the body of sum (size bytes) as checked and, when p is
// not nil, keeps p, the packet whose encoding the body is.
func keepPacket(sum [sha256.Size]byte, size int, p *ora.OrientationPacket) {
	checkedPackets.Lock()
	if checkedPackets.m == nil || len(checkedPackets.m) >= checkedPacketsMax {
		checkedPackets.m = make(map[[sha256.Size]byte]struct{}, 64)
	}
	checkedPackets.m[sum] = struct{}{}
	checkedPackets.Unlock()
	if p != nil {
		recentPackets.put(sum, p, size)
	}
}

// recentCache keeps the most recent values by key, at most max bytes of
// them (each put says its size), the oldest out first.
type recentCache[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	m     map[K]kept[V]
	order []K // m's keys, oldest first
	bytes int // the sum of m's sizes
}

type kept[V any] struct {
	v    V
	size int
}

func (c *recentCache[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	return e.v, ok
}

func (c *recentCache[K, V]) put(k K, v V, size int) {
	if size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[K]kept[V]{}
	}
	if _, ok := c.m[k]; ok {
		return
	}
	for c.bytes+size > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= c.m[old].size
		delete(c.m, old)
	}
	c.m[k] = kept[V]{v, size}
	c.order = append(c.order, k)
	c.bytes += size
}
