package reason

import (
	"encoding/json"
	"math"
	"strings"
)

// CrystallizationReason says why the observer chain stopped.
type CrystallizationReason string

// The five reasons of seed 004, then ora's own early stops.
const (
	HighConfidence CrystallizationReason = "HighConfidence" // confidence > 0.95
	// SameAction: two consecutive stages proposed the same action (type and
	// parameters): the later one, asked to critique the earlier, kept it.
	SameAction       CrystallizationReason = "SameAction"
	Consistency      CrystallizationReason = "Consistency"      // delta < 0.05 and layer overlap > 0.9
	LowComplexity    CrystallizationReason = "LowComplexity"    // fewer than half the layer catalogue
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
	highConfidence     = 0.95
	consistencyDelta   = 0.05
	consistencyOverlap = 0.9
)

// DefaultLayers is the default layer catalogue: the aspects of a situation an
// observation may draw on. The prompt lists it; an observation drawing on
// fewer than LowComplexityThreshold of them is simple and ends the chain.
var DefaultLayers = []string{"SIGNAL", "COMMITMENTS", "HISTORY", "RISK", "SCOPE", "POLICY"}

// LowComplexityThreshold is the number of catalogue layers below which an
// observation is low complexity: half the catalogue, rounded up (3 of the
// default 6).
func LowComplexityThreshold(layers []string) int { return (len(layers) + 1) / 2 }

// countLayers counts the distinct layers of ls that are in the catalogue
// (case-insensitively): a layer the model invents does not make a
// situation more complex.
func countLayers(ls, catalogue []string) int {
	known := map[string]bool{}
	for _, l := range catalogue {
		known[strings.ToUpper(l)] = true
	}
	seen := map[string]bool{}
	for _, l := range ls {
		u := strings.ToUpper(strings.TrimSpace(l))
		if known[u] {
			seen[u] = true
		}
	}
	return len(seen)
}

// Check is the result of inspecting the chain after a stage.
type Check struct {
	Crystallized    bool                  `json:"crystallized"`
	Reason          CrystallizationReason `json:"reason,omitempty"`
	ConfidenceDelta float64               `json:"confidence_delta"`
	LayerOverlap    float64               `json:"layer_overlap"`
}

// Inspect checks whether current crystallizes the chain: HighConfidence,
// SameAction (needs previous: both proposed the same action), then seed
// 004's Consistency (needs previous), LowComplexity (fewer than
// LowComplexityThreshold(layers) of the catalogue's layers) and
// PatternMatch. Layer overlap is the Jaccard index of the two layer sets.
func Inspect(current Observation, previous *Observation, patternMatch bool, layers []string) Check {
	var c Check
	if previous != nil {
		// rounded to 1e-9 so that 0.85-0.80 is 0.05, not 0.04999...
		c.ConfidenceDelta = math.Round(math.Abs(current.Confidence-previous.Confidence)*1e9) / 1e9
		c.LayerOverlap = overlap(current.Layers, previous.Layers)
	}
	switch {
	case current.Confidence > highConfidence:
		c.Reason = HighConfidence
	case previous != nil && sameAction(current.Decision, previous.Decision):
		c.Reason = SameAction
	case previous != nil && c.ConfidenceDelta < consistencyDelta && c.LayerOverlap > consistencyOverlap:
		c.Reason = Consistency
	case countLayers(current.Layers, layers) < LowComplexityThreshold(layers):
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

// sameAction reports whether two proposed decisions name the same action:
// the same type and parameters, and the same follow-ups (each's type,
// parameters and depends_on), if any (a batch: the same for every signal; a
// program without an action: the same payload), compared as JSON values,
// so key order and spacing do not matter. Two absent decisions are not the
// same action.
func sameAction(a, b json.RawMessage) bool {
	ka, kb := actionKey(a), actionKey(b)
	return ka != "" && ka == kb
}

// actionKey is the canonical JSON of what a decision would do.
func actionKey(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	b, _ := json.Marshal(actionOf(v))
	return string(b)
}

func actionOf(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if ds, ok := m["decisions"].([]any); ok {
		out := make([]any, len(ds))
		for i, d := range ds {
			if dm, ok := d.(map[string]any); ok {
				out[i] = []any{dm["signal"], actionOf(dm["decision"])}
			}
		}
		return out
	}
	a, ok := m["action"].(map[string]any)
	if !ok {
		return m
	}
	if t, ok := a["type"]; ok {
		key := []any{m["allowed_action"], t, a["parameters"]}
		then, _ := m["then"].([]any)
		for _, f := range then {
			fm, _ := f.(map[string]any)
			fa, _ := fm["action"].(map[string]any)
			key = append(key, []any{fa["type"], fa["parameters"], fm["depends_on"]})
		}
		return key
	}
	return []any{m["allowed_action"], a}
}
