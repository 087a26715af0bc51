package motor

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Event types beside promote and rollback: a canary starts, and a canary
// that ends by policy is either promoted (a "promote" event carrying the
// comparison) or rolled back ("canary_rollback", which leaves the current
// version as it was).
const (
	EventCanary         = "canary"
	EventCanaryRollback = "canary_rollback"
)

// Default canary policy thresholds.
const (
	DefaultPassTolerance      = 0.05 // five points of pass rate
	DefaultMaxCostIncrease    = 0.20 // 20% more cost per wave
	DefaultMaxLatencyIncrease = 0.20 // 20% more latency per wave
)

// CanaryPolicy decides a canary at the end of its window: it is promoted
// when its pass rate is at least the active version's minus PassTolerance,
// and its mean cost and latency per wave are at most the active version's
// plus MaxCostIncrease and MaxLatencyIncrease (fractions: 0.2 is 20%);
// otherwise it is rolled back.
type CanaryPolicy struct {
	PassTolerance      float64 `json:"pass_tolerance"`
	MaxCostIncrease    float64 `json:"max_cost_increase"`
	MaxLatencyIncrease float64 `json:"max_latency_increase"`
}

// CanaryRequest starts a canary: the candidate serves Share of the waves
// (chosen by a hash of the wave id, so a wave always goes the same way) and
// every wave of the named Sources, until it has served Waves waves or
// Duration has passed (whichever comes first). Absent policy thresholds take
// the defaults.
type CanaryRequest struct {
	Share              float64  `json:"share,omitempty"`
	Sources            []string `json:"sources,omitempty"`
	Waves              int      `json:"waves,omitempty"`
	Duration           string   `json:"duration,omitempty"` // a Go duration: 30m, 24h
	PassTolerance      *float64 `json:"pass_tolerance,omitempty"`
	MaxCostIncrease    *float64 `json:"max_cost_increase,omitempty"`
	MaxLatencyIncrease *float64 `json:"max_latency_increase,omitempty"`
	Reason             string   `json:"reason,omitempty"`
}

// Canary is a started canary, as its event records it.
type Canary struct {
	Version string       `json:"version"`
	Active  string       `json:"active"` // the version current when it started
	Share   float64      `json:"share,omitempty"`
	Sources []string     `json:"sources,omitempty"`
	Waves   int          `json:"waves,omitempty"`
	Start   time.Time    `json:"start"`
	Until   time.Time    `json:"until,omitzero"`
	Policy  CanaryPolicy `json:"policy"`
}

// Routes reports whether the canary serves the wave of sig: its source is
// named, or the hash of its id falls within the share.
func (c Canary) Routes(sig ora.NormalizedSignal) bool {
	if slices.Contains(c.Sources, sig.Source.Name) {
		return true
	}
	return c.Share > 0 && shareOf(sig.ID) < c.Share
}

// shareOf maps a wave id to [0, 1), uniformly and deterministically.
func shareOf(waveID string) float64 {
	h := sha256.Sum256([]byte(waveID))
	return float64(binary.BigEndian.Uint64(h[:8])>>11) / (1 << 53)
}

// Arm is one side of a canary's comparison: the waves one version decided
// in the window.
type Arm struct {
	Version   string  `json:"version"`
	Waves     int     `json:"waves"`
	Passed    int     `json:"passed"`
	PassRate  float64 `json:"pass_rate"`
	CostUSD   float64 `json:"cost_usd"`   // mean per wave
	LatencyMS float64 `json:"latency_ms"` // mean per wave, signal to decision
}

// Comparison is a canary's verdict: both arms over the same window, the
// outcome (promote or rollback) and why.
type Comparison struct {
	Candidate Arm          `json:"candidate"`
	Active    Arm          `json:"active"`
	From      time.Time    `json:"from"`
	To        time.Time    `json:"to"`
	Policy    CanaryPolicy `json:"policy"`
	Outcome   string       `json:"outcome"` // promote | rollback
	Reasons   []string     `json:"reasons"`
}

// Canary starts a canary of a proposed version after the gate (a canary
// serves real waves, so it must pass what a promotion passes). Errors:
// EINVALID (the request), ENOTFOUND (not proposed), ECONFLICT (already
// current, a canary already running, a failing gate, a concurrent change),
// ETRANSIENT.
func (r *Registry) Canary(ctx context.Context, version string, req CanaryRequest, by string) (Event, error) {
	c, err := r.canaryOf(version, req)
	if err != nil {
		return Event{}, err
	}
	st, err := r.read(ctx)
	if err != nil {
		return Event{}, err
	}
	b, ok := st.bundles[version]
	if !ok {
		return Event{}, ora.Errorf(ora.ENOTFOUND, "no proposed motor %q", version)
	}
	cur, _, _ := st.current(r.base)
	if cur.Version == version {
		return Event{}, ora.Conflict(nil, "motor %s is already current", version)
	}
	if running, ok := st.canary(); ok {
		return Event{}, ora.Conflict(nil, "a canary of motor %s is running: wait for its end", running.Version)
	}
	if err := r.checkModels(b); err != nil {
		return Event{}, fmt.Errorf("canary: %w", err)
	}
	if err := r.passGate(ctx, b); err != nil {
		return Event{}, err
	}
	c.Active = cur.Version
	return r.record(ctx, st, Event{Type: EventCanary, Version: version, Previous: cur.Version, Reason: req.Reason,
		Changelog: b.Changelog, By: by, Canary: &c})
}

// canaryOf checks a request. Errors: EINVALID naming the field.
func (r *Registry) canaryOf(version string, req CanaryRequest) (Canary, error) {
	if _, err := ParseVersion(version); err != nil {
		return Canary{}, err
	}
	if req.Share < 0 || req.Share > 1 || math.IsNaN(req.Share) {
		return Canary{}, ora.Invalid("share", "%v is not a fraction between 0 and 1", req.Share)
	}
	if req.Share == 0 && len(req.Sources) == 0 {
		return Canary{}, ora.Invalid("share", "required: a share of the waves, or sources")
	}
	if req.Waves < 0 {
		return Canary{}, ora.Invalid("waves", "%d must not be negative", req.Waves)
	}
	now := r.now().UTC()
	c := Canary{Version: version, Share: req.Share, Sources: req.Sources, Waves: req.Waves, Start: now,
		Policy: CanaryPolicy{PassTolerance: DefaultPassTolerance, MaxCostIncrease: DefaultMaxCostIncrease, MaxLatencyIncrease: DefaultMaxLatencyIncrease}}
	if req.Duration != "" {
		d, err := time.ParseDuration(req.Duration)
		if err != nil || d <= 0 {
			return Canary{}, ora.Invalid("duration", "%q is not a positive duration (30m, 24h)", req.Duration)
		}
		c.Until = now.Add(d)
	}
	if c.Waves == 0 && c.Until.IsZero() {
		return Canary{}, ora.Invalid("waves", "required: a number of waves, or a duration")
	}
	for _, p := range []struct {
		field string
		in    *float64
		dst   *float64
	}{
		{"pass_tolerance", req.PassTolerance, &c.Policy.PassTolerance},
		{"max_cost_increase", req.MaxCostIncrease, &c.Policy.MaxCostIncrease},
		{"max_latency_increase", req.MaxLatencyIncrease, &c.Policy.MaxLatencyIncrease},
	} {
		if p.in == nil {
			continue
		}
		if *p.in < 0 || math.IsNaN(*p.in) || math.IsInf(*p.in, 0) {
			return Canary{}, ora.Invalid(p.field, "%v must be a fraction not below 0", *p.in)
		}
		*p.dst = *p.in
	}
	return c, nil
}

// canary returns the running canary: the last canary event, when no
// promotion or rollback came after it.
func (st state) canary() (Canary, bool) {
	for i := len(st.events) - 1; i >= 0; i-- {
		ev := st.events[i]
		switch ev.Type {
		case EventCanary:
			if ev.Canary != nil {
				return *ev.Canary, true
			}
			return Canary{}, false
		case "promote", "rollback", EventCanaryRollback:
			return Canary{}, false
		}
	}
	return Canary{}, false
}

// Serving returns the current bundle and, while a canary runs, the
// candidate's bundle and canary. It first ends a canary whose window is over
// (the first wave past the window decides, in whichever process reads the
// motor), recording its comparison. Errors: ETRANSIENT.
func (r *Registry) Serving(ctx context.Context) (cur Bundle, candidate *Bundle, c Canary, err error) {
	st, err := r.cached(ctx)
	if err != nil {
		return Bundle{}, nil, Canary{}, err
	}
	if running, ok := st.canary(); ok {
		ended, err := r.ended(ctx, running)
		if err != nil {
			return Bundle{}, nil, Canary{}, err
		}
		if ended {
			if _, err := r.settle(ctx); err != nil {
				return Bundle{}, nil, Canary{}, err
			}
			if st, err = r.cached(ctx); err != nil {
				return Bundle{}, nil, Canary{}, err
			}
		}
	}
	cur, _, _ = st.current(r.base)
	if running, ok := st.canary(); ok {
		if b, ok := st.bundles[running.Version]; ok {
			return cur, &b, running, nil
		}
	}
	return cur, nil, Canary{}, nil
}

// ended reports whether a canary's window is over: its time has passed, or
// it has decided its number of waves (counted at most once per cache TTL).
func (r *Registry) ended(ctx context.Context, c Canary) (bool, error) {
	now := r.now()
	if !c.Until.IsZero() && !now.Before(c.Until) {
		return true, nil
	}
	if c.Waves == 0 {
		return false, nil
	}
	r.mu.Lock()
	fresh := r.ttl > 0 && now.Sub(r.counted) < r.ttl
	r.mu.Unlock()
	if fresh {
		return false, nil
	}
	ds, err := r.ledger.Recent(ctx, ora.KindReasonerDecision, c.Start, now.Add(time.Minute), 0)
	if err != nil {
		return false, fmt.Errorf("motor: count the canary's waves: %w", err)
	}
	r.mu.Lock()
	r.counted = now
	r.mu.Unlock()
	n := 0
	for _, e := range ds {
		var d struct {
			MotorVersion string `json:"motor_version"`
		}
		if json.Unmarshal(e.Body, &d) == nil && d.MotorVersion == c.Version {
			n++
		}
	}
	return n >= c.Waves, nil
}

// settle ends the running canary: it compares both versions over the window
// and records the outcome (a promotion carrying the comparison, or a canary
// rollback). A concurrent settlement by another process wins harmlessly.
// Errors: ETRANSIENT.
func (r *Registry) settle(ctx context.Context) (*Event, error) {
	defer r.forget()
	st, err := r.read(ctx)
	if err != nil {
		return nil, err
	}
	c, ok := st.canary()
	if !ok {
		return nil, nil
	}
	to := r.now().UTC()
	cmp, err := r.compare(ctx, c, to)
	if err != nil {
		return nil, err
	}
	cur, _, _ := st.current(r.base)
	ev := Event{Type: EventCanaryRollback, Version: c.Version, Previous: cur.Version, By: "canary",
		Reason: "canary: " + strings.Join(cmp.Reasons, "; "), Comparison: &cmp}
	if cmp.Outcome == "promote" {
		ev.Type, ev.Changelog = "promote", st.bundles[c.Version].Changelog
	} else {
		ev.Changelog = "canary of " + c.Version + " rolled back"
	}
	got, err := r.record(ctx, st, ev)
	if ora.ErrorCode(err) == ora.ECONFLICT {
		return nil, nil // another process recorded an event meanwhile
	}
	if err != nil {
		return nil, err
	}
	return &got, nil
}

// SettleCanary ends the running canary now if its window is over, and
// returns the event recording its outcome (nil: no canary, or not over).
// Errors: ETRANSIENT.
func (r *Registry) SettleCanary(ctx context.Context) (*Event, error) {
	st, err := r.read(ctx)
	if err != nil {
		return nil, err
	}
	c, ok := st.canary()
	if !ok {
		return nil, nil
	}
	r.mu.Lock()
	r.counted = time.Time{}
	r.mu.Unlock()
	if ended, err := r.ended(ctx, c); err != nil || !ended {
		return nil, err
	}
	return r.settle(ctx)
}

// compare reads the waves that arrived since c.Start and were decided by
// to (the recorder's reading of the ledger: at most MaxRecorded, the
// newest) and judges the candidate against the active version.
func (r *Registry) compare(ctx context.Context, c Canary, to time.Time) (Comparison, error) {
	waves, err := Recorder{Ledger: r.ledger, Now: func() time.Time { return to }}.Waves(ctx, c.Start, "", MaxRecorded)
	if err != nil {
		return Comparison{}, fmt.Errorf("motor: canary %s: %w", c.Version, err)
	}
	cmp := Comparison{Candidate: Arm{Version: c.Version}, Active: Arm{Version: c.Active}, From: c.Start, To: to, Policy: c.Policy}
	for _, w := range waves {
		var a *Arm
		switch w.MotorVersion {
		case c.Version:
			a = &cmp.Candidate
		case c.Active:
			a = &cmp.Active
		default:
			continue
		}
		a.Waves++
		if w.Passed() {
			a.Passed++
		}
		a.CostUSD += w.CostUSD
		a.LatencyMS += float64(w.LatencyMS)
	}
	for _, a := range []*Arm{&cmp.Candidate, &cmp.Active} {
		if a.Waves > 0 {
			a.PassRate = float64(a.Passed) / float64(a.Waves)
			a.CostUSD /= float64(a.Waves)
			a.LatencyMS /= float64(a.Waves)
		}
	}
	cmp.Outcome, cmp.Reasons = judge(cmp.Candidate, cmp.Active, c.Policy)
	return cmp, nil
}

// judge applies the policy to the two arms.
func judge(cand, active Arm, p CanaryPolicy) (string, []string) {
	if cand.Waves == 0 {
		return "rollback", []string{"the candidate decided no wave in the window"}
	}
	var worse, fine []string
	wantPass := 1 - p.PassTolerance
	if active.Waves > 0 {
		wantPass = active.PassRate - p.PassTolerance
	}
	line := fmt.Sprintf("pass rate %.1f%% vs %.1f%% (at least %.1f%%)", 100*cand.PassRate, 100*active.PassRate, 100*wantPass)
	if cand.PassRate+1e-9 < wantPass {
		worse = append(worse, line)
	} else {
		fine = append(fine, line)
	}
	for _, m := range []struct {
		name            string
		cand, act, plus float64
		unit            string
	}{
		{"cost", cand.CostUSD, active.CostUSD, p.MaxCostIncrease, "$"},
		{"latency", cand.LatencyMS, active.LatencyMS, p.MaxLatencyIncrease, "ms"},
	} {
		if active.Waves == 0 {
			continue
		}
		limit := m.act * (1 + m.plus)
		line := fmt.Sprintf("%s %.4g%s vs %.4g%s (at most %.4g%s)", m.name, m.cand, m.unit, m.act, m.unit, limit, m.unit)
		if m.cand > limit+1e-9 {
			worse = append(worse, line)
		} else {
			fine = append(fine, line)
		}
	}
	if len(worse) > 0 {
		return "rollback", worse
	}
	return "promote", fine
}
