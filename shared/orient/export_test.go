package orient

import "github.com/ora-runtime/ora/shared/ora"

// Hooks for the external tests of the hand-written JSON encoders.
var (
	EncodePacket = encodePacket
	FactEntries  = factEntries
)

// KeptFacts returns the facts kept for the observed-fact entry of digest.
func KeptFacts(digest string) ([]ora.Fact, bool) { return recentFacts.get(digest) }

// AppendFact appends json.Marshal(f)'s bytes to dst, as the fetch step
// encodes a fact.
func AppendFact(dst []byte, f *ora.Fact) ([]byte, error) {
	d := digestWriter{buf: dst}
	err := d.fact(f)
	return d.buf, err
}

// packetChecked reports whether body is a packet body seen before.
func packetChecked(body []byte) bool {
	_, ok, _ := lookupPacket(body)
	return ok
}

// factEntries is packFacts encoding the facts itself.
func factEntries(signalID string, job Job, facts []ora.Fact) ([]ora.Entry, error) {
	return packFacts(signalID, job, facts, nil)
}
