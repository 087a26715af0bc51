// Package reason is ora's model-backed reasoner on Amazon Bedrock. It runs the
// observer chain of seed 004 (stages explore, refine, integrate, crystallize,
// stopping when an observation crystallizes) inside the reasoning bridge of
// seed 001 (an immutable ReasoningEnvelope in, a typed ReasoningResult out,
// tools_allowed enforced, diagnostic mode when the kernel is not green), keeps
// a pattern cache and a per-day spend counter in the ledger store, and bounds
// every wave by a token budget and every day by a spend cap.
//
// Reasoner implements ora.Reasoner: it wraps a signal and its orientation
// packet into a SafeOPSDecision envelope, runs the bridge, and maps the
// crystallized observation to an ora.ReasonerDecision whose Model trace carries
// the chain length, the crystallization reason, the usage and the cost.
package reason
