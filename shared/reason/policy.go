package reason

// StopHandling is what the bridge does with a stage's answer given the
// stopReason Bedrock gave it.
type StopHandling string

// The handlings of StopPolicy.
const (
	// StopUsable: the answer is parsed and validated against its schema.
	StopUsable StopHandling = "usable"
	// StopBlocked: a guardrail or content filter stopped the answer. The
	// result is BLOCKED at any stage, recorded, and never acted on, even
	// when earlier stages proposed a decision.
	StopBlocked StopHandling = "blocked"
	// StopRetryLargerCap: the stage is asked once more with twice the
	// maxTokens; a second such answer is unusable.
	StopRetryLargerCap StopHandling = "retry_larger_cap"
	// StopRetryOnce: the stage is asked once more as it was; a second such
	// answer is unusable.
	StopRetryOnce StopHandling = "retry_once"
	// StopUnusable: the answer is not used. At stage 1 the result is FAILED
	// (no decision); later, the chain stops on the previous stage and the
	// decision is for a human (confidence below 0.5: never executed
	// unattended).
	StopUnusable StopHandling = "unusable"
)

// StopPolicy maps each Bedrock Converse stopReason to its handling. A
// stopReason not listed is StopUnusable.
var StopPolicy = map[string]StopHandling{
	"end_turn":                      StopUsable,
	"tool_use":                      StopUsable,
	"guardrail_intervened":          StopBlocked,
	"content_filtered":              StopBlocked,
	"max_tokens":                    StopRetryLargerCap, // a truncated answer may still parse: never used
	"malformed_model_output":        StopRetryOnce,
	"malformed_tool_use":            StopRetryOnce,
	"model_context_window_exceeded": StopUnusable, // a larger output cap does not shrink the input
	"stop_sequence":                 StopUnusable, // ora sets no stop sequences
}

// stopHandling returns the handling of a stopReason.
func stopHandling(reason string) StopHandling {
	if h, ok := StopPolicy[reason]; ok {
		return h
	}
	return StopUnusable
}

// HumanOnlyConfidence is the highest confidence of a decision a human must
// take (below ora.MediumConfidence): what an unusable later-stage answer
// caps the decision at.
const HumanOnlyConfidence = 0.49
