package orient

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// ProfileKey is the pseudo signal id under which a profile's versions and
// horizon claims are stored in the ledger.
func ProfileKey(profileID string) string { return "orientation-profile:" + profileID }

// ProposalKey is the pseudo signal id under which a proposal, its one
// decision and its audit records are stored in the ledger.
func ProposalKey(proposalID string) string { return "orientation-proposal:" + proposalID }

func versionQualifier(v int) string { return fmt.Sprintf("v%06d", v) }

// DefaultProfile returns version 1 of the default profile: the options'
// budget and bands (seed 002 §9), the hard caps of §10.1, and four ledger
// rules that are the reasoner context of seed 000 (open commitments into
// objectives, recent actions into situational, workspace state into
// exploration, actor history into capabilities), with the options' windows
// and limit.
func DefaultProfile(opts ...func(*Options)) ora.Profile {
	o := options(opts)
	rule := func(k JobKind, band ora.Band, weight float64, window time.Duration) ora.AttentionRule {
		pred, _ := json.Marshal(LedgerPredicate{Query: k, WindowSeconds: int(window / time.Second), Limit: min(o.Limit, MaxJobLimit)})
		r := ora.AttentionRule{ID: string(k), SourceType: FamilyLedger, Predicate: pred, Band: band, PriorityWeight: weight, Enabled: true}
		if k != JobOpenCommitments {
			r.RecencyHalfLifeSeconds = int(RecencyHalfLife / time.Second) // an old promise is still due
		}
		return r
	}
	return ora.Profile{
		ID:          o.ProfileID,
		Version:     1,
		TokenBudget: o.TokenBudget,
		Bands:       slices.Clone(o.Bands),
		Rules: []ora.AttentionRule{
			rule(JobOpenCommitments, ora.BandObjectives, 0.9, 0),
			rule(JobRecentActions, ora.BandSituational, 0.7, o.RecentActionsWindow),
			rule(JobWorkspaceState, ora.BandExploration, 0.5, o.WorkspaceWindow),
			rule(JobActorHistory, ora.BandCapabilities, 0.6, o.ActorHistoryWindow),
		},
		Limits:         ora.DefaultLimits(),
		MaxSourceShare: 0.5,
		Status:         ora.ProfileActive,
		UpdatedBy:      "ora",
		UpdatedAt:      time.Unix(0, 0).UTC(),
	}
}

// Profiles keeps orientation profiles, their proposals and horizons in the
// ledger: every version, proposal, decision and claim is a write-once entry,
// so versions are monotonic (two writers of version n+1: one wins, the other
// gets ECONFLICT) and a proposal's decision is single.
type Profiles struct {
	store Store
	o     Options
	// versions caches profile versions read by Version: a version is a
	// write-once entry, so a version once read never changes (one read per
	// process instead of one per wave).
	versions sync.Map // profileID + "\x00" + version -> ora.Profile
}

// NewProfiles returns the profile store over store.
func NewProfiles(store Store, opts ...func(*Options)) *Profiles {
	return &Profiles{store: store, o: options(opts)}
}

// state is what the ledger holds about one profile id.
type state struct {
	versions []ora.Profile                // by version
	claims   map[int][]ora.OrientationPin // horizon claims by version
}

func (s *Profiles) load(ctx context.Context, profileID string) (state, error) {
	st := state{claims: map[int][]ora.OrientationPin{}}
	es, err := s.store.Entries(ctx, ProfileKey(profileID))
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("orient: profile %s: %w", profileID, err)
	}
	for _, e := range es {
		switch e.Kind {
		case ora.KindOrientationProfile:
			var p ora.Profile
			if err := json.Unmarshal(e.Body, &p); err != nil {
				return st, ora.Invalid("profile", "stored version %s of %s is malformed: %v", e.Qualifier, profileID, err)
			}
			st.versions = append(st.versions, p)
		case ora.KindOrientationPin:
			var c ora.OrientationPin
			if err := json.Unmarshal(e.Body, &c); err != nil {
				return st, ora.Invalid("claim", "stored claim %s of %s is malformed: %v", e.Qualifier, profileID, err)
			}
			st.claims[c.ProfileVersion] = append(st.claims[c.ProfileVersion], c)
		}
	}
	slices.SortFunc(st.versions, func(a, b ora.Profile) int { return a.Version - b.Version })
	return st, nil
}

func (st state) latest() (ora.Profile, bool) {
	if len(st.versions) == 0 {
		return ora.Profile{}, false
	}
	return st.versions[len(st.versions)-1], true
}

func (st state) version(v int) (ora.Profile, bool) {
	for _, p := range st.versions {
		if p.Version == v {
			return p, true
		}
	}
	return ora.Profile{}, false
}

// Versions returns every version of a profile, oldest first (none: empty).
// Errors: EINVALID, ETRANSIENT.
func (s *Profiles) Versions(ctx context.Context, profileID string) ([]ora.Profile, error) {
	st, err := s.load(ctx, profileID)
	return st.versions, err
}

// Current returns a profile's latest version. The default profile (the
// options' ProfileID) is written as version 1 the first time it is read.
// Errors: ENOTFOUND (another id with no versions), EINVALID, ETRANSIENT.
func (s *Profiles) Current(ctx context.Context, profileID string) (ora.Profile, error) {
	st, err := s.load(ctx, profileID)
	if err != nil {
		return ora.Profile{}, err
	}
	if p, ok := st.latest(); ok {
		return p, nil
	}
	if profileID != s.o.ProfileID {
		return ora.Profile{}, ora.Errorf(ora.ENOTFOUND, "profile %s has no versions", profileID)
	}
	p, err := s.Put(ctx, DefaultProfile(func(o *Options) { *o = s.o }))
	if ora.ErrorCode(err) == ora.ECONFLICT {
		return s.Version(ctx, profileID, 1)
	}
	return p, err
}

// Version returns one version of a profile. Errors: ENOTFOUND, EINVALID,
// ETRANSIENT.
func (s *Profiles) Version(ctx context.Context, profileID string, version int) (ora.Profile, error) {
	key := profileID + "\x00" + strconv.Itoa(version)
	if p, ok := s.versions.Load(key); ok {
		return p.(ora.Profile), nil
	}
	p, err := s.version(ctx, profileID, version)
	if err == nil {
		s.versions.Store(key, p)
	}
	return p, err
}

func (s *Profiles) version(ctx context.Context, profileID string, version int) (ora.Profile, error) {
	st, err := s.load(ctx, profileID)
	if err != nil {
		return ora.Profile{}, err
	}
	if version == 1 && len(st.versions) == 0 && profileID == s.o.ProfileID {
		return s.Current(ctx, profileID)
	}
	p, ok := st.version(version)
	if !ok {
		return ora.Profile{}, ora.Errorf(ora.ENOTFOUND, "profile %s has no version %d", profileID, version)
	}
	return p, nil
}

// Put writes p as the profile's next version: p.Version must be the latest
// version plus one (1 for a new profile). Nothing is written unless p is
// valid. Errors: EINVALID naming the field, ECONFLICT when the version is not
// next or was just written by someone else, ETRANSIENT.
func (s *Profiles) Put(ctx context.Context, p ora.Profile) (ora.Profile, error) {
	p = s.o.URLCredentials.redactProfile(p)
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = s.o.Now().UTC()
	}
	if err := p.Validate(); err != nil {
		return ora.Profile{}, fmt.Errorf("orient: put profile: %w", err)
	}
	st, err := s.load(ctx, p.ID)
	if err != nil {
		return ora.Profile{}, err
	}
	next := 1
	if l, ok := st.latest(); ok {
		next = l.Version + 1
	}
	if p.Version != next {
		return ora.Profile{}, ora.Conflict(p, "profile %s: version %d is not the next version %d", p.ID, p.Version, next)
	}
	e, err := ora.NewEntry(ProfileKey(p.ID), ora.KindOrientationProfile, versionQualifier(p.Version), p)
	if err != nil {
		return ora.Profile{}, err
	}
	if _, err := s.store.Append(ctx, e); err != nil {
		return ora.Profile{}, fmt.Errorf("orient: put profile %s v%d: %w", p.ID, p.Version, err)
	}
	return p, nil
}

// Pin fixes the profile version wave waveID runs under, once: a re-run
// returns the same pin. The version is the profile's latest, except that a
// temporary version (horizon_waves N > 0) serves exactly N waves, each
// claiming one of its N slots with a write-once entry; the wave that finds
// all N slots taken first ends the horizon (EndHorizon) and pins what follows.
// Errors: ENOTFOUND, EINVALID, ECONFLICT (the profile kept moving), ETRANSIENT.
func (s *Profiles) Pin(ctx context.Context, waveID, profileID string) (ora.OrientationPin, ora.Profile, error) {
	es, err := s.store.Entries(ctx, waveID)
	if err != nil && ora.ErrorCode(err) != ora.ENOTFOUND {
		return ora.OrientationPin{}, ora.Profile{}, err
	}
	return s.pinFrom(ctx, waveID, profileID, es)
}

// pinFrom is Pin given the wave's entries, read by the caller just before
// (the planner reads them for the signal): one read of the wave's partition
// instead of two.
func (s *Profiles) pinFrom(ctx context.Context, waveID, profileID string, es []ora.Entry) (ora.OrientationPin, ora.Profile, error) {
	if pin, err := pinOf(es); err == nil {
		p, err := s.Version(ctx, pin.ProfileID, pin.ProfileVersion)
		return pin, p, err
	} else if ora.ErrorCode(err) != ora.ENOTFOUND {
		return ora.OrientationPin{}, ora.Profile{}, err
	}
	for range 16 {
		cur, err := s.Current(ctx, profileID)
		if err != nil {
			return ora.OrientationPin{}, ora.Profile{}, err
		}
		if cur.HorizonWaves > 0 {
			ok, err := s.claim(ctx, cur, waveID)
			if err != nil {
				return ora.OrientationPin{}, ora.Profile{}, err
			}
			if !ok {
				continue // the horizon ended, or a race: look again
			}
		}
		pin := ora.OrientationPin{WaveID: waveID, ProfileID: cur.ID, ProfileVersion: cur.Version, PacketID: PacketID(waveID)}
		e, err := ora.NewEntry(waveID, ora.KindOrientationPin, "", pin)
		if err != nil {
			return ora.OrientationPin{}, ora.Profile{}, err
		}
		if _, err := s.store.Append(ctx, e); err != nil {
			if stored, ok := ora.Existing[ora.Entry](err); ok {
				var sp ora.OrientationPin
				if json.Unmarshal(stored.Body, &sp) == nil {
					p, err := s.Version(ctx, sp.ProfileID, sp.ProfileVersion)
					return sp, p, err
				}
			}
			return ora.OrientationPin{}, ora.Profile{}, fmt.Errorf("orient: pin %s: %w", waveID, err)
		}
		return pin, cur, nil
	}
	return ora.OrientationPin{}, ora.Profile{}, ora.Errorf(ora.ECONFLICT, "orient: pin %s: profile %s kept changing", waveID, profileID)
}

// PinOf returns the pin a wave recorded at Plan. Errors: ENOTFOUND, EINVALID,
// ETRANSIENT.
func (s *Profiles) PinOf(ctx context.Context, waveID string) (ora.OrientationPin, error) {
	es, err := s.store.Entries(ctx, waveID)
	if err != nil {
		return ora.OrientationPin{}, err
	}
	return pinOf(es)
}

func pinOf(es []ora.Entry) (ora.OrientationPin, error) {
	for _, e := range es {
		if e.Kind == ora.KindOrientationPin {
			var p ora.OrientationPin
			if err := json.Unmarshal(e.Body, &p); err != nil {
				return ora.OrientationPin{}, ora.Invalid("pin", "stored pin of %s is malformed: %v", e.SignalID, err)
			}
			return p, nil
		}
	}
	return ora.OrientationPin{}, ora.Errorf(ora.ENOTFOUND, "no orientation pin")
}

// claim takes one of a temporary version's slots for the wave (true), or
// ends the horizon when they are all taken (false: look again).
func (s *Profiles) claim(ctx context.Context, cur ora.Profile, waveID string) (bool, error) {
	st, err := s.load(ctx, cur.ID)
	if err != nil {
		return false, err
	}
	claims := st.claims[cur.Version]
	for _, c := range claims {
		if c.WaveID == waveID {
			return true, nil // claimed by an earlier run that crashed before the pin
		}
	}
	if len(claims) >= cur.HorizonWaves {
		_, err := s.EndHorizon(ctx, cur, claims)
		if ora.ErrorCode(err) == ora.ECONFLICT {
			return false, nil // someone else ended it
		}
		return false, err
	}
	c := ora.OrientationPin{WaveID: waveID, ProfileID: cur.ID, ProfileVersion: cur.Version}
	e, err := ora.NewEntry(ProfileKey(cur.ID), ora.KindOrientationPin, fmt.Sprintf("%s/slot/%06d", versionQualifier(cur.Version), len(claims)), c)
	if err != nil {
		return false, err
	}
	if _, err := s.store.Append(ctx, e); err != nil {
		if stored, ok := ora.Existing[ora.Entry](err); ok {
			var sc ora.OrientationPin
			return json.Unmarshal(stored.Body, &sc) == nil && sc.WaveID == waveID, nil
		}
		return false, fmt.Errorf("orient: claim %s v%d: %w", cur.ID, cur.Version, err)
	}
	return true, nil
}

// Horizon outcomes.
const (
	OutcomeRevert  = "revert"
	OutcomePromote = "promote"
)

// PromoteMinQuality is the mean decision_quality_score a horizon's waves
// need for a promote policy to keep the temporary version.
const PromoteMinQuality = 0.7

// HorizonOutcome is the policy table applied when a temporary version's N
// waves are done (README, "Orientation"):
//
//	policy   feedback of the horizon's waves                  outcome
//	revert   anything                                         revert
//	promote  no wave has a decision_quality_score             revert
//	promote  some wave has decision_regret                    revert
//	promote  mean decision_quality_score < PromoteMinQuality  revert
//	promote  mean >= PromoteMinQuality and no regret          promote
func HorizonOutcome(policy string, feedback []ora.Feedback) string {
	if policy != ora.HorizonPromote {
		return OutcomeRevert
	}
	sum, n := 0.0, 0
	for _, f := range feedback {
		if f.DecisionRegret {
			return OutcomeRevert
		}
		if f.DecisionQualityScore != nil {
			sum += *f.DecisionQualityScore
			n++
		}
	}
	if n == 0 || sum/float64(n) < PromoteMinQuality {
		return OutcomeRevert
	}
	return OutcomePromote
}

// EndHorizon writes the version that follows a temporary one whose waves
// are done: the base version's content again (revert) or the temporary
// content made permanent (promote), by HorizonOutcome over the waves'
// feedback. Errors: ECONFLICT (already ended), ENOTFOUND, ETRANSIENT.
func (s *Profiles) EndHorizon(ctx context.Context, cur ora.Profile, claims []ora.OrientationPin) (ora.Profile, error) {
	var fb []ora.Feedback
	for _, c := range claims {
		f, err := s.Feedback(ctx, c.WaveID)
		if err != nil && ora.ErrorCode(err) != ora.ENOTFOUND {
			return ora.Profile{}, err
		}
		fb = append(fb, f...)
	}
	next := cur
	outcome := HorizonOutcome(cur.HorizonPolicy, fb)
	if outcome == OutcomeRevert {
		base, err := s.Version(ctx, cur.ID, cur.BaseVersion)
		if err != nil {
			return ora.Profile{}, err
		}
		next = base
	}
	next.Version, next.HorizonWaves, next.HorizonPolicy, next.BaseVersion = cur.Version+1, 0, "", 0
	next.ProposalID, next.Status = cur.ProposalID, ora.ProfileActive
	next.UpdatedBy, next.UpdatedAt = "orientation.horizon."+outcome, s.o.Now().UTC()
	p, err := s.Put(ctx, next)
	if err != nil {
		return ora.Profile{}, err
	}
	if outcome == OutcomeRevert {
		s.o.Metrics.Add(MetricRollbacks, 1)
	}
	s.o.log(ctx, "horizon."+outcome, logFields{ProfileID: p.ID, ProfileVersion: p.Version, Actor: "orientation.horizon", Result: outcome, Start: time.Now()})
	return p, nil
}

// Feedback returns a wave's orientation feedback (seed 002 §8.7): the
// records written for it (RecordFeedback) and what its ledger entries say:
// validator verdicts (a quality score: the share of PASS), a human verdict
// (rejected: decision_regret) and an operator decision. Errors: ENOTFOUND,
// ETRANSIENT.
func (s *Profiles) Feedback(ctx context.Context, waveID string) ([]ora.Feedback, error) {
	es, err := s.store.Entries(ctx, waveID)
	if err != nil {
		return nil, err
	}
	return FeedbackOf(es), nil
}

// FeedbackOf derives a wave's feedback from its entries (see Feedback).
func FeedbackOf(es []ora.Entry) []ora.Feedback {
	var out []ora.Feedback
	pin, _ := pinOf(es)
	base := ora.Feedback{WaveID: pin.WaveID, PacketID: pin.PacketID, ProfileVersion: pin.ProfileVersion}
	pass, total := 0, 0
	var last time.Time
	for _, e := range es {
		last = e.CreatedAt
		switch e.Kind {
		case ora.KindOrientationFeedback:
			var f ora.Feedback
			if json.Unmarshal(e.Body, &f) == nil {
				out = append(out, f)
			}
		case ora.KindValidatorResult, ora.KindWitnessResult:
			var r ora.ValidatorResult
			if json.Unmarshal(e.Body, &r) == nil {
				total++
				if r.Verdict == ora.Pass {
					pass++
				}
			}
		case ora.KindOperatorDecision:
			f := base
			f.FeedbackID, f.Source, f.OperatorFeedback, f.CreatedAt = "operator/"+e.Qualifier, "operator", string(e.Body), e.CreatedAt
			f.MissedSignalFlags = []string{"operator_incident"}
			out = append(out, f)
		}
	}
	if total > 0 {
		f := base
		q := float64(pass) / float64(total)
		f.FeedbackID, f.Source, f.DecisionQualityScore, f.CreatedAt = "validators", "validator", &q, last
		out = append(out, f)
	}
	return out
}

// RecordFeedback writes one feedback record for a wave (once per source
// and feedback_id: a repeat is harmless and counts nothing). The wave must
// exist; its packet and profile version are filled in from its pin when the
// record names none. A decision_regret counts in decision_regret_total.
// Errors: EINVALID naming the field, ENOTFOUND (no such wave), ETRANSIENT.
func (s *Profiles) RecordFeedback(ctx context.Context, f ora.Feedback) error {
	switch {
	case f.WaveID == "":
		return ora.Invalid("wave_id", "required")
	case f.FeedbackID == "":
		return ora.Invalid("feedback_id", "required")
	case f.Source == "":
		return ora.Invalid("source", "required")
	case strings.Contains(f.FeedbackID, "/") || strings.Contains(f.Source, "/"):
		return ora.Invalid("feedback_id", "%q (source %q) may not contain /", f.FeedbackID, f.Source)
	}
	if f.DecisionQualityScore != nil && (*f.DecisionQualityScore < 0 || *f.DecisionQualityScore > 1) {
		return ora.Invalid("decision_quality_score", "%v is outside 0..1", *f.DecisionQualityScore)
	}
	es, err := ora.EntriesOfKinds(ctx, s.store, f.WaveID, ora.KindSignalReceived, ora.KindReasonerDecision, ora.KindOrientationPin)
	if ora.ErrorCode(err) == ora.ENOTFOUND || (err == nil && len(es) == 0) {
		return ora.Errorf(ora.ENOTFOUND, "wave %s", f.WaveID)
	}
	if err != nil {
		return fmt.Errorf("orient: feedback for %s: %w", f.WaveID, err)
	}
	if pin, err := pinOf(es); err == nil && f.PacketID == "" {
		f.PacketID, f.ProfileVersion = pin.PacketID, pin.ProfileVersion
	}
	if f.CreatedAt.IsZero() {
		f.CreatedAt = s.o.Now().UTC()
	}
	e, err := ora.NewEntry(f.WaveID, ora.KindOrientationFeedback, f.Source+"/"+f.FeedbackID, f)
	if err != nil {
		return err
	}
	if _, err := s.store.Append(ctx, e); err != nil {
		if _, ok := ora.Existing[ora.Entry](err); ok {
			return nil
		}
		return fmt.Errorf("orient: feedback %s: %w", f.FeedbackID, err)
	}
	if f.DecisionRegret {
		s.o.Metrics.Add(MetricDecisionRegret, 1)
	}
	return nil
}

// RecordRegret records that a wave's decision was regretted: a validator
// failed it (source "validator") or a human rejected it (source "human").
// Once per wave and source; reason and flags say why. Errors: ENOTFOUND,
// ETRANSIENT.
func (s *Profiles) RecordRegret(ctx context.Context, waveID, source, reason string, flags []string) error {
	return s.RecordFeedback(ctx, ora.Feedback{WaveID: waveID, FeedbackID: "regret", Source: source, DecisionRegret: true,
		OperatorFeedback: reason, MissedSignalFlags: flags})
}

// auditEntry is the ledger entry of an orientation audit action.
func (s *Profiles) auditEntry(subject, qualifier string, r ora.AuditRecord) (ora.Entry, error) {
	if r.At.IsZero() {
		r.At = s.o.Now().UTC()
	}
	return ora.NewEntry(subject, ora.KindOrientationAudit, qualifier, r)
}

// audit records an orientation audit action (seed 002 §14.3) as a ledger
// entry under subject, once per qualifier.
func (s *Profiles) audit(ctx context.Context, subject, qualifier string, r ora.AuditRecord) error {
	e, err := s.auditEntry(subject, qualifier, r)
	if err != nil {
		return err
	}
	if _, err := s.store.Append(ctx, e); err != nil {
		if _, ok := ora.Existing[ora.Entry](err); ok {
			return nil
		}
		return fmt.Errorf("orient: audit %s: %w", r.Action, err)
	}
	return nil
}
