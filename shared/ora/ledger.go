package ora

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"time"
)

// EntryKind names what a ledger entry records.
type EntryKind string

// The ledger entry kinds, in the order a wave usually writes them.
const (
	KindSignalReceived    EntryKind = "signal-received"
	KindObservedFact      EntryKind = "observed-fact"
	KindOrientationPacket EntryKind = "orientation-packet"
	KindReasonerDecision  EntryKind = "reasoner-decision"
	KindReviewRequested   EntryKind = "review-requested"
	KindArchitectIntent   EntryKind = "architect-intent"
	KindHumanVerdict      EntryKind = "human-verdict"
	KindExecutionEvidence EntryKind = "execution-evidence"
	KindValidatorResult   EntryKind = "validator-result"
	KindWitnessResult     EntryKind = "witness-result"
	KindOperatorDecision  EntryKind = "operator-decision"
	KindFinalVerdict      EntryKind = "final-verdict"

	// Orientation kernel records (seed 002). Profile versions, proposals and
	// their decisions live under pseudo signal ids (ProfileKey,
	// ProposalKey); pins, feedback and audit records under the wave's.
	KindOrientationProfile  EntryKind = "orientation-profile"
	KindProfileProposal     EntryKind = "profile-proposal"
	KindProposalDecision    EntryKind = "proposal-decision"
	KindOrientationPin      EntryKind = "orientation-pin"
	KindOrientationFeedback EntryKind = "orientation-feedback"
	KindOrientationAudit    EntryKind = "orientation-audit"
	// KindOrientationAdmin is a version of the guard's admin settings set
	// through the API, under the orient package's AdminKey.
	KindOrientationAdmin EntryKind = "orientation-admin"

	// KindStreamCheckpoint records how far `ora dev` has read a user table's
	// stream shard (the last sequence number captured), under a pseudo
	// signal id per stream and shard, so a restart resumes there.
	KindStreamCheckpoint EntryKind = "stream-checkpoint"
)

// EntryKinds lists every kind in wave order; Entries sorts ties by it.
var EntryKinds = []EntryKind{
	KindSignalReceived, KindObservedFact, KindOrientationPacket, KindReasonerDecision,
	KindReviewRequested, KindArchitectIntent, KindHumanVerdict, KindExecutionEvidence,
	KindValidatorResult, KindWitnessResult, KindOperatorDecision, KindFinalVerdict,
	KindOrientationProfile, KindProfileProposal, KindProposalDecision, KindOrientationPin,
	KindOrientationFeedback, KindOrientationAudit, KindOrientationAdmin, KindStreamCheckpoint,
}

// RecentKinds are the kinds a ledger indexes by kind, the only ones Recent
// answers for: orientation reads recent actions (execution-evidence), the
// workspace (signal-received) and the actor's history (final-verdict); the operator
// lists its incidents (operator-decision, a few per failed wave) and the console
// the decisions waiting for a human (architect-intent, one per escalation) and
// each wave's confidence band (reasoner-decision, one per wave) and the
// orientation proposals (profile-proposal, one per proposal, none per wave). Every
// other entry is written without index keys, which keeps a wave's index
// writes to a few per wave. A new query by kind adds its kind here.
var RecentKinds = []EntryKind{KindSignalReceived, KindReasonerDecision, KindExecutionEvidence, KindFinalVerdict, KindOperatorDecision, KindArchitectIntent, KindProfileProposal}

// Indexed reports whether k is one of RecentKinds.
func (k EntryKind) Indexed() bool {
	for _, x := range RecentKinds {
		if x == k {
			return true
		}
	}
	return false
}

// Retention is how long a ledger keeps the entries of a kind before its TTL
// removes them; kinds not in it are kept.
type Retention map[EntryKind]time.Duration

// DefaultRetention keeps observed facts and orientation packets, which only
// serve the wave that wrote them (and its audit), for 30 days; signals,
// decisions, evidence and verdicts are kept.
func DefaultRetention() Retention {
	return Retention{KindObservedFact: 30 * 24 * time.Hour, KindOrientationPacket: 30 * 24 * time.Hour}
}

// Apply returns e with ExpiresAt set to CreatedAt plus its kind's retention,
// when the kind has one and e has no ExpiresAt of its own. Call it on a
// prepared entry (CreatedAt set).
func (r Retention) Apply(e Entry) Entry {
	if d, ok := r[e.Kind]; ok && d > 0 && e.ExpiresAt == nil && !e.CreatedAt.IsZero() {
		x := e.CreatedAt.Add(d).UTC()
		e.ExpiresAt = &x
	}
	return e
}

// Rank returns the kind's position in EntryKinds, or -1 for an unknown kind.
func (k EntryKind) Rank() int {
	for i, x := range EntryKinds {
		if x == k {
			return i
		}
	}
	return -1
}

// Entry is one write-once record in the ledger. (SignalID, Kind, Qualifier) is
// its identity: a second write of it is a conflict. Qualifier tells apart
// several entries of one kind in a wave (a validator's name, an action index, a
// fact's job id) and is empty when a wave has one entry of the kind. Digest is
// the sha256 of Body; ExpiresAt, when set, becomes the store's TTL attribute.
type Entry struct {
	SignalID   string            `json:"signal_id"`
	Kind       EntryKind         `json:"kind"`
	Qualifier  string            `json:"qualifier,omitempty"`
	AuthorType AuthorType        `json:"author_type,omitempty"`
	Body       json.RawMessage   `json:"body"`
	Meta       map[string]string `json:"meta,omitempty"`
	Digest     string            `json:"digest"`
	CreatedAt  time.Time         `json:"created_at"`
	ExpiresAt  *time.Time        `json:"expires_at,omitempty"`
}

// NewEntry builds an entry whose body is v marshalled to JSON, with its digest
// and creation time set.
func NewEntry(signalID string, kind EntryKind, qualifier string, v any) (Entry, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return Entry{}, Invalid("body", "cannot encode: %v", err)
	}
	return NewEntryJSON(signalID, kind, qualifier, body), nil
}

// NewEntryJSON is NewEntry for a body already encoded: body must be the
// bytes json.Marshal makes of a value (compact, valid JSON), which the caller
// vouches for; Append then skips its JSON validity scan, as it does for
// NewEntry's. The entry keeps body (not a copy).
func NewEntryJSON(signalID string, kind EntryKind, qualifier string, body []byte) Entry {
	sum := sha256.Sum256(body)
	noteEncoded(sum)
	return Entry{
		SignalID:  signalID,
		Kind:      kind,
		Qualifier: qualifier,
		Body:      body,
		Digest:    hexDigest(sum),
		CreatedAt: time.Now().UTC(),
	}
}

// Validate checks the entry: ids, a known kind, a JSON body whose digest
// matches, and for kinds with a schema (signal-received, reasoner-decision,
// validator-result, witness-result) a body that passes that schema's checks.
// Append calls it; nothing invalid is written.
func (e Entry) Validate() error {
	if e.SignalID == "" {
		return Invalid("signal_id", "required")
	}
	if e.Kind == "" {
		return Invalid("kind", "required")
	}
	if e.Kind.Rank() < 0 {
		return Invalid("kind", "%q is not a ledger entry kind", e.Kind)
	}
	if len(e.Body) == 0 {
		return Invalid("body", "must be JSON")
	}
	sum := sha256.Sum256(e.Body)
	if !encodedBefore(sum) && !json.Valid(e.Body) {
		return Invalid("body", "must be JSON")
	}
	if e.Digest != "" && e.Digest != hexDigest(sum) {
		return Invalid("digest", "does not match the body")
	}
	if e.CreatedAt.IsZero() {
		return Invalid("created_at", "required")
	}
	switch e.Kind {
	case KindSignalReceived:
		var s NormalizedSignal
		if err := json.Unmarshal(e.Body, &s); err != nil {
			return Invalid("body", "not a normalized signal: %v", err)
		}
		if err := s.Validate(); err != nil {
			return err
		}
		if s.ID != e.SignalID {
			return Invalid("signal.id", "%q differs from the entry's signal_id %q", s.ID, e.SignalID)
		}
	case KindReasonerDecision:
		var d ReasonerDecision
		if err := json.Unmarshal(e.Body, &d); err != nil {
			return Invalid("body", "not a reasoner decision: %v", err)
		}
		if err := d.Validate(); err != nil {
			return err
		}
		if d.SignalID != e.SignalID {
			return Invalid("decision.signal_id", "%q differs from the entry's signal_id %q", d.SignalID, e.SignalID)
		}
	case KindOrientationProfile:
		var p Profile
		if err := json.Unmarshal(e.Body, &p); err != nil {
			return Invalid("body", "not an orientation profile: %v", err)
		}
		if err := p.Validate(); err != nil {
			return err
		}
	case KindProfileProposal:
		var p ProfileProposal
		if err := json.Unmarshal(e.Body, &p); err != nil {
			return Invalid("body", "not a profile proposal: %v", err)
		}
		if err := p.Validate(); err != nil {
			return err
		}
	case KindValidatorResult, KindWitnessResult:
		var r ValidatorResult
		if err := json.Unmarshal(e.Body, &r); err != nil {
			return Invalid("body", "not a validator result: %v", err)
		}
		if err := r.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Commitment is an open promise the agent made (commitment.open) and keeps in
// view until it is closed (commitment.close). Changes to commitments are a
// signal source of their own (table changes).
type Commitment struct {
	ID       string          `json:"id"`
	SignalID string          `json:"signal_id"`
	Title    string          `json:"title"`
	Body     json.RawMessage `json:"body,omitempty"`
	Status   string          `json:"status"` // open | closed
	OpenedAt time.Time       `json:"opened_at"`
	ClosedAt *time.Time      `json:"closed_at,omitempty"`
	ClosedBy string          `json:"closed_by,omitempty"`
	Version  int             `json:"version"`
}

// Commitment statuses.
const (
	CommitmentOpen   = "open"
	CommitmentClosed = "closed"
)

// Ledger is the write-once record of every wave, plus the status records that
// move by conditional update. Implementations: shared/sqlite (embedded) and
// shared/dynamo (AWS). One contract suite (shared/ledgertest) runs against both.
type Ledger interface {
	// Append writes e once. It fills Digest and CreatedAt when empty and returns
	// the entry as stored. Errors: EINVALID (nothing written, Field names what),
	// ECONFLICT when (SignalID, Kind, Qualifier) exists, carrying the stored
	// Entry (read it with Existing[Entry]), ETRANSIENT.
	Append(ctx context.Context, e Entry) (Entry, error)

	// Entries returns every entry of a signal ordered by CreatedAt, then kind
	// rank, then qualifier. Errors: ENOTFOUND when the signal has none, ETRANSIENT.
	Entries(ctx context.Context, signalID string) ([]Entry, error)

	// Recent returns entries of one kind created in [from, to), newest first, at
	// most limit (0: no limit). Errors: EINVALID, ETRANSIENT.
	Recent(ctx context.Context, kind EntryKind, from, to time.Time, limit int) ([]Entry, error)

	// RecordDecision appends d as the signal's reasoner-decision entry (qualifier
	// d.ID) and creates its status record at decided, atomically. Errors:
	// EINVALID, ECONFLICT with the stored Entry, ETRANSIENT.
	RecordDecision(ctx context.Context, d ReasonerDecision) (Entry, error)

	// Decision returns a decision's status record. Errors: ENOTFOUND, ETRANSIENT.
	Decision(ctx context.Context, decisionID string) (DecisionState, error)

	// TransitionDecision moves a decision from one status to another by a
	// conditional update on the expected old status. Errors: EINVALID when
	// CanTransition(from, to) is false, ENOTFOUND, ECONFLICT when the current
	// status is not from (carrying the current DecisionState), ETRANSIENT.
	TransitionDecision(ctx context.Context, decisionID string, from, to DecisionStatus, reason string) (DecisionState, error)

	// Commit writes a stage's entries and decision transitions in one
	// commit: all of them or none. Each entry is written once on its
	// identity and each transition is conditional on its From, as Append and
	// TransitionDecision do. A stage committed before (every entry's
	// identity stored, every decision at its To) is a replay: nothing is
	// written and Committed.Replayed is true, with the stored entries.
	// Errors: EINVALID (nothing written: a bad entry, transition, or a stage
	// over MaxStageWrites or MaxStageBytes), ENOTFOUND (a transition's
	// decision has no status record), ECONFLICT when one write's condition
	// fails and the stage is not a replay (nothing written), carrying the
	// first conflicting write's stored record: the Entry (whose identity
	// names which) or the DecisionState; ETRANSIENT (nothing written, or on
	// DynamoDB possibly everything: run it again, a replay answers).
	Commit(ctx context.Context, s Stage) (Committed, error)

	// OpenCommitment stores c as open. Errors: EINVALID, ECONFLICT with the
	// stored Commitment, ETRANSIENT.
	OpenCommitment(ctx context.Context, c Commitment) (Commitment, error)

	// CloseCommitment closes an open commitment. Errors: ENOTFOUND, ECONFLICT
	// when it is already closed (carrying it), ETRANSIENT.
	CloseCommitment(ctx context.Context, id, closedBy string) (Commitment, error)

	// OpenCommitments returns open commitments, oldest first, at most limit (0:
	// no limit). Errors: ETRANSIENT.
	OpenCommitments(ctx context.Context, limit int) ([]Commitment, error)
}

// Debouncer suppresses repeats of a key within a window, across processes: the
// first caller in a window wins through a conditional write on the store.
type Debouncer interface {
	// Debounce reports whether this call is the first for key within window
	// (true: go ahead; false: a repeat, skip it). Errors: EINVALID, ETRANSIENT.
	Debounce(ctx context.Context, key string, window time.Duration) (bool, error)
}

// DebounceWindow is seed 000's debounce window per dedup key.
const DebounceWindow = 500 * time.Millisecond

// Prepared returns the entry as a store writes it: Digest and CreatedAt filled
// when empty (CreatedAt from now), times in UTC, empty Meta as nil, and
// validated (Validate, plus years a store can encode). Errors: EINVALID.
func (e Entry) Prepared(now time.Time) (Entry, error) {
	if e.Digest == "" && len(e.Body) > 0 {
		e.Digest = Digest(e.Body)
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
	e.CreatedAt = e.CreatedAt.UTC()
	if e.ExpiresAt != nil {
		x := e.ExpiresAt.UTC()
		e.ExpiresAt = &x
	}
	if len(e.Meta) == 0 {
		e.Meta = nil
	}
	if err := e.Validate(); err != nil {
		return Entry{}, err
	}
	if err := storableYear("created_at", e.CreatedAt); err != nil {
		return Entry{}, err
	}
	if e.ExpiresAt != nil {
		if err := storableYear("expires_at", *e.ExpiresAt); err != nil {
			return Entry{}, err
		}
	}
	return e, nil
}

// Opened returns the commitment as OpenCommitment stores it: validated, open,
// version 1, OpenedAt filled from now when empty and in UTC. Errors: EINVALID
// naming the field.
func (c Commitment) Opened(now time.Time) (Commitment, error) {
	switch {
	case c.ID == "":
		return Commitment{}, Invalid("id", "required")
	case c.Title == "":
		return Commitment{}, Invalid("title", "required")
	case c.Status != "" && c.Status != CommitmentOpen:
		return Commitment{}, Invalid("status", "%q: a commitment is opened as %q", c.Status, CommitmentOpen)
	case len(c.Body) > 0 && !json.Valid(c.Body):
		return Commitment{}, Invalid("body", "must be JSON")
	}
	if c.OpenedAt.IsZero() {
		c.OpenedAt = now
	}
	c.OpenedAt = c.OpenedAt.UTC()
	if err := storableYear("opened_at", c.OpenedAt); err != nil {
		return Commitment{}, err
	}
	c.Status, c.ClosedAt, c.ClosedBy, c.Version = CommitmentOpen, nil, "", 1
	return c, nil
}

// storableYear rejects times whose year the stores' fixed-width format cannot hold.
func storableYear(field string, t time.Time) error {
	if y := t.Year(); y < 1 || y > 9999 {
		return Invalid(field, "year %d is outside 1..9999", y)
	}
	return nil
}

// DigestKeptKinds are the kinds whose digest a ledger keeps after the entry
// expires: an orientation packet's digest is the proof of what a model saw,
// kept for audit after the packet's body and facts are gone.
func DigestKeptKinds() []EntryKind { return []EntryKind{KindOrientationPacket} }

// ExpiredEntry records an entry that expired and was removed, of a kind
// whose digest is kept (DigestKeptKinds).
type ExpiredEntry struct {
	SignalID  string    `json:"signal_id"`
	Kind      EntryKind `json:"kind"`
	Qualifier string    `json:"qualifier,omitempty"`
	Digest    string    `json:"digest"`
	CreatedAt time.Time `json:"created_at"`
	ExpiredAt time.Time `json:"expired_at"`
}

// ExpiryReader is a ledger that records the entries it removed at their
// expiry (the SQLite ledger; DynamoDB's TTL removes items without a trace).
type ExpiryReader interface {
	// ExpiredEntries returns the signal's expired entries whose digests are
	// kept, none when it has none. Errors: ETRANSIENT.
	ExpiredEntries(ctx context.Context, signalID string) ([]ExpiredEntry, error)
}

// EnvRetention is the environment variable the Lambda functions read their
// ledger's retention from (Retention.String's form); the stack sets it from
// the context key ora:retention. Unset: DefaultRetention.
const EnvRetention = "ORA_RETENTION"

// ParseRetention reads a retention written as kind=duration pairs separated
// by commas ("observed-fact=720h,orientation-packet=168h"), as String writes
// it; a kind not named is kept. Errors: EINVALID naming the pair, or what
// Validate finds.
func ParseRetention(s string) (Retention, error) {
	r := Retention{}
	for _, pair := range strings.Split(s, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		kind, d, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, Invalid("retention", "%q is not kind=duration", pair)
		}
		k := EntryKind(strings.TrimSpace(kind))
		if k.Rank() < 0 {
			return nil, Invalid("retention", "%q is not an entry kind", k)
		}
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil {
			return nil, Invalid("retention", "%s: %q is not a duration", k, d)
		}
		if _, dup := r[k]; dup {
			return nil, Invalid("retention", "%s is named twice", k)
		}
		r[k] = dur
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// Validate checks that every retention is at least a minute (a wave's
// records must outlive the wave), and that packets expire no later than the
// facts they are replayed from. Errors: EINVALID naming the kind.
func (r Retention) Validate() error {
	for k, d := range r {
		if d < time.Minute {
			return Invalid("retention", "%s: %v is less than a minute: a wave's records must outlive the wave", k, d)
		}
	}
	if f, ok := r[KindObservedFact]; ok {
		if p, ok := r[KindOrientationPacket]; !ok || p > f {
			return Invalid("retention", "%s must expire no later than %s (%v): a packet is replayed from its facts", KindOrientationPacket, KindObservedFact, f)
		}
	}
	return nil
}

// String writes r as ParseRetention reads it, kinds in ledger order.
func (r Retention) String() string {
	var pairs []string
	for _, k := range EntryKinds {
		if d, ok := r[k]; ok {
			pairs = append(pairs, string(k)+"="+d.String())
		}
	}
	return strings.Join(pairs, ",")
}
