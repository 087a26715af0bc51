package orient

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// JobKind names what an observation job reads.
type JobKind string

// The four job kinds: the reasoner context of seed 000.
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

// JobKinds lists the kinds in the order Plan emits them.
var JobKinds = []JobKind{JobOpenCommitments, JobRecentActions, JobWorkspaceState, JobActorHistory}

// Job is one observation job. Its ID is unique within a wave and the same on
// every run of Plan for a signal; it prefixes the qualifiers of the facts the
// job writes.
type Job struct {
	ID     string  `json:"id"`
	Kind   JobKind `json:"kind"`
	Params Params  `json:"params"`
}

// Params bound what a job reads. AsOf is when the signal was normalized (ora's
// own clock, the one ledger entries are stamped with), so that a re-run reads
// the same window.
type Params struct {
	AsOf          time.Time `json:"as_of"`
	WindowSeconds int       `json:"window_seconds,omitempty"`
	Limit         int       `json:"limit"`
}

// Window returns the job's look-back as a duration.
func (p Params) Window() time.Duration { return time.Duration(p.WindowSeconds) * time.Second }

var jobID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Validate checks a job; the error names the first bad field.
func (j Job) Validate() error {
	if !jobID.MatchString(j.ID) {
		return ora.Invalid("job.id", "%q must be 1-64 of a-z, 0-9, '.', '_', '-'", j.ID)
	}
	known := false
	for _, k := range JobKinds {
		known = known || k == j.Kind
	}
	if !known {
		return ora.Invalid("job.kind", "%q is not one of open-commitments, recent-actions, workspace-state, actor-history", j.Kind)
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
	if j.Kind != JobOpenCommitments && j.Params.WindowSeconds == 0 {
		return ora.Invalid("job.params.window_seconds", "required for %s", j.Kind)
	}
	return nil
}

// Plan returns the observation jobs for a signal: one per JobKind, with the
// kind as its id, AsOf the signal's normalized_at and the windows and limit of
// the options. It is a pure function of the signal and the options.
func Plan(sig ora.NormalizedSignal, opts ...func(*Options)) []Job {
	o := options(opts)
	asOf := sig.NormalizedAt.UTC()
	if sig.NormalizedAt.IsZero() {
		asOf = sig.Timestamp.UTC()
	}
	limit := min(o.Limit, MaxJobLimit)
	window := map[JobKind]time.Duration{
		JobRecentActions:  o.RecentActionsWindow,
		JobWorkspaceState: o.WorkspaceWindow,
		JobActorHistory:   o.ActorHistoryWindow,
	}
	jobs := make([]Job, 0, len(JobKinds))
	for _, k := range JobKinds {
		jobs = append(jobs, Job{
			ID:     string(k),
			Kind:   k,
			Params: Params{AsOf: asOf, WindowSeconds: int(window[k] / time.Second), Limit: limit},
		})
	}
	return jobs
}

// Planner plans a wave's observation jobs from its stored signal.
type Planner struct {
	store Store
	opts  []func(*Options)
}

// NewPlanner returns a planner reading signals from store.
func NewPlanner(store Store, opts ...func(*Options)) *Planner {
	return &Planner{store: store, opts: opts}
}

// Plan loads the signal and returns its jobs. Errors: EINVALID (no signal
// id), ENOTFOUND (no such signal), ETRANSIENT.
func (p *Planner) Plan(ctx context.Context, signalID string) ([]Job, error) {
	sig, _, err := loadSignal(ctx, p.store, signalID)
	if err != nil {
		return nil, fmt.Errorf("orient: plan %s: %w", signalID, err)
	}
	return Plan(sig, p.opts...), nil
}
