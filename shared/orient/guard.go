package orient

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/ora-runtime/ora/shared/ora"
)

// Admin is the operator's configuration the guard enforces: what no
// proposal may change (seed 002 §10.4).
type Admin struct {
	// MinBands are the admin minimum floors per band; no profile version a
	// proposal creates may have a band floor below them.
	MinBands map[ora.Band]int
	// MaxTokenBudget is the largest total budget a proposal may ask for.
	MaxTokenBudget int
	// CriticalSources are the source families that must stay attended: the
	// enabled rules of each must keep a summed priority_weight of at least
	// the given threshold.
	CriticalSources map[string]float64
	// MaxHorizonWaves is the longest horizon a proposal may ask for.
	MaxHorizonWaves int
	// MainNamespace is the namespace whose proposals may change anything the
	// other rules allow; other namespaces may only re-weight, enable or
	// disable the base version's rules (seed 002 §11.2).
	MainNamespace string
}

// DefaultAdmin returns the guard's defaults: the floors of identity,
// objectives and capabilities (the security-relevant context) at seed 002's
// recommended minimums, situational at 20,000, reserve at 3,000 and
// exploration at 0; the budget of the default profile (budget); the ledger
// family critical at a summed weight of 1; horizons of at most 100 waves;
// "main" the main namespace.
func DefaultAdmin(budget int) Admin {
	return Admin{
		MinBands: map[ora.Band]int{
			ora.BandIdentity: 12000, ora.BandObjectives: 15000, ora.BandCapabilities: 10000,
			ora.BandSituational: 20000, ora.BandExploration: 0, ora.BandReserve: 3000,
		},
		MaxTokenBudget:  budget,
		CriticalSources: map[string]float64{FamilyLedger: 1},
		MaxHorizonWaves: 100,
		MainNamespace:   "main",
	}
}

// Rejection codes: why the guard refused a proposal. The first five are the
// rules of seed 002 §10.4, in order.
const (
	RejectBandFloor         = "band_floor_below_minimum"
	RejectBudget            = "budget_exceeded"
	RejectCriticalSource    = "critical_source_suppressed"
	RejectCapabilityWidened = "capability_widened"
	RejectHorizon           = "horizon_too_long"
	RejectNamespace         = "outside_namespace_envelope"
	RejectMalformed         = "malformed"
	RejectStaleBase         = "stale_base"
	// RejectExpired is the code of a proposal nobody decided within the
	// configured time to live (Options.ProposalTTL).
	RejectExpired = "expired"
	RejectHuman   = "rejected_by_approver"
)

// Rejection is the guard's refusal: a code and the reason.
type Rejection struct {
	Code   string
	Reason string
}

func reject(code, format string, args ...any) *Rejection {
	return &Rejection{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// Candidate returns the profile version a proposal asks for: the base with
// the change applied, one version later, temporary for the proposal's
// effective waves.
func Candidate(base ora.Profile, p ora.ProfileProposal) ora.Profile {
	c := base
	c.Bands = slices.Clone(base.Bands)
	c.Rules = slices.Clone(base.Rules)
	if p.Change.TokenBudget != nil {
		c.TokenBudget = *p.Change.TokenBudget
	}
	if p.Change.Bands != nil {
		c.Bands = slices.Clone(p.Change.Bands)
	}
	if p.Change.Rules != nil {
		c.Rules = slices.Clone(p.Change.Rules)
	}
	if p.Change.Limits != nil {
		c.Limits = *p.Change.Limits
	}
	if p.Change.MaxSourceShare != nil {
		c.MaxSourceShare = *p.Change.MaxSourceShare
	}
	c.Version = base.Version + 1
	c.HorizonWaves, c.HorizonPolicy, c.BaseVersion = p.EffectiveWaves, p.HorizonPolicy, base.Version
	c.ProposalID, c.Status, c.UpdatedBy = p.ID, ora.ProfileActive, p.RequestedBy
	return c
}

// Guard checks a proposal against its base version and the admin
// configuration and returns the candidate version, or the first rule it
// breaks: a malformed candidate, the namespace envelope, then the five rules
// of seed 002 §10.4 in order.
func Guard(a Admin, base ora.Profile, p ora.ProfileProposal) (ora.Profile, *Rejection) {
	if err := p.Validate(); err != nil {
		return ora.Profile{}, reject(RejectMalformed, "%v", err)
	}
	c := Candidate(base, p)
	if err := c.Validate(); err != nil {
		return ora.Profile{}, reject(RejectMalformed, "%v", err)
	}
	if p.Namespace != a.MainNamespace {
		if r := envelope(base, p); r != nil {
			return ora.Profile{}, r
		}
	}
	// 1. floors.
	for _, b := range c.Bands {
		if m := a.MinBands[b.Band]; b.MinTokens < m {
			return ora.Profile{}, reject(RejectBandFloor, "band %s floor %d is below the admin minimum %d", b.Band, b.MinTokens, m)
		}
	}
	// 2. budget.
	if c.TokenBudget > a.MaxTokenBudget {
		return ora.Profile{}, reject(RejectBudget, "total_token_budget %d exceeds the admin maximum %d", c.TokenBudget, a.MaxTokenBudget)
	}
	// 3. critical sources.
	for _, fam := range sortedKeys(a.CriticalSources) {
		w := 0.0
		for _, r := range c.Rules {
			if r.Enabled && r.SourceType == fam {
				w += r.PriorityWeight
			}
		}
		if w < a.CriticalSources[fam] {
			return ora.Profile{}, reject(RejectCriticalSource, "source family %s keeps a summed priority weight of %v, below the safety threshold %v", fam, w, a.CriticalSources[fam])
		}
	}
	// 4. capability bounds.
	if r := widened(base.Limits, c.Limits); r != nil {
		return ora.Profile{}, r
	}
	// 5. horizon.
	if p.EffectiveWaves > a.MaxHorizonWaves {
		return ora.Profile{}, reject(RejectHorizon, "effective_waves %d exceeds the maximum %d", p.EffectiveWaves, a.MaxHorizonWaves)
	}
	return c, nil
}

// envelope allows a non-main namespace only to re-weight, enable or disable
// the base version's rules.
func envelope(base ora.Profile, p ora.ProfileProposal) *Rejection {
	ch := p.Change
	if ch.TokenBudget != nil || ch.Bands != nil || ch.Limits != nil || ch.MaxSourceShare != nil {
		return reject(RejectNamespace, "namespace %s may only change rule weights and enablement", p.Namespace)
	}
	if len(ch.Rules) != len(base.Rules) {
		return reject(RejectNamespace, "namespace %s may not add or remove rules", p.Namespace)
	}
	for i, r := range ch.Rules {
		b := base.Rules[i]
		if r.ID != b.ID || r.SourceType != b.SourceType || r.Band != b.Band || r.MaxJobs != b.MaxJobs ||
			r.RecencyHalfLifeSeconds != b.RecencyHalfLifeSeconds || !jsonEqual(r.Predicate, b.Predicate) {
			return reject(RejectNamespace, "namespace %s may only change the weights and enablement of rule %s", p.Namespace, b.ID)
		}
	}
	return nil
}

// widened reports the first capability bound c relaxes relative to b.
func widened(b, c ora.Limits) *Rejection {
	for _, x := range []struct {
		name       string
		base, cand int
	}{
		{"max_jobs", b.MaxJobs, c.MaxJobs},
		{"max_concurrency", b.MaxConcurrency, c.MaxConcurrency},
		{"max_facts", b.MaxFacts, c.MaxFacts},
		{"job_timeout_ms", b.JobTimeoutMS, c.JobTimeoutMS},
		{"tolerated_failure_percent", b.ToleratedFailurePercent, c.ToleratedFailurePercent},
	} {
		if x.cand > x.base {
			return reject(RejectCapabilityWidened, "limits.%s %d is above the base's %d", x.name, x.cand, x.base)
		}
	}
	for fam, q := range b.SourceQuotas {
		cq, ok := c.SourceQuotas[fam]
		if !ok || cq > q {
			return reject(RejectCapabilityWidened, "limits.source_quotas.%s is lifted above the base's %d", fam, q)
		}
	}
	for _, u := range c.HTTPAllow {
		if !allowed(u, b.HTTPAllow) {
			return reject(RejectCapabilityWidened, "limits.http_allow adds %q, outside the base's allow list", u)
		}
	}
	return nil
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if decodeStrict(a, &x) != nil || decodeStrict(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
