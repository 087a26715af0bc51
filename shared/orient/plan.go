package orient

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// JobKind names what an observation job reads; for the ledger family it is
// the query, for others the family's one operation ("object", "get").
type JobKind string

// The four ledger queries: the reasoner context of seed 000.
const (
	// JobOpenCommitments reads the open commitments (objectives band).
	JobOpenCommitments JobKind = "open-commitments"
	// JobRecentActions reads recent execution-evidence (situational band).
	JobRecentActions JobKind = "recent-actions"
	// JobWorkspaceState reads the other signals received lately (exploration band).
	JobWorkspaceState JobKind = "workspace-state"
	// JobActorHistory reads recent final verdicts (capabilities band).
	JobActorHistory JobKind = "actor-history"
)

// JobKinds lists the ledger queries in the order the default profile's rules
// emit them.
var JobKinds = []JobKind{JobOpenCommitments, JobRecentActions, JobWorkspaceState, JobActorHistory}

// Job is one observation job. Its ID is unique within a wave and the same on
// every run of Plan for a signal; it prefixes the qualifiers of the facts the
// job writes. Family, Rule, Band and Weights come from the attention rule
// that generated it; an empty Family is the ledger.
type Job struct {
	ID        string   `json:"id"`
	Family    string   `json:"family,omitempty"`
	Rule      string   `json:"rule_id,omitempty"`
	Kind      JobKind  `json:"kind"`
	Target    string   `json:"target,omitempty"`
	Band      ora.Band `json:"band,omitempty"`
	Weights   *Weights `json:"weights,omitempty"`
	TimeoutMS int      `json:"timeout_ms,omitempty"`
	Params    Params   `json:"params"`
}

// Params bound what a job reads. AsOf is when the signal was normalized (ora's
// own clock, the one ledger entries are stamped with), so that a re-run reads
// the same window.
type Params struct {
	AsOf          time.Time `json:"as_of"`
	WindowSeconds int       `json:"window_seconds,omitempty"`
	Limit         int       `json:"limit"`
	InlineBytes   int       `json:"inline_bytes,omitempty"`
	MaxBytes      int       `json:"max_bytes,omitempty"`
}

// Window returns the job's look-back as a duration.
func (p Params) Window() time.Duration { return time.Duration(p.WindowSeconds) * time.Second }

var jobID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,79}$`)

// family returns the job's source family.
func (j Job) family() string {
	if j.Family == "" {
		return FamilyLedger
	}
	return j.Family
}

// Validate checks a job's common fields (the family checks the rest); the
// error names the first bad field.
func (j Job) Validate() error {
	if !jobID.MatchString(j.ID) {
		return ora.Invalid("job.id", "%q must be 1-80 of a-z, 0-9, '.', '_', '-'", j.ID)
	}
	if j.Kind == "" {
		return ora.Invalid("job.kind", "required")
	}
	if j.family() == FamilyLedger {
		if err := checkLedgerJob(j); err != nil {
			return err
		}
	}
	if j.Params.AsOf.IsZero() {
		return ora.Invalid("job.params.as_of", "required")
	}
	if j.Params.Limit < 1 || j.Params.Limit > MaxJobLimit {
		return ora.Invalid("job.params.limit", "%d is outside 1..%d", j.Params.Limit, MaxJobLimit)
	}
	if j.Params.WindowSeconds < 0 {
		return ora.Invalid("job.params.window_seconds", "%d is negative", j.Params.WindowSeconds)
	}
	if j.TimeoutMS < 0 {
		return ora.Invalid("job.timeout_ms", "%d is negative", j.TimeoutMS)
	}
	return nil
}

// Drop reasons: why Plan, Fetch or Compile left a job or a fact out
// (orientation_fact_drop_total{reason}).
const (
	DropNotAllowed  = "not_allowed"  // an http URL outside the allow lists
	DropRuleQuota   = "rule_quota"   // over its rule's max_jobs
	DropSourceQuota = "source_quota" // over its family's quota
	DropGlobalCap   = "global_cap"   // over the wave's max_jobs
	DropFactCap     = "fact_cap"     // over the wave's max_facts
	DropTimeout     = "timeout"      // the job ran out of time
	DropJobError    = "job_error"    // the job failed
	DropDuplicate   = "duplicate"    // same fact id or dedupe key as a better one
	DropNotNovel    = "not_novel"    // same content as an admitted fact
	DropBudget      = "budget"       // no room left in its band or the budget
	DropNoBand      = "no_band"      // its band is not in the profile
)

// Drops counts what was left out, by reason.
type Drops map[string]int

func (w Wave) drop(reason string, n int) {
	if w.Drops != nil && n > 0 {
		w.Drops[reason] += n
	}
}

// WavePlan is what Plan decides for a wave: the pinned profile version, the
// jobs and what was dropped.
type WavePlan struct {
	Pin   ora.OrientationPin `json:"pin"`
	Jobs  []Job              `json:"jobs"`
	Drops Drops              `json:"drops,omitempty"`
	// Limits are the pinned profile version's capability bounds.
	Limits ora.Limits `json:"limits"`
}

// PlanJobs expands the profile's enabled rules, in order, into the wave's
// jobs through their source families, then applies the caps of seed 002
// §10.1: each rule's max_jobs, each family's quota, the wave's max_jobs;
// every job left out is counted in drops. Each job's fact limit is lowered so
// that the limits add up to at most the wave's max_facts. A rule whose family
// is not configured is an EINVALID error naming it.
func PlanJobs(ctx context.Context, sig ora.NormalizedSignal, p ora.Profile, sources map[string]Source, drops Drops) ([]Job, error) {
	asOf := sig.NormalizedAt.UTC()
	if sig.NormalizedAt.IsZero() {
		asOf = sig.Timestamp.UTC()
	}
	w := Wave{SignalID: sig.ID, AsOf: asOf, Limits: p.Limits, Drops: drops}
	perFamily := map[string]int{}
	var jobs []Job
	for _, r := range p.Rules {
		if !r.Enabled {
			continue
		}
		src := sources[r.SourceType]
		if src == nil {
			return nil, ora.Invalid("rules."+r.ID+".source_type", "%q is not a configured source family", r.SourceType)
		}
		js, err := src.Jobs(ctx, w, r)
		if err != nil {
			return nil, fmt.Errorf("orient: plan rule %s: %w", r.ID, err)
		}
		if r.MaxJobs > 0 && len(js) > r.MaxJobs {
			w.drop(DropRuleQuota, len(js)-r.MaxJobs)
			js = js[:r.MaxJobs]
		}
		for i, j := range js {
			if q, ok := p.Limits.SourceQuotas[r.SourceType]; ok && perFamily[r.SourceType] >= q {
				w.drop(DropSourceQuota, 1)
				continue
			}
			if len(jobs) >= p.Limits.MaxJobs {
				w.drop(DropGlobalCap, 1)
				continue
			}
			perFamily[r.SourceType]++
			j.ID = r.ID
			if len(js) > 1 || r.SourceType != FamilyLedger {
				j.ID = fmt.Sprintf("%s.%05d", r.ID, i)
			}
			if r.SourceType != FamilyLedger {
				j.Family = r.SourceType
			}
			j.Rule, j.Band, j.TimeoutMS = r.ID, r.Band, p.Limits.JobTimeoutMS
			j.Weights = &Weights{Priority: r.PriorityWeight, Novelty: r.NoveltyWeight, Risk: r.RiskWeight, HalfLifeSeconds: r.RecencyHalfLifeSeconds, RiskWhen: r.RiskWhen}
			jobs = append(jobs, j)
		}
	}
	if len(jobs) > 0 {
		share := max(1, p.Limits.MaxFacts/len(jobs))
		for i := range jobs {
			jobs[i].Params.Limit = min(jobs[i].Params.Limit, share, MaxJobLimit)
		}
	}
	return jobs, nil
}

// Plan returns the default profile's jobs for a signal (the four ledger
// queries), with the windows and limit of the options. It is a pure function
// of the signal and the options.
func Plan(sig ora.NormalizedSignal, opts ...func(*Options)) []Job {
	jobs, err := PlanJobs(context.Background(), sig, DefaultProfile(opts...), map[string]Source{FamilyLedger: Ledger{}}, nil)
	if err != nil {
		panic(fmt.Sprintf("orient: the default profile does not plan: %v", err)) // a bug: DefaultProfile is tested
	}
	return jobs
}

// Planner plans a wave's observation jobs from its stored signal and the
// profile version it pins.
type Planner struct {
	store    Store
	profiles *Profiles
	o        Options
}

// NewPlanner returns a planner reading signals and profiles from store.
func NewPlanner(store Store, opts ...func(*Options)) *Planner {
	return &Planner{store: store, profiles: NewProfiles(store, opts...), o: options(opts)}
}

// Plan loads the signal and returns its jobs. Errors: EINVALID (no signal
// id), ENOTFOUND (no such signal), ETRANSIENT.
func (p *Planner) Plan(ctx context.Context, signalID string) ([]Job, error) {
	wp, err := p.PlanWave(ctx, signalID)
	if err != nil {
		return nil, err
	}
	return wp.Jobs, nil
}

// PlanWave pins the wave's profile version (once: a re-run finds the pin)
// and plans its jobs under it. Errors: EINVALID, ENOTFOUND, ECONFLICT (the
// profile kept moving), ETRANSIENT.
func (p *Planner) PlanWave(ctx context.Context, signalID string) (WavePlan, error) {
	start := time.Now()
	sig, entries, err := loadSignal(ctx, p.store, signalID, planKinds...)
	if err != nil {
		return WavePlan{}, fmt.Errorf("orient: plan %s: %w", signalID, err)
	}
	pin, prof, err := p.profiles.pinFrom(ctx, signalID, p.o.ProfileID, entries)
	if err != nil {
		return WavePlan{}, fmt.Errorf("orient: plan %s: %w", signalID, err)
	}
	drops := Drops{}
	jobs, err := PlanJobs(ctx, sig, prof, p.o.sources(p.store), drops)
	if err != nil {
		return WavePlan{}, fmt.Errorf("orient: plan %s: %w", signalID, err)
	}
	for reason, n := range drops {
		p.o.Metrics.Add(MetricFactDrops, float64(n), "reason", reason)
	}
	p.o.log(ctx, "plan", logFields{WaveID: signalID, ProfileID: prof.ID, ProfileVersion: prof.Version, Result: fmt.Sprintf("%d jobs", len(jobs)), Start: start})
	return WavePlan{Pin: pin, Jobs: jobs, Drops: drops, Limits: prof.Limits}, nil
}
