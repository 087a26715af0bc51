package orient

// Hooks for the external tests of the hand-written JSON encoders.
var (
	AppendFact   = appendFact
	EncodePacket = encodePacket
	FactEntries  = factEntries
)
