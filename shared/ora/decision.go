package ora

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// AuthorType says in which role a participant acted (the Dual Triad). The
// reasoner acts as architect or auditor, the actor always as executor, a person
// as human. Observer appears only in attribution: the witness validates it.
type AuthorType string

// The author types.
const (
	AuthorArchitect AuthorType = "architect"
	AuthorAuditor   AuthorType = "auditor"
	AuthorExecutor  AuthorType = "executor"
	AuthorHuman     AuthorType = "human"
	AuthorObserver  AuthorType = "observer"
)

// Confidence thresholds of seed 000.
const (
	HighConfidence   = 0.8 // above: execute
	MediumConfidence = 0.5 // from here up to HighConfidence: execute and request review
)

// ConfidenceBand is where a decision's confidence falls.
type ConfidenceBand string

// The three bands.
const (
	BandHigh   ConfidenceBand = "high"   // > 0.8: execute immediately
	BandMedium ConfidenceBand = "medium" // 0.5 to 0.8: execute, log for review
	BandLow    ConfidenceBand = "low"    // < 0.5: escalate to a human
)

// BandOf returns the band of a confidence in [0, 1].
func BandOf(confidence float64) ConfidenceBand {
	switch {
	case confidence > HighConfidence:
		return BandHigh
	case confidence >= MediumConfidence:
		return BandMedium
	default:
		return BandLow
	}
}

// Scope bounds what an actor may do for a decision.
type Scope struct {
	Ref               string   `json:"ref,omitempty"`
	AllowedOperations []string `json:"allowed_operations"`
	ForbiddenPaths    []string `json:"forbidden_paths,omitempty"`
}

// Action is one operation a decision asks the actor to run.
type Action struct {
	Type       string          `json:"type"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// DependsOn lists the indexes of earlier actions of the same decision
	// that must succeed before this one runs; actions that depend on nothing
	// may run concurrently.
	DependsOn []int `json:"depends_on,omitempty"`
}

// CheckDependsOn checks every action's depends_on: each names an earlier
// action of the same list (so the actions form no cycle), none itself, none
// twice. Errors: EINVALID naming the first bad action.
func CheckDependsOn(actions []Action) error {
	for i, a := range actions {
		seen := make(map[int]bool, len(a.DependsOn))
		for _, d := range a.DependsOn {
			field := fmt.Sprintf("decision.actions[%d].depends_on", i)
			switch {
			case d == i:
				return Invalid(field, "an action cannot depend on itself")
			case d < 0 || d > i:
				return Invalid(field, "%d is not the index of an earlier action (0..%d)", d, i-1)
			case seen[d]:
				return Invalid(field, "%d is named twice", d)
			}
			seen[d] = true
		}
	}
	return nil
}

// Usage counts the tokens one or more model calls consumed.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + o.InputTokens,
		OutputTokens:     u.OutputTokens + o.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
	}
}

// ModelTrace records how a model-backed reasoner reached a decision: which
// model, how many observer-chain stages, why the chain stopped, the status of
// the reasoning result, the usage and what it cost.
type ModelTrace struct {
	ModelID               string          `json:"model_id"`
	Status                ReasoningStatus `json:"status"`
	ChainLength           int             `json:"chain_length"`
	CrystallizationReason string          `json:"crystallization_reason"`
	Usage                 Usage           `json:"usage"`
	CostUSD               float64         `json:"cost_usd"`
	EnvelopeDigest        string          `json:"envelope_digest,omitempty"`
	MotorVersion          string          `json:"motor_version,omitempty"`
	DegradedReasons       []string        `json:"degraded_reasons,omitempty"`
	// BedrockErrors names every Bedrock error met while reasoning (model and
	// error code), including those a retry or a fallback recovered from.
	BedrockErrors []string `json:"bedrock_errors,omitempty"`
	// BatchID and BatchSize name the batch a decision was reasoned in (one
	// model call for several signals of one source); CostUSD is then this
	// decision's equal share of the batch's cost, Usage the batch's.
	BatchID   string `json:"batch_id,omitempty"`
	BatchSize int    `json:"batch_size,omitempty"`
	// BatchSignals are the batch's signal ids in the order their packets
	// were merged into the view the model read.
	BatchSignals []string `json:"batch_signals,omitempty"`
	// PacketViewDigest is the sha256 of the packet's view the model read
	// (the compact rendering of the orientation packet, within
	// PacketViewTokens): replaying the packet and rendering it again must
	// give the same digest. For a batch it is the shared view of the
	// batch's packets.
	PacketViewDigest string `json:"packet_view_digest,omitempty"`
	PacketViewTokens int    `json:"packet_view_tokens,omitempty"`
	// PatternSource names the earlier decision (its envelope) whose pattern
	// the model was shown, quoted as data, and PatternSimilarity how close
	// that signal was to this one (0..1).
	PatternSource     string  `json:"pattern_source,omitempty"`
	PatternSimilarity float64 `json:"pattern_similarity,omitempty"`

	// ToolCalls are the tools the model called while reasoning (ora's
	// ledger tools and MCP servers' tools), each with its digests.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Program is the reasoning program that ran and Mode the kernel's mode
	// (pipeline, or diagnostic when the kernel was not green);
	// BlockedPrograms are the programs diagnostic mode kept from running.
	Program         ProgramID   `json:"program,omitempty"`
	Mode            string      `json:"mode,omitempty"`
	BlockedPrograms []ProgramID `json:"blocked_programs,omitempty"`
}

// ReasonerDecision is what the reasoner decided about one signal. ActionType and
// Parameters are the primary action; Actions, when set, lists every action in
// order and its first element is the primary one. Tier selects validators:
// technical always, safety from 2, intent from 3. Model is set only by a
// model-backed reasoner; RulesVersion only by the rules reasoner.
// MotorVersion and AppVersion are the versions the decision ran under: the
// motor's (seed 003: rules, prompts, model profile, validator settings) and
// the app context's (see AppVersion).
type ReasonerDecision struct {
	ID           string          `json:"id"`
	SignalID     string          `json:"signal_id"`
	ActionType   string          `json:"action_type"`
	Parameters   json.RawMessage `json:"parameters,omitempty"`
	Actions      []Action        `json:"actions,omitempty"`
	Confidence   float64         `json:"confidence"`
	Reasoning    string          `json:"reasoning"`
	AuthorType   AuthorType      `json:"author_type"`
	Scope        Scope           `json:"scope"`
	Tier         int             `json:"tier"`
	Timestamp    time.Time       `json:"timestamp"`
	PacketDigest string          `json:"packet_digest,omitempty"`
	RulesVersion string          `json:"rules_version,omitempty"`
	MotorVersion string          `json:"motor_version,omitempty"`
	AppVersion   string          `json:"app_version,omitempty"`
	// AppPatch is the operator's input patch the decision was made under
	// (a resume's): the signal's payload was patched with it before the
	// reasoner read it, so a replay applies it again.
	AppPatch *AppPatch   `json:"app_patch,omitempty"`
	Model    *ModelTrace `json:"model,omitempty"`
	// OrientationProposal is a profile_change_proposal the reasoner emits
	// beside its decision (seed 002 §8.6): it is recorded and goes through
	// the orientation guard like any other proposal, under the reasoner's
	// own principal; it never changes the decision.
	OrientationProposal *ProfileProposal `json:"orientation_proposal,omitempty"`
}

// Plan returns the actions to run, in order.
func (d ReasonerDecision) Plan() []Action {
	if len(d.Actions) > 0 {
		return d.Actions
	}
	return []Action{{Type: d.ActionType, Parameters: d.Parameters}}
}

// Band returns the decision's confidence band.
func (d ReasonerDecision) Band() ConfidenceBand { return BandOf(d.Confidence) }

// Validate checks the decision; the error names the first bad field.
func (d ReasonerDecision) Validate() error {
	if d.ID == "" {
		return Invalid("decision.id", "required")
	}
	if d.SignalID == "" {
		return Invalid("decision.signal_id", "required")
	}
	if d.ActionType == "" {
		return Invalid("decision.action_type", "required")
	}
	if math.IsNaN(d.Confidence) || d.Confidence < 0 || d.Confidence > 1 {
		return Invalid("decision.confidence", "%v is outside 0..1", d.Confidence)
	}
	if d.AuthorType != AuthorArchitect && d.AuthorType != AuthorAuditor {
		return Invalid("decision.author_type", "%q is not architect or auditor", d.AuthorType)
	}
	if d.Tier < 1 || d.Tier > 3 {
		return Invalid("decision.tier", "%d is outside 1..3", d.Tier)
	}
	if d.Timestamp.IsZero() {
		return Invalid("decision.timestamp", "required")
	}
	if len(d.Parameters) > 0 && !json.Valid(d.Parameters) {
		return Invalid("decision.parameters", "must be JSON")
	}
	for i, a := range d.Actions {
		if a.Type == "" {
			return Invalid(fmt.Sprintf("decision.actions[%d].type", i), "required")
		}
		if len(a.Parameters) > 0 && !json.Valid(a.Parameters) {
			return Invalid(fmt.Sprintf("decision.actions[%d].parameters", i), "must be JSON")
		}
	}
	if err := CheckDependsOn(d.Actions); err != nil {
		return err
	}
	for i, a := range d.Plan() {
		if h, found := CredentialHeaderIn(a.Parameters); found {
			return Invalid(fmt.Sprintf("decision.actions[%d].parameters.headers", i), "%q carries a credential: name a connection instead, which adds it at send time", h)
		}
	}
	if len(d.Actions) > 0 && d.Actions[0].Type != d.ActionType {
		return Invalid("decision.actions[0].type", "%q differs from action_type %q", d.Actions[0].Type, d.ActionType)
	}
	if len(d.Scope.AllowedOperations) == 0 {
		return Invalid("decision.scope.allowed_operations", "at least one operation is required")
	}
	return nil
}

// DecisionStatus is where a decision is in its life. It moves only along
// CanTransition's edges, by a conditional update on the expected old status.
type DecisionStatus string

// The decision statuses.
const (
	StatusDecided          DecisionStatus = "decided"
	StatusAwaitingApproval DecisionStatus = "awaiting-approval"
	StatusApproved         DecisionStatus = "approved"
	StatusRejected         DecisionStatus = "rejected"
	StatusExecuting        DecisionStatus = "executing"
	StatusExecuted         DecisionStatus = "executed"
	StatusFailed           DecisionStatus = "failed"
	// StatusUnknown: an action's outcome cannot be known (its request went
	// out, no answer came back); a human must find out what happened.
	StatusUnknown DecisionStatus = "unknown"
)

var transitions = map[DecisionStatus][]DecisionStatus{
	StatusDecided:          {StatusExecuting, StatusAwaitingApproval},
	StatusAwaitingApproval: {StatusApproved, StatusRejected},
	StatusApproved:         {StatusExecuting},
	StatusExecuting:        {StatusExecuted, StatusFailed, StatusUnknown},
	// An operator's answer to the unknown outcome: it ran, or it did not
	// (and runs again).
	StatusUnknown: {StatusExecuted, StatusExecuting},
}

// CanTransition reports whether a decision may move from one status to another:
// decided -> executing | awaiting-approval; awaiting-approval -> approved |
// rejected; approved -> executing; executing -> executed | failed | unknown;
// unknown -> executed | executing (the operator's resolution).
func CanTransition(from, to DecisionStatus) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Terminal reports whether no transition leaves s.
func (s DecisionStatus) Terminal() bool { return len(transitions[s]) == 0 }

// DecisionState is the mutable status record kept beside a decision's
// write-once ledger entry. Digest is the sha256 of the reasoner-decision
// entry's body, which the actor checks to prove provenance.
type DecisionState struct {
	DecisionID string         `json:"decision_id"`
	SignalID   string         `json:"signal_id"`
	Status     DecisionStatus `json:"status"`
	Digest     string         `json:"digest"`
	Reason     string         `json:"reason,omitempty"`
	Version    int            `json:"version"`
	UpdatedAt  time.Time      `json:"updated_at"`
}

// ActorResult reports what the actor did for a decision.
type ActorResult struct {
	DecisionID string            `json:"decision_id"`
	Outcome    string            `json:"outcome"` // success | failure
	Evidence   []string          `json:"evidence"`
	Validators []ValidatorResult `json:"validators,omitempty"`
	Timestamp  time.Time         `json:"timestamp"`
}

// Validator names one of the validators.
type Validator string

// The validators: technical checks the executor, safety the auditor, intent
// the architect, and the witness checks the observer.
const (
	ValidatorTechnical Validator = "technical"
	ValidatorSafety    Validator = "safety"
	ValidatorIntent    Validator = "intent"
	ValidatorWitness   Validator = "witness"
)

// ResponsibleAuthor returns the author type a validator holds to account.
func (v Validator) ResponsibleAuthor() AuthorType {
	switch v {
	case ValidatorTechnical:
		return AuthorExecutor
	case ValidatorSafety:
		return AuthorAuditor
	case ValidatorIntent:
		return AuthorArchitect
	case ValidatorWitness:
		return AuthorObserver
	}
	return ""
}

// Verdict is a validator's finding.
type Verdict string

// The verdicts.
const (
	Pass Verdict = "PASS"
	Fail Verdict = "FAIL"
)

// Attribution says which author type a validator held responsible, and for what.
type Attribution struct {
	AuthorType     AuthorType `json:"author_type"`
	ResponsibleFor string     `json:"responsible_for"`
}

// ValidatorResult is one validator's verdict on a wave.
type ValidatorResult struct {
	Validator   Validator    `json:"validator"`
	Verdict     Verdict      `json:"verdict"`
	Attribution *Attribution `json:"attribution,omitempty"`
	Summary     string       `json:"summary"`
	DecisionID  string       `json:"decision_id,omitempty"`
	Timestamp   time.Time    `json:"timestamp"`
}

// Validate checks the result's fields.
func (r ValidatorResult) Validate() error {
	switch r.Validator {
	case ValidatorTechnical, ValidatorSafety, ValidatorIntent, ValidatorWitness:
	default:
		return Invalid("validator", "%q is not technical, safety, intent or witness", r.Validator)
	}
	if r.Verdict != Pass && r.Verdict != Fail {
		return Invalid("verdict", "%q is not PASS or FAIL", r.Verdict)
	}
	if r.Summary == "" {
		return Invalid("summary", "required")
	}
	return nil
}
