package ora

import (
	"encoding/json"
	"time"
)

// Band names one of the six budget bands of an orientation packet (seed 002).
type Band string

// The six bands, in the order the compiler fills their floors.
const (
	BandIdentity     Band = "identity"
	BandObjectives   Band = "objectives"
	BandCapabilities Band = "capabilities"
	BandSituational  Band = "situational"
	BandExploration  Band = "exploration"
	BandReserve      Band = "reserve"
)

// DefaultTokenBudget is the default orientation budget of seed 002.
const DefaultTokenBudget = 150000

// BandBudget is one band's token floor, target and ceiling.
type BandBudget struct {
	Band         Band `json:"band"`
	MinTokens    int  `json:"min_tokens"`
	TargetTokens int  `json:"target_tokens"`
	MaxTokens    int  `json:"max_tokens"`
}

// DefaultBands returns seed 002's recommended band budgets.
func DefaultBands() []BandBudget {
	return []BandBudget{
		{BandIdentity, 12000, 18000, 25000},
		{BandObjectives, 15000, 25000, 40000},
		{BandCapabilities, 10000, 15000, 25000},
		{BandSituational, 45000, 75000, 110000},
		{BandExploration, 5000, 12000, 25000},
		{BandReserve, 3000, 5000, 8000},
	}
}

// Fact is one normalized, scored observation an orientation job produced.
type Fact struct {
	ID         string            `json:"fact_id"`
	WaveID     string            `json:"wave_id"`
	SourceType string            `json:"source_type"`
	SourceRef  string            `json:"source_ref,omitempty"`
	Provenance map[string]string `json:"provenance"`
	Normalized json.RawMessage   `json:"normalized"`
	DedupeKey  string            `json:"dedupe_key,omitempty"`
	// Band is the band the fact's attention rule sends it to; empty means
	// the compiler's default for its source type.
	Band            Band      `json:"band,omitempty"`
	Utility         float64   `json:"utility_score"`
	EstimatedTokens int       `json:"estimated_tokens"`
	CreatedAt       time.Time `json:"created_at"`
}

// PacketBand is a band as compiled: its budget, the tokens used and its facts.
type PacketBand struct {
	BandBudget
	UsedTokens int    `json:"used_tokens"`
	Facts      []Fact `json:"facts"`
}

// OrientationPacket is the bounded, deterministic context a reasoner reads.
// Digest is the sha256 of the packet's canonical JSON with Digest empty.
type OrientationPacket struct {
	ID             string       `json:"packet_id"`
	WaveID         string       `json:"wave_id"`
	ProfileID      string       `json:"profile_id"`
	ProfileVersion int          `json:"profile_version"`
	TokenBudget    int          `json:"token_budget"`
	TokenUsed      int          `json:"token_used"`
	Truncated      bool         `json:"truncated,omitempty"`
	Bands          []PacketBand `json:"bands"`
	Digest         string       `json:"digest_sha256"`
}
