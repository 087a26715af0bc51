package ora

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Profile statuses (seed 002 §8.1).
const (
	ProfileActive    = "active"
	ProfileCandidate = "candidate"
	ProfileRetired   = "retired"
)

// Horizon policies: what happens to a temporary profile version when its
// horizon of N waves is over.
const (
	// HorizonRevert writes the base version's content back as a new version.
	HorizonRevert = "revert"
	// HorizonPromote keeps the temporary content as a permanent new version,
	// when the feedback of its waves allows it; otherwise it reverts.
	HorizonPromote = "promote"
)

// Limits are a profile's capability bounds on observation: how much a wave
// may fan out and which HTTP endpoints it may read. A proposal may narrow
// them, never widen them (seed 002 §13.5).
type Limits struct {
	// MaxJobs caps the observation jobs of a wave (MAX_OBSERVATION_JOBS_PER_WAVE).
	MaxJobs int `json:"max_jobs"`
	// MaxConcurrency caps the jobs running at once (MAX_CONCURRENT_OBSERVERS).
	MaxConcurrency int `json:"max_concurrency"`
	// MaxFacts caps the facts of a wave (MAX_FACTS_PER_WAVE).
	MaxFacts int `json:"max_facts"`
	// JobTimeoutMS is each job's timeout in milliseconds.
	JobTimeoutMS int `json:"job_timeout_ms"`
	// SourceQuotas cap the jobs per source family; a family not listed is
	// capped by MaxJobs only.
	SourceQuotas map[string]int `json:"source_quotas,omitempty"`
	// HTTPAllow lists the URL prefixes the http source family may GET.
	HTTPAllow []string `json:"http_allow,omitempty"`
	// ToleratedFailurePercent is the share of failed jobs a wave tolerates.
	ToleratedFailurePercent int `json:"tolerated_failure_percent"`
}

// The default hard caps of seed 002 §10.1.
const (
	DefaultMaxJobs        = 10000
	DefaultMaxConcurrency = 128
	DefaultMaxFacts       = 50000
	DefaultJobTimeoutMS   = 10000
)

// DefaultLimits returns the hard caps of seed 002 §10.1.
func DefaultLimits() Limits {
	return Limits{MaxJobs: DefaultMaxJobs, MaxConcurrency: DefaultMaxConcurrency, MaxFacts: DefaultMaxFacts, JobTimeoutMS: DefaultJobTimeoutMS}
}

// AttentionRule tells Plan what to observe: a source family, a
// family-specific predicate (what to read), the band its facts go to, and the
// weights that score them (seed 002 §8.3).
type AttentionRule struct {
	ID         string          `json:"rule_id"`
	SourceType string          `json:"source_type"`
	Predicate  json.RawMessage `json:"predicate"`
	Band       Band            `json:"band"`
	// PriorityWeight scales the facts' utility; NoveltyWeight adds to the
	// utility of a fact first seen in this wave; RiskWeight adds to the
	// utility of a fact its source marks risky.
	PriorityWeight float64 `json:"priority_weight"`
	NoveltyWeight  float64 `json:"novelty_weight"`
	RiskWeight     float64 `json:"risk_weight"`
	// RecencyHalfLifeSeconds is the age at which the recency factor has
	// fallen halfway from 1 to 0.5; 0 means no recency discount.
	RecencyHalfLifeSeconds int `json:"recency_half_life"`
	// MaxJobs is the rule's own quota of jobs per wave (0: no own quota).
	MaxJobs int  `json:"max_jobs,omitempty"`
	Enabled bool `json:"enabled"`
	// RiskWhen marks a fact of this rule risky when any match holds on its
	// normalized body; RiskWeight then adds to its utility.
	RiskWhen []RiskMatch `json:"risk_when,omitempty"`
}

// RiskMatch holds when the value at Path in a fact's normalized body
// (object keys separated by dots) is one of In, compared as text.
type RiskMatch struct {
	Path string   `json:"path"`
	In   []string `json:"in"`
}

// MaxRiskMatches is the most risk_when matches a rule may have.
const MaxRiskMatches = 16

// Profile is one version of an orientation profile: the budget, its six
// bands, the attention rules and the capability limits a wave runs under.
// Versions are monotonic per ID; a wave pins one at Plan (seed 002 §8.1).
type Profile struct {
	ID          string          `json:"profile_id"`
	Version     int             `json:"version"`
	TokenBudget int             `json:"total_token_budget"`
	Bands       []BandBudget    `json:"bands"`
	Rules       []AttentionRule `json:"rules"`
	Limits      Limits          `json:"limits"`
	// MaxSourceShare is the largest share (0..1] of a band's ceiling one
	// source family may fill beyond the band's floor (source diversity).
	MaxSourceShare float64 `json:"max_source_share"`
	// HorizonWaves is 0 for a permanent version; N > 0 makes the version
	// temporary: it runs for N waves, then HorizonPolicy applies.
	HorizonWaves  int    `json:"horizon_waves"`
	HorizonPolicy string `json:"horizon_policy,omitempty"`
	// BaseVersion is the version a temporary version reverts to.
	BaseVersion int       `json:"base_version,omitempty"`
	ProposalID  string    `json:"proposal_id,omitempty"`
	Status      string    `json:"status"`
	UpdatedBy   string    `json:"updated_by"`
	UpdatedAt   time.Time `json:"updated_at"`
}

var (
	profileName  = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	urlPrefix    = regexp.MustCompile(`^https?://[^/?#]+/`)
	unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)
)

// AllBands lists the six bands of seed 002 §9.2.
var AllBands = []Band{BandIdentity, BandObjectives, BandCapabilities, BandSituational, BandExploration, BandReserve}

// Validate checks a profile's content (not who may write it): ids, a
// positive budget, the six bands once each with 0 <= min <= target <= max and
// floors within the budget, well-formed rules and limits. The error names the
// first bad field.
func (p Profile) Validate() error {
	if !profileName.MatchString(p.ID) {
		return Invalid("profile_id", "%q must be 1-64 of a-z, 0-9, '.', '_', '-'", p.ID)
	}
	if p.Version < 1 {
		return Invalid("version", "%d must be at least 1", p.Version)
	}
	if p.TokenBudget <= 0 {
		return Invalid("total_token_budget", "%d must be positive", p.TokenBudget)
	}
	if len(p.Bands) != len(AllBands) {
		return Invalid("bands", "has %d bands, needs the six of seed 002: identity, objectives, capabilities, situational, exploration, reserve", len(p.Bands))
	}
	seen := map[Band]bool{}
	floors := 0
	for i, b := range p.Bands {
		where := fmt.Sprintf("bands[%d]", i)
		known := false
		for _, k := range AllBands {
			known = known || k == b.Band
		}
		switch {
		case !known:
			return Invalid(where+".band", "%q is not a band", b.Band)
		case seen[b.Band]:
			return Invalid(where+".band", "%q appears twice", b.Band)
		case b.MinTokens < 0:
			return Invalid(where+".min_tokens", "%d is negative", b.MinTokens)
		case b.TargetTokens < b.MinTokens:
			return Invalid(where+".target_tokens", "%d is below min_tokens %d", b.TargetTokens, b.MinTokens)
		case b.MaxTokens < b.TargetTokens:
			return Invalid(where+".max_tokens", "%d is below target_tokens %d", b.MaxTokens, b.TargetTokens)
		}
		seen[b.Band] = true
		floors += b.MinTokens
	}
	if floors > p.TokenBudget {
		return Invalid("bands", "the floors add up to %d, over the budget of %d", floors, p.TokenBudget)
	}
	rules := map[string]bool{}
	for i, r := range p.Rules {
		where := fmt.Sprintf("rules[%d]", i)
		switch {
		case !profileName.MatchString(r.ID):
			return Invalid(where+".rule_id", "%q must be 1-64 of a-z, 0-9, '.', '_', '-'", r.ID)
		case rules[r.ID]:
			return Invalid(where+".rule_id", "%q appears twice", r.ID)
		case r.SourceType == "":
			return Invalid(where+".source_type", "required")
		case !seen[r.Band]:
			return Invalid(where+".band", "%q is not a band", r.Band)
		case len(r.Predicate) == 0 || !json.Valid(r.Predicate) || !bytes.HasPrefix(bytes.TrimSpace(r.Predicate), []byte("{")):
			return Invalid(where+".predicate", "must be a JSON object")
		case r.PriorityWeight < 0 || r.PriorityWeight > 10:
			return Invalid(where+".priority_weight", "%v is outside 0..10", r.PriorityWeight)
		case r.NoveltyWeight < 0 || r.NoveltyWeight > 10:
			return Invalid(where+".novelty_weight", "%v is outside 0..10", r.NoveltyWeight)
		case r.RiskWeight < 0 || r.RiskWeight > 10:
			return Invalid(where+".risk_weight", "%v is outside 0..10", r.RiskWeight)
		case r.RecencyHalfLifeSeconds < 0:
			return Invalid(where+".recency_half_life", "%d is negative", r.RecencyHalfLifeSeconds)
		case r.MaxJobs < 0:
			return Invalid(where+".max_jobs", "%d is negative", r.MaxJobs)
		case len(r.RiskWhen) > MaxRiskMatches:
			return Invalid(where+".risk_when", "%d matches, at most %d", len(r.RiskWhen), MaxRiskMatches)
		}
		for j, m := range r.RiskWhen {
			if strings.TrimSpace(m.Path) == "" || len(m.In) == 0 {
				return Invalid(fmt.Sprintf("%s.risk_when[%d]", where, j), "needs a path and at least one value in in")
			}
		}
		rules[r.ID] = true
	}
	l := p.Limits
	switch {
	case l.MaxJobs < 1 || l.MaxJobs > DefaultMaxJobs:
		return Invalid("limits.max_jobs", "%d is outside 1..%d", l.MaxJobs, DefaultMaxJobs)
	case l.MaxConcurrency < 1 || l.MaxConcurrency > DefaultMaxConcurrency:
		return Invalid("limits.max_concurrency", "%d is outside 1..%d", l.MaxConcurrency, DefaultMaxConcurrency)
	case l.MaxFacts < 1 || l.MaxFacts > DefaultMaxFacts:
		return Invalid("limits.max_facts", "%d is outside 1..%d", l.MaxFacts, DefaultMaxFacts)
	case l.JobTimeoutMS < 1 || l.JobTimeoutMS > 15*60*1000:
		return Invalid("limits.job_timeout_ms", "%d is outside 1..900000", l.JobTimeoutMS)
	case l.ToleratedFailurePercent < 0 || l.ToleratedFailurePercent > 100:
		return Invalid("limits.tolerated_failure_percent", "%d is outside 0..100", l.ToleratedFailurePercent)
	}
	for fam, q := range l.SourceQuotas {
		if q < 0 {
			return Invalid("limits.source_quotas."+fam, "%d is negative", q)
		}
	}
	for i, u := range l.HTTPAllow {
		if !urlPrefix.MatchString(u) {
			return Invalid(fmt.Sprintf("limits.http_allow[%d]", i), "%q must be an http(s) URL prefix ending the host with '/'", u)
		}
	}
	if p.MaxSourceShare <= 0 || p.MaxSourceShare > 1 {
		return Invalid("max_source_share", "%v is outside (0, 1]", p.MaxSourceShare)
	}
	if p.HorizonWaves < 0 {
		return Invalid("horizon_waves", "%d is negative", p.HorizonWaves)
	}
	if p.HorizonWaves > 0 {
		if p.HorizonPolicy != HorizonRevert && p.HorizonPolicy != HorizonPromote {
			return Invalid("horizon_policy", "%q is not revert or promote", p.HorizonPolicy)
		}
		if p.BaseVersion < 1 || p.BaseVersion >= p.Version {
			return Invalid("base_version", "%d must be an earlier version", p.BaseVersion)
		}
	}
	switch p.Status {
	case ProfileActive, ProfileCandidate, ProfileRetired:
	default:
		return Invalid("status", "%q is not active, candidate or retired", p.Status)
	}
	if p.UpdatedBy == "" {
		return Invalid("updated_by", "required")
	}
	return nil
}

// Band returns the profile's budget of band b, and whether it has one.
func (p Profile) Band(b Band) (BandBudget, bool) {
	for _, x := range p.Bands {
		if x.Band == b {
			return x, true
		}
	}
	return BandBudget{}, false
}

// Proposal statuses (seed 002 §8.6). A decision is terminal and single.
const (
	ProposalPending  = "pending"
	ProposalApproved = "approved"
	ProposalRejected = "rejected"
	ProposalExpired  = "expired"
)

// ProfileChange is what a proposal asks for: the content of the next
// version. A nil field keeps the base version's value.
type ProfileChange struct {
	TokenBudget    *int            `json:"total_token_budget,omitempty"`
	Bands          []BandBudget    `json:"bands,omitempty"`
	Rules          []AttentionRule `json:"rules,omitempty"`
	Limits         *Limits         `json:"limits,omitempty"`
	MaxSourceShare *float64        `json:"max_source_share,omitempty"`
}

// ProfileProposal is a profile_change_proposal (seed 002 §8.6): a change to a
// base profile version, effective for EffectiveWaves waves, then the policy.
type ProfileProposal struct {
	ID                 string        `json:"proposal_id"`
	RequestedBy        string        `json:"requested_by"`
	Namespace          string        `json:"namespace"`
	BaseProfileID      string        `json:"base_profile_id"`
	BaseProfileVersion int           `json:"base_profile_version"`
	EffectiveWaves     int           `json:"effective_waves"`
	HorizonPolicy      string        `json:"horizon_policy"`
	Reason             string        `json:"reason,omitempty"`
	Change             ProfileChange `json:"change"`
	CreatedAt          time.Time     `json:"created_at"`
}

// Validate checks a proposal's shape; the guard checks its safety. The error
// names the first bad field.
func (p ProfileProposal) Validate() error {
	switch {
	case !profileName.MatchString(p.ID):
		return Invalid("proposal_id", "%q must be 1-64 of a-z, 0-9, '.', '_', '-'", p.ID)
	case p.RequestedBy == "":
		return Invalid("requested_by", "required")
	case p.Namespace == "":
		return Invalid("namespace", "required")
	case !profileName.MatchString(p.BaseProfileID):
		return Invalid("base_profile_id", "%q is not a profile id", p.BaseProfileID)
	case p.BaseProfileVersion < 1:
		return Invalid("base_profile_version", "%d must be at least 1", p.BaseProfileVersion)
	case p.EffectiveWaves < 1:
		return Invalid("effective_waves", "%d must be at least 1", p.EffectiveWaves)
	case p.HorizonPolicy != HorizonRevert && p.HorizonPolicy != HorizonPromote:
		return Invalid("horizon_policy", "%q is not revert or promote", p.HorizonPolicy)
	}
	c := p.Change
	if c.TokenBudget == nil && c.Bands == nil && c.Rules == nil && c.Limits == nil && c.MaxSourceShare == nil {
		return Invalid("change", "changes nothing")
	}
	return nil
}

// Principal is who calls: the subject and namespace come from the verified
// token, never from a request body (seed 002 §11.2).
type Principal struct {
	Subject   string `json:"subject"`
	Namespace string `json:"namespace"`
}

// ProposalView is a proposal with its status, its one decision when it has
// one, and the profile version its approval created.
type ProposalView struct {
	Proposal ProfileProposal   `json:"proposal"`
	Status   string            `json:"status"`
	Decision *ProposalDecision `json:"decision,omitempty"`
	Version  int               `json:"profile_version,omitempty"`
}

// DecodeJSON decodes one JSON value into v strictly: unknown fields and
// trailing data are errors (fail closed, seed 002 §16.1). Errors: EINVALID
// naming the field.
func DecodeJSON(b []byte, v any) error { return decodeStrict(b, v) }

// DecodeProposal decodes a proposal strictly: unknown fields and trailing
// data are errors (fail closed, seed 002 §16.1), then Validate. Errors:
// EINVALID naming the field.
func DecodeProposal(b []byte) (ProfileProposal, error) {
	var p ProfileProposal
	if err := decodeStrict(b, &p); err != nil {
		return ProfileProposal{}, err
	}
	return p, p.Validate()
}

// DecodeProfile decodes a profile strictly and validates it. Errors:
// EINVALID naming the field.
func DecodeProfile(b []byte) (Profile, error) {
	var p Profile
	if err := decodeStrict(b, &p); err != nil {
		return Profile{}, err
	}
	return p, p.Validate()
}

func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return Invalid(jsonField(err), "%v", err)
	}
	if d.More() {
		return Invalid("body", "trailing data after the JSON object")
	}
	return nil
}

// jsonField names the field a decoding error is about, or "body".
func jsonField(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field
	}
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return "body"
}

// ProposalDecision is a proposal's one terminal decision.
type ProposalDecision struct {
	ProposalID      string    `json:"proposal_id"`
	Status          string    `json:"status"`
	RejectionCode   string    `json:"rejection_code,omitempty"`
	RejectionReason string    `json:"rejection_reason,omitempty"`
	DecidedBy       string    `json:"decided_by"`
	NewVersion      int       `json:"new_version,omitempty"`
	DecidedAt       time.Time `json:"decided_at"`
}

// OrientationPin is what a wave records at Plan (seed 002 §12.2): the profile
// version it runs under for its whole duration. Compile adds the packet id.
type OrientationPin struct {
	WaveID         string `json:"wave_id"`
	ProfileID      string `json:"profile_id"`
	ProfileVersion int    `json:"orientation_profile_version"`
	PacketID       string `json:"orientation_packet_id"`
}

// Feedback is one orientation_feedback record of a wave (seed 002 §8.7).
type Feedback struct {
	FeedbackID           string    `json:"feedback_id"`
	WaveID               string    `json:"wave_id"`
	PacketID             string    `json:"packet_id"`
	ProfileVersion       int       `json:"profile_version"`
	Source               string    `json:"source"`       // validator | operator | human | api
	By                   string    `json:"by,omitempty"` // who submitted it (api)
	DecisionQualityScore *float64  `json:"decision_quality_score,omitempty"`
	MissedSignalFlags    []string  `json:"missed_signal_flags,omitempty"`
	OperatorFeedback     string    `json:"operator_feedback,omitempty"`
	DecisionRegret       bool      `json:"decision_regret,omitempty"`
	CreatedAt            time.Time `json:"created_at"`
}

// AuditRecord is an orientation audit action (seed 002 §14.3) as a ledger entry.
type AuditRecord struct {
	Action  string            `json:"action"`
	Actor   string            `json:"actor"`
	Subject string            `json:"subject"`
	Result  string            `json:"result"`
	Detail  map[string]string `json:"detail,omitempty"`
	At      time.Time         `json:"at"`
}

// The five orientation audit actions of seed 002 §14.3.
const (
	AuditProfileProposed      = "orientation.profile.proposed"
	AuditProfileApproved      = "orientation.profile.approved"
	AuditProfileRejected      = "orientation.profile.rejected"
	AuditProfileExpired       = "orientation.profile.expired"
	AuditPacketCompiled       = "orientation.packet.compiled"
	AuditPacketReplayVerified = "orientation.packet.replay_verified"
)
