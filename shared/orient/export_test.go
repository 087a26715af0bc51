package orient

import "github.com/ora-runtime/ora/shared/ora"

// Hooks for the external tests of the hand-written JSON encoders.
var (
	AppendFact   = appendFact
	EncodePacket = encodePacket
	FactEntries  = factEntries
)

// KeptFacts returns the facts kept for the observed-fact entry of digest.
func KeptFacts(digest string) ([]ora.Fact, bool) { return recentFacts.get(digest) }
