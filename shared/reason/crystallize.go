package reason

import "math"

// CrystallizationReason says why the observer chain stopped.
type CrystallizationReason string

// The five reasons of seed 004, then ora's own early stops.
const (
	HighConfidence   CrystallizationReason = "HighConfidence"   // confidence > 0.95
	Consistency      CrystallizationReason = "Consistency"      // delta < 0.05 and layer overlap > 0.9
	LowComplexity    CrystallizationReason = "LowComplexity"    // fewer than 6 layers
	PatternMatch     CrystallizationReason = "PatternMatch"     // a cached pattern for the signal
	MaxStagesReached CrystallizationReason = "MaxStagesReached" // forced at the last stage
	// TokenBudget: the next stage would exceed the wave's token budget (DEGRADED).
	TokenBudget CrystallizationReason = "TokenBudget"
	// SpendCap: the day's spend cap was reached mid-chain (DEGRADED).
	SpendCap CrystallizationReason = "SpendCap"
	// MalformedOutput: a later stage answered malformed; the chain stopped on
	// the previous observation (DEGRADED).
	MalformedOutput CrystallizationReason = "MalformedOutput"
)

// The thresholds of seed 004.
const (
	highConfidence      = 0.95
	consistencyDelta    = 0.05
	consistencyOverlap  = 0.9
	lowComplexityLayers = 6
)

// Check is the result of inspecting the chain after a stage.
type Check struct {
	Crystallized    bool                  `json:"crystallized"`
	Reason          CrystallizationReason `json:"reason,omitempty"`
	ConfidenceDelta float64               `json:"confidence_delta"`
	LayerOverlap    float64               `json:"layer_overlap"`
}

// Inspect checks whether current crystallizes the chain, in seed 004's order:
// HighConfidence, Consistency (needs previous), LowComplexity, PatternMatch.
// Layer overlap is the Jaccard index of the two layer sets.
func Inspect(current Observation, previous *Observation, patternMatch bool) Check {
	var c Check
	if previous != nil {
		// rounded to 1e-9 so that 0.85-0.80 is 0.05, not 0.04999...
		c.ConfidenceDelta = math.Round(math.Abs(current.Confidence-previous.Confidence)*1e9) / 1e9
		c.LayerOverlap = overlap(current.Layers, previous.Layers)
	}
	switch {
	case current.Confidence > highConfidence:
		c.Reason = HighConfidence
	case previous != nil && c.ConfidenceDelta < consistencyDelta && c.LayerOverlap > consistencyOverlap:
		c.Reason = Consistency
	case len(current.Layers) < lowComplexityLayers:
		c.Reason = LowComplexity
	case patternMatch:
		c.Reason = PatternMatch
	default:
		return c
	}
	c.Crystallized = true
	return c
}

// overlap is |a ∩ b| / |a ∪ b|; two empty sets overlap fully.
func overlap(a, b []string) float64 {
	set := map[string]int{}
	for _, l := range a {
		set[l] |= 1
	}
	for _, l := range b {
		set[l] |= 2
	}
	if len(set) == 0 {
		return 1
	}
	both := 0
	for _, v := range set {
		if v == 3 {
			both++
		}
	}
	return float64(both) / float64(len(set))
}
