package ora

import (
	"context"
	"encoding/json"
	"time"
)

// ProgramID names one of the reasoning bridge's programs (seed 001).
type ProgramID string

// The four reasoning programs.
const (
	ProgramSafeOPSDecision          ProgramID = "SafeOPSDecision"
	ProgramOPSBlockGenerator        ProgramID = "OPSBlockGenerator"
	ProgramGuardFailureInterpreter  ProgramID = "GuardFailureInterpreter"
	ProgramPhaseTransitionValidator ProgramID = "PhaseTransitionValidator"
)

// Programs lists the known programs.
var Programs = []ProgramID{
	ProgramSafeOPSDecision, ProgramOPSBlockGenerator,
	ProgramGuardFailureInterpreter, ProgramPhaseTransitionValidator,
}

// KernelStateRef points at the authoritative kernel surfaces a reasoning
// program may read.
type KernelStateRef struct {
	Mode           string         `json:"mode"`
	Bootstrap      map[string]any `json:"bootstrap,omitempty"`
	SSOTIndex      map[string]any `json:"ssot_index,omitempty"`
	RealitySummary map[string]any `json:"reality_summary,omitempty"`
	OAState        map[string]any `json:"oa_state,omitempty"`
}

// Green reports whether the kernel is healthy: reality_summary.reality_green
// is true. When it is not, the bridge runs in diagnostic mode.
func (k KernelStateRef) Green() bool {
	g, ok := k.RealitySummary["reality_green"].(bool)
	return ok && g
}

// ReasoningEnvelope is the immutable input of a reasoning program: a read-only
// view of the world at one moment. Programs receive a copy (Clone) and its
// digest is recorded with the result.
type ReasoningEnvelope struct {
	EnvelopeID     string         `json:"envelope_id"`
	Timestamp      time.Time      `json:"timestamp"`
	ProgramID      ProgramID      `json:"program_id"`
	Goal           string         `json:"goal"`
	KernelStateRef KernelStateRef `json:"kernel_state_ref"`
	OAContext      map[string]any `json:"oa_context,omitempty"`
	ToolsAllowed   []string       `json:"tools_allowed"`
}

// Validate checks the envelope's fields.
func (e ReasoningEnvelope) Validate() error {
	if e.EnvelopeID == "" {
		return Invalid("envelope_id", "required")
	}
	if e.Timestamp.IsZero() {
		return Invalid("timestamp", "required")
	}
	known := false
	for _, p := range Programs {
		if p == e.ProgramID {
			known = true
		}
	}
	if !known {
		return Invalid("program_id", "%q is not a known program", e.ProgramID)
	}
	if e.Goal == "" {
		return Invalid("goal", "required")
	}
	return nil
}

// Canonical returns the envelope's canonical JSON encoding.
func (e ReasoningEnvelope) Canonical() ([]byte, error) { return json.Marshal(e) }

// Digest returns the sha256 of the canonical encoding.
func (e ReasoningEnvelope) Digest() (string, error) {
	b, err := e.Canonical()
	if err != nil {
		return "", Errorf(EINVALID, "envelope: %v", err)
	}
	return Digest(b), nil
}

// Clone returns a deep copy: nothing a program does to it reaches the original.
func (e ReasoningEnvelope) Clone() (ReasoningEnvelope, error) {
	b, err := e.Canonical()
	if err != nil {
		return ReasoningEnvelope{}, Errorf(EINVALID, "envelope: %v", err)
	}
	var c ReasoningEnvelope
	if err := json.Unmarshal(b, &c); err != nil {
		return ReasoningEnvelope{}, Errorf(EINTERNAL, "envelope: %v", err)
	}
	return c, nil
}

// ReasoningStatus is the outcome class of a reasoning result.
type ReasoningStatus string

// The reasoning statuses.
const (
	ReasoningOK       ReasoningStatus = "OK"
	ReasoningDegraded ReasoningStatus = "DEGRADED"
	ReasoningBlocked  ReasoningStatus = "BLOCKED"
	ReasoningFailed   ReasoningStatus = "FAILED"
)

// ToolCall logs one tool a program invoked (or tried to).
type ToolCall struct {
	Tool    string          `json:"tool"`
	Input   json.RawMessage `json:"input,omitempty"`
	Allowed bool            `json:"allowed"`
	// ResultDigest is the sha256 of the result sent back to the model, for
	// a tool that ran; Error marks a result that reports a failure.
	ResultDigest string `json:"result_digest,omitempty"`
	Error        bool   `json:"error,omitempty"`
	// Server is the MCP server of an MCP tool ("" for ora's own tools).
	Server string `json:"server,omitempty"`
	// InputDigest is the sha256 of the input (sorted keys) the tool got.
	InputDigest string `json:"input_digest,omitempty"`
	// DurationMS is how long an MCP call took, in milliseconds.
	DurationMS int64 `json:"duration_ms,omitempty"`
	// Message says why a call failed (timeout, unreachable server, ...).
	Message string `json:"message,omitempty"`
}

// Diagnostic is an event a program detected while reasoning.
type Diagnostic struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// ReasoningResult is a program's structured output. Decision holds the
// program-specific payload.
type ReasoningResult struct {
	EnvelopeID  string          `json:"envelope_id"`
	ProgramID   ProgramID       `json:"program_id"`
	Status      ReasoningStatus `json:"status"`
	Decision    json.RawMessage `json:"decision,omitempty"`
	Rationale   string          `json:"rationale"`
	ToolCalls   []ToolCall      `json:"tool_calls"`
	Diagnostics []Diagnostic    `json:"diagnostics"`
}

// ReasonerInput is what a reasoner reads: the signal and its orientation packet.
type ReasonerInput struct {
	Signal NormalizedSignal  `json:"signal"`
	Packet OrientationPacket `json:"packet"`
}

// Reasoner decides what to do about a signal. The rules reasoner and the
// Bedrock reasoner both implement it.
type Reasoner interface {
	// Reason returns a decision for the input; its ID and SignalID are set.
	// Errors: EINVALID (bad input), ETRANSIENT (model throttled or down),
	// EFORBIDDEN (the reasoning was BLOCKED, or the model denied access),
	// ENOTFOUND (an unknown model), EINTERNAL (FAILED reasoning, a bug).
	Reason(ctx context.Context, in ReasonerInput) (ReasonerDecision, error)
}
