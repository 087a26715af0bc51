// Package motor keeps ora's motor (seed 003): what turns signals into
// decisions and checks them — the rules file, the prompts and model profile,
// the validator settings and the orientation profile — as versioned bundles
// (semantic versions), stored write-once in the ledger, diffable, promoted
// only through a gate (the golden replay and the contract checks) and rolled
// back in one step. Promotions and rollbacks are recorded with their reason
// and changelog; the current version is the last of them.
package motor

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/rules"
)

// Bundle is one motor version. The rules file's own version must equal the
// bundle's: decisions record it, and the pattern cache keys on it, so it is
// the one motor version.
type Bundle struct {
	Version     string          `json:"version" yaml:"version"`
	Rules       string          `json:"rules" yaml:"rules"`                               // the rules file (YAML)
	Model       json.RawMessage `json:"model,omitempty" yaml:"model,omitempty"`           // prompts and model profile
	Validators  json.RawMessage `json:"validators,omitempty" yaml:"validators,omitempty"` // validator settings
	Orientation Orientation     `json:"orientation" yaml:"orientation"`
	// Learned are the learned patterns the version carries (Learner): the
	// operator classifies a failure that matches one as its confirmed fix.
	Learned   []operate.Pattern `json:"learned,omitempty" yaml:"learned,omitempty"`
	Changelog string            `json:"changelog" yaml:"changelog"`
	// Digest is the sha256 of the bundle (every field above, the learned
	// patterns included): the version's artifact hash, set by Check.
	Digest string `json:"digest,omitempty" yaml:"-"`
}

// Orientation is the orientation profile a motor fixes.
type Orientation struct {
	TokenBudget int `json:"token_budget,omitempty" yaml:"token_budget,omitempty"`
}

// ParseVersion parses a semantic version "MAJOR.MINOR.PATCH". Errors: EINVALID.
func ParseVersion(v string) ([3]int, error) {
	var out [3]int
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return out, ora.Invalid("version", "%q is not a semantic version MAJOR.MINOR.PATCH", v)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || (len(p) > 1 && p[0] == '0') {
			return out, ora.Invalid("version", "%q is not a semantic version MAJOR.MINOR.PATCH", v)
		}
		out[i] = n
	}
	return out, nil
}

// Less reports whether semantic version a sorts before b (non-semantic
// versions sort first, by text).
func Less(a, b string) bool {
	va, ea := ParseVersion(a)
	vb, eb := ParseVersion(b)
	switch {
	case ea != nil && eb != nil:
		return a < b
	case ea != nil:
		return true
	case eb != nil:
		return false
	}
	for i := range va {
		if va[i] != vb[i] {
			return va[i] < vb[i]
		}
	}
	return false
}

// Check validates the bundle (the contract checks of a proposal) and returns
// it with its digest and its compiled rules. Errors: EINVALID naming the field.
func (b Bundle) Check() (Bundle, *rules.Set, error) {
	if _, err := ParseVersion(b.Version); err != nil {
		return Bundle{}, nil, err
	}
	if strings.TrimSpace(b.Rules) == "" {
		return Bundle{}, nil, ora.Invalid("rules", "required: the rules file")
	}
	set, err := rules.Parse([]byte(b.Rules))
	if err != nil {
		return Bundle{}, nil, fmt.Errorf("motor %s: rules: %w", b.Version, err)
	}
	if set.Version() != b.Version {
		return Bundle{}, nil, ora.Invalid("rules.version", "%q differs from the bundle's version %q: a motor has one version", set.Version(), b.Version)
	}
	if len(b.Model) > 0 && !json.Valid(b.Model) {
		return Bundle{}, nil, ora.Invalid("model", "must be JSON")
	}
	if _, err := ParseValidatorSettings(b.Validators); err != nil {
		return Bundle{}, nil, fmt.Errorf("motor %s: %w", b.Version, err)
	}
	for i, p := range b.Learned {
		class, ok := operate.ClassOf(p.Taxonomy)
		switch {
		case !ok || class != p.Classification:
			return Bundle{}, nil, ora.Invalid(fmt.Sprintf("learned[%d].taxonomy", i), "%q is not a class of %q", p.Taxonomy, p.Classification)
		case p.Stage == "" || p.Error == "":
			return Bundle{}, nil, ora.Invalid(fmt.Sprintf("learned[%d]", i), "a pattern names its stage and error")
		case p.ID != operate.PatternID(p.Taxonomy, p.Stage, p.Error):
			return Bundle{}, nil, ora.Invalid(fmt.Sprintf("learned[%d].id", i), "%q is not the id of its fingerprint (%s)", p.ID, operate.PatternID(p.Taxonomy, p.Stage, p.Error))
		}
	}
	if b.Orientation.TokenBudget < 0 {
		return Bundle{}, nil, ora.Invalid("orientation.token_budget", "must not be negative")
	}
	if strings.TrimSpace(b.Changelog) == "" {
		return Bundle{}, nil, ora.Invalid("changelog", "required: say what changed and why")
	}
	b.Digest = ""
	body, _ := json.Marshal(b)
	b.Digest = ora.Digest(body)
	return b, set, nil
}

// Diff lists what changed from a to b: fields, and the rules file's lines
// removed (-) and added (+).
func Diff(a, b Bundle) []string {
	var out []string
	if a.Version != b.Version {
		out = append(out, fmt.Sprintf("version: %s -> %s", a.Version, b.Version))
	}
	if a.Orientation != b.Orientation {
		out = append(out, fmt.Sprintf("orientation.token_budget: %d -> %d", a.Orientation.TokenBudget, b.Orientation.TokenBudget))
	}
	if string(a.Model) != string(b.Model) {
		out = append(out, "model: changed")
	}
	if string(a.Validators) != string(b.Validators) {
		out = append(out, "validators: changed")
	}
	had := map[string]bool{}
	for _, p := range a.Learned {
		had[p.ID] = true
	}
	for _, p := range b.Learned {
		if !had[p.ID] {
			out = append(out, fmt.Sprintf("learned + %s: %s at %s (%s) -> %s", p.ID, p.Taxonomy, p.Stage, p.Error, p.Classification))
		}
		delete(had, p.ID)
	}
	for _, p := range a.Learned {
		if had[p.ID] {
			out = append(out, "learned - "+p.ID)
		}
	}
	// The rules file's lines as multisets: a line whose count dropped was
	// removed, one whose count grew was added.
	al, bl := lines(a.Rules), lines(b.Rules)
	seen := map[string]bool{}
	for _, l := range strings.Split(a.Rules+"\n"+b.Rules, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || seen[t] || strings.HasPrefix(t, "version:") {
			continue
		}
		seen[t] = true
		for n := al[t] - bl[t]; n > 0; n-- {
			out = append(out, "rules - "+t)
		}
		for n := bl[t] - al[t]; n > 0; n-- {
			out = append(out, "rules + "+t)
		}
	}
	return out
}

func lines(s string) map[string]int {
	m := map[string]int{}
	for _, l := range strings.Split(s, "\n") {
		m[strings.TrimSpace(l)]++
	}
	return m
}

// Ledger is the part of ora.Ledger the registry calls.
type Ledger interface {
	// Append: see ora.Ledger. Errors: EINVALID, ECONFLICT (with the stored Entry), ETRANSIENT.
	Append(ctx context.Context, e ora.Entry) (ora.Entry, error)
	// Entries: see ora.Ledger. Errors: ENOTFOUND, ETRANSIENT.
	Entries(ctx context.Context, signalID string) ([]ora.Entry, error)
	// Recent: see ora.Ledger (a canary counts its waves and compares them).
	// Errors: EINVALID, ETRANSIENT.
	Recent(ctx context.Context, kind ora.EntryKind, from, to time.Time, limit int) ([]ora.Entry, error)
}

// Event is a promotion or a rollback, or a canary's start or rollback
// (EventCanary, EventCanaryRollback); Previous is the version that was
// current before it. A canary's events carry the canary; the event that ends
// it (a promotion or a canary rollback) carries the comparison.
type Event struct {
	Seq       int       `json:"seq"`
	Type      string    `json:"type"` // promote | rollback
	Version   string    `json:"version"`
	Previous  string    `json:"previous"`
	Reason    string    `json:"reason"`
	Changelog string    `json:"changelog"`
	By        string    `json:"by"`
	At        time.Time `json:"at"`

	Canary     *Canary     `json:"canary,omitempty"`
	Comparison *Comparison `json:"comparison,omitempty"`
}

// Version is a stored version and its standing.
type Version struct {
	Bundle
	Status string   `json:"status"`         // current | previous | canary | proposed | retired
	Diff   []string `json:"diff,omitempty"` // from the current version
}

// GateFunc checks a candidate before promotion: the golden replay and the
// contract checks. It returns the names of the failing waves (empty: pass).
type GateFunc func(ctx context.Context, b Bundle) (failing []string, err error)

// Registry stores motor versions in the ledger (the entries of the signal
// "motor": "version/<v>" per bundle, "event/<seq>" per promotion or rollback).
type Registry struct {
	ledger Ledger
	base   Bundle
	gate   GateFunc
	now    func() time.Time
	ttl    time.Duration
	models []string // nil: not checked

	mu       sync.Mutex
	cache    map[string]*rules.Set
	st       state // the last read of the ledger, kept for ttl
	stRead   time.Time
	stCached bool
	counted  time.Time // when a canary's waves were last counted
}

// Options tune a registry.
type Options struct {
	// CacheTTL is how long Current and Rules answer from the last read of the
	// ledger before reading it again: a promotion or rollback made by another
	// process (the API Lambda) reaches this one within CacheTTL. 0 reads the
	// ledger every time. Propose, Promote, Rollback and Versions always read it.
	CacheTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Models, when not nil, lists the model ids (or inference profile ids)
	// the stack lets the reason function invoke: on AWS the ids its IAM
	// policy names (ORA_BEDROCK_MODEL_IDS), in ora dev the configured
	// reasoner's model and fallbacks. Propose and Promote refuse a bundle
	// whose model profile names any other model (EINVALID naming it and the
	// allowed ones); an empty list allows none. nil: no check (a registry
	// that only reads the motor).
	Models []string
}

// DefaultCacheTTL is the cache TTL of the Lambdas that read the motor on AWS
// (reason, operate): a promotion takes effect within it.
const DefaultCacheTTL = 5 * time.Second

// ledgerID is the ledger signal id that holds the motor's entries.
const ledgerID = "motor"

// NewRegistry returns a registry whose version before any promotion is base
// (the configured rules file), gating promotions with gate.
func NewRegistry(ledger Ledger, base Bundle, gate GateFunc, opts ...func(*Options)) *Registry {
	o := Options{Now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Registry{ledger: ledger, base: base, gate: gate, now: o.Now, ttl: o.CacheTTL, models: o.Models, cache: map[string]*rules.Set{}}
}

// NewBase returns the base bundle (the version before any promotion) of a
// rules file: its version is the rules file's. Errors: those of rules.Parse.
func NewBase(rulesText []byte, changelog string, tokenBudget int) (Bundle, error) {
	set, err := rules.Parse(rulesText)
	if err != nil {
		return Bundle{}, fmt.Errorf("motor: base rules: %w", err)
	}
	return Bundle{Version: set.Version(), Rules: string(rulesText), Orientation: Orientation{TokenBudget: tokenBudget}, Changelog: changelog}, nil
}

// cached reads the ledger at most once per ttl.
func (r *Registry) cached(ctx context.Context) (state, error) {
	if r.ttl > 0 {
		r.mu.Lock()
		st, ok := r.st, r.stCached && r.now().Sub(r.stRead) < r.ttl
		r.mu.Unlock()
		if ok {
			return st, nil
		}
	}
	read := r.now()
	st, err := r.read(ctx)
	if err != nil {
		return state{}, err
	}
	if r.ttl > 0 {
		r.mu.Lock()
		r.st, r.stRead, r.stCached = st, read, true
		r.mu.Unlock()
	}
	return st, nil
}

// forget drops the cached read after this process changed the motor.
func (r *Registry) forget() {
	r.mu.Lock()
	r.stCached = false
	r.mu.Unlock()
}

type state struct {
	bundles map[string]Bundle
	events  []Event
}

func (r *Registry) read(ctx context.Context) (state, error) {
	st := state{bundles: map[string]Bundle{}}
	entries, err := r.ledger.Entries(ctx, ledgerID)
	if err != nil && ora.ErrorCode(err) != ora.ENOTFOUND {
		return state{}, fmt.Errorf("motor: read versions: %w", err)
	}
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e.Qualifier, "version/"):
			var b Bundle
			if json.Unmarshal(e.Body, &b) == nil {
				st.bundles[b.Version] = b
			}
		case strings.HasPrefix(e.Qualifier, "event/"):
			var ev Event
			if json.Unmarshal(e.Body, &ev) == nil {
				st.events = append(st.events, ev)
			}
		}
	}
	sort.Slice(st.events, func(a, b int) bool { return st.events[a].Seq < st.events[b].Seq })
	return st, nil
}

// stack replays the events: a promotion pushes its version, a rollback pops
// the current one; the base version is at the bottom.
func (st state) stack(base Bundle) []string {
	s := []string{base.Version}
	for _, ev := range st.events {
		switch ev.Type {
		case "promote":
			s = append(s, ev.Version)
		case "rollback":
			if len(s) > 1 {
				s = s[:len(s)-1]
			}
		}
	}
	return s
}

// current returns the current bundle, the version a rollback would restore
// ("" at the base), and the last event.
func (st state) current(base Bundle) (Bundle, string, Event) {
	s := st.stack(base)
	var last Event
	if n := len(st.events); n > 0 {
		last = st.events[n-1]
	}
	prev := ""
	if len(s) > 1 {
		prev = s[len(s)-2]
	}
	top := s[len(s)-1]
	if b, ok := st.bundles[top]; ok {
		return b, prev, last
	}
	return base, prev, last
}

// Current returns the current bundle, the version before it and since when
// it is current. Errors: ETRANSIENT.
func (r *Registry) Current(ctx context.Context) (Bundle, string, time.Time, error) {
	st, err := r.cached(ctx)
	if err != nil {
		return Bundle{}, "", time.Time{}, err
	}
	b, prev, ev := st.current(r.base)
	return b, prev, ev.At, nil
}

// Rules returns the compiled rules of the current bundle. Errors: ETRANSIENT, EINVALID.
func (r *Registry) Rules(ctx context.Context) (*rules.Set, error) {
	b, _, _, err := r.Current(ctx)
	if err != nil {
		return nil, err
	}
	return r.compiled(b)
}

func (r *Registry) compiled(b Bundle) (*rules.Set, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.cache[b.Version]; ok {
		return s, nil
	}
	s, err := rules.Parse([]byte(b.Rules))
	if err != nil {
		return nil, fmt.Errorf("motor %s: %w", b.Version, err)
	}
	r.cache[b.Version] = s
	return s, nil
}

// Versions lists every version, newest first, with its standing and its diff
// from the current one. Errors: ETRANSIENT.
func (r *Registry) Versions(ctx context.Context) ([]Version, []Event, error) {
	st, err := r.read(ctx)
	if err != nil {
		return nil, nil, err
	}
	cur, prev, _ := st.current(r.base)
	all := map[string]Bundle{r.base.Version: r.base}
	for v, b := range st.bundles {
		all[v] = b
	}
	promoted := map[string]bool{r.base.Version: true}
	for _, e := range st.events {
		if e.Type == "promote" || e.Type == "rollback" {
			promoted[e.Version] = true
		}
	}
	running, canary := st.canary()
	var out []Version
	for v, b := range all {
		s := "proposed"
		switch {
		case v == cur.Version:
			s = "current"
		case v == prev:
			s = "previous"
		case canary && v == running.Version:
			s = "canary"
		case promoted[v]:
			s = "retired"
		}
		ver := Version{Bundle: b, Status: s}
		if v != cur.Version {
			ver.Diff = Diff(cur, b)
		}
		out = append(out, ver)
	}
	sort.Slice(out, func(a, b int) bool { return Less(out[b].Version, out[a].Version) })
	return out, st.events, nil
}

// Propose stores a new version after its contract checks (Bundle.Check) and
// the check of its model profile against the allowed models (Options.Models).
// A bundle with no learned patterns (nil) carries the current version's.
// Proposing the same bundle again is harmless. Errors: EINVALID (the checks),
// ECONFLICT (the version exists with other content), ETRANSIENT.
func (r *Registry) Propose(ctx context.Context, b Bundle) (Bundle, error) {
	if b.Learned == nil {
		// A proposal that names no learned patterns keeps the current
		// version's: an upgrade does not drop what the motor learned.
		st, err := r.read(ctx)
		if err != nil {
			return Bundle{}, err
		}
		cur, _, _ := st.current(r.base)
		b.Learned = cur.Learned
	}
	b, _, err := b.Check()
	if err != nil {
		return Bundle{}, err
	}
	if err := r.checkModels(b); err != nil {
		return Bundle{}, err
	}
	if b.Version == r.base.Version {
		return Bundle{}, ora.Conflict(nil, "motor %s is the configured base version", b.Version)
	}
	e, err := ora.NewEntry(ledgerID, ora.KindOperatorDecision, "version/"+b.Version, b)
	if err != nil {
		return Bundle{}, err
	}
	if _, err := r.ledger.Append(ctx, e); err != nil {
		if prev, ok := ora.Existing[ora.Entry](err); ok {
			var stored Bundle
			if json.Unmarshal(prev.Body, &stored) == nil && stored.Digest == b.Digest {
				return stored, nil
			}
			return Bundle{}, ora.Conflict(nil, "motor %s exists with other content: propose a new version", b.Version)
		}
		return Bundle{}, fmt.Errorf("motor: store %s: %w", b.Version, err)
	}
	return b, nil
}

// GateError is a promotion refused by the gate; Failing names the waves.
type GateError struct {
	Version string
	Failing []string
}

// Error names the version and the failing waves.
func (e *GateError) Error() string {
	return fmt.Sprintf("motor %s failed the gate (golden replay and contract checks): %s", e.Version, strings.Join(e.Failing, ", "))
}

// Promote makes a proposed version current once it passes the gate, and
// records the promotion with its reason and the bundle's changelog. The
// bundle's model profile and validators block are checked again first: the
// stack's allowed models may have changed since the proposal. Errors:
// EINVALID (a model the stack does not allow, a validators block that does
// not decode), ENOTFOUND (not proposed), ECONFLICT (already current, a
// failing gate with the failing waves named — also as *GateError — or a
// concurrent change), ETRANSIENT.
func (r *Registry) Promote(ctx context.Context, version, reason, by string) (Event, error) {
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
	if err := r.checkModels(b); err != nil {
		return Event{}, fmt.Errorf("promote: %w", err)
	}
	if _, err := ParseValidatorSettings(b.Validators); err != nil {
		return Event{}, fmt.Errorf("promote motor %s: %w", version, err)
	}
	if err := r.passGate(ctx, b); err != nil {
		return Event{}, err
	}
	return r.record(ctx, st, Event{Type: "promote", Version: version, Previous: cur.Version, Reason: reason, Changelog: b.Changelog, By: by})
}

// passGate runs the gate on b. Errors: ECONFLICT carrying a *GateError
// (failing waves), those of the gate.
func (r *Registry) passGate(ctx context.Context, b Bundle) error {
	if r.gate == nil {
		return nil
	}
	failing, err := r.gate(ctx, b)
	if err != nil {
		return fmt.Errorf("motor: gate %s: %w", b.Version, err)
	}
	if len(failing) > 0 {
		ge := &GateError{Version: b.Version, Failing: failing}
		return &ora.Error{Code: ora.ECONFLICT, Message: ge.Error(), Existing: ge}
	}
	return nil
}

// Rollback makes the version before the current one current again, and
// records it with its reason. Errors: ECONFLICT (nothing to roll back to, or
// a concurrent change), ETRANSIENT.
func (r *Registry) Rollback(ctx context.Context, reason, by string) (Event, error) {
	st, err := r.read(ctx)
	if err != nil {
		return Event{}, err
	}
	cur, prev, _ := st.current(r.base)
	if prev == "" {
		return Event{}, ora.Conflict(nil, "motor %s has no previous version to roll back to", cur.Version)
	}
	return r.record(ctx, st, Event{Type: "rollback", Version: prev, Previous: cur.Version, Reason: reason,
		Changelog: "rollback from " + cur.Version, By: by})
}

func (r *Registry) record(ctx context.Context, st state, ev Event) (Event, error) {
	ev.Seq = len(st.events) + 1
	ev.At = r.now().UTC()
	if ev.By == "" {
		ev.By = "operator"
	}
	e, err := ora.NewEntry(ledgerID, ora.KindOperatorDecision, fmt.Sprintf("event/%06d", ev.Seq), ev)
	if err != nil {
		return Event{}, err
	}
	defer r.forget()
	if _, err := r.ledger.Append(ctx, e); err != nil {
		if _, ok := ora.Existing[ora.Entry](err); ok {
			return Event{}, ora.Conflict(nil, "the motor changed meanwhile: read the versions and try again")
		}
		return Event{}, fmt.Errorf("motor: record %s: %w", ev.Type, err)
	}
	return ev, nil
}

type pinnedKey struct{}

// Under returns ctx carrying the motor version a resumed wave runs under
// (operate.ResumedUnder): Reasoner.Reason decides under exactly it. A
// resume may promote a version moments before the wave decides, within the
// registry's cache TTL, in another process; without Under the wave could
// decide under the version its process read before. "" leaves ctx as is.
func Under(ctx context.Context, version string) context.Context {
	if version == "" {
		return ctx
	}
	return context.WithValue(ctx, pinnedKey{}, version)
}

func pinnedOf(ctx context.Context) (string, bool) {
	v, ok := ctx.Value(pinnedKey{}).(string)
	return v, ok
}

// Version returns the bundle of version v: the base, or a proposed or
// promoted version, from the cached read of the ledger, or a fresh read
// when the cache predates v. Errors: ENOTFOUND, ETRANSIENT.
func (r *Registry) Version(ctx context.Context, v string) (Bundle, error) {
	if v == r.base.Version {
		return r.base, nil
	}
	st, err := r.cached(ctx)
	if err != nil {
		return Bundle{}, err
	}
	if b, ok := st.bundles[v]; ok {
		return b, nil
	}
	r.forget()
	if st, err = r.cached(ctx); err != nil {
		return Bundle{}, err
	}
	if b, ok := st.bundles[v]; ok {
		return b, nil
	}
	return Bundle{}, ora.Errorf(ora.ENOTFOUND, "no motor version %q", v)
}

// BuildFunc makes the reasoner of one motor version (its rules, prompts and
// model profile).
type BuildFunc func(b Bundle) (ora.Reasoner, error)

// RulesBuild is the rules reasoner over the bundle's rules file.
func RulesBuild(b Bundle) (ora.Reasoner, error) {
	set, err := rules.Parse([]byte(b.Rules))
	if err != nil {
		return nil, fmt.Errorf("motor %s: %w", b.Version, err)
	}
	return rules.New(set), nil
}

// Reasoner decides with the registry's current version: a promotion or a
// rollback takes effect at the next decision (within the registry's cache
// TTL), and each decision records the motor version it ran under
// (motor_version; the rules reasoner also sets rules_version to it). While
// a canary runs, the waves it routes (Canary.Routes) are decided by the
// candidate; the first wave past the canary's window ends it
// (Registry.Serving).
type Reasoner struct {
	registry *Registry
	build    BuildFunc

	mu    sync.Mutex
	built map[string]ora.Reasoner
}

var _ ora.Reasoner = (*Reasoner)(nil)

// NewReasoner returns the reasoner over reg's current version; build makes
// each version's reasoner once (nil: RulesBuild).
func NewReasoner(reg *Registry, build BuildFunc) *Reasoner {
	if build == nil {
		build = RulesBuild
	}
	return &Reasoner{registry: reg, build: build, built: map[string]ora.Reasoner{}}
}

// Reason decides with the current version's reasoner (or the canary's,
// for a wave the canary routes) and stamps the decision with that version.
// A wave resumed under a version (Under) decides under exactly that one,
// whatever this process's cached read of the motor says.
// Errors: those of the version's reasoner, ETRANSIENT reading the current
// version, and those of building it.
func (m *Reasoner) Reason(ctx context.Context, in ora.ReasonerInput) (ora.ReasonerDecision, error) {
	b, candidate, c, err := m.registry.Serving(ctx)
	if err != nil {
		return ora.ReasonerDecision{}, fmt.Errorf("motor: %w", err)
	}
	if candidate != nil && c.Routes(in.Signal) {
		b = *candidate
	}
	if v, ok := pinnedOf(ctx); ok && v != b.Version {
		if b, err = m.registry.Version(ctx, v); err != nil {
			return ora.ReasonerDecision{}, fmt.Errorf("motor: resumed under %s: %w", v, err)
		}
	}
	rs, err := m.reasonerOf(b)
	if err != nil {
		return ora.ReasonerDecision{}, err
	}
	d, err := rs.Reason(ctx, in)
	if err != nil {
		return d, err
	}
	d.MotorVersion = b.Version
	return d, nil
}

// ReasonBatch decides about several signals in one call of the current
// version's reasoner when it batches (reason.Reasoner does), and about each
// alone otherwise, or when the canary routes one of them; each decision is
// stamped with the version it ran under. The i-th decision answers ins[i].
// Errors: as Reason.
func (m *Reasoner) ReasonBatch(ctx context.Context, ins []ora.ReasonerInput) ([]ora.ReasonerDecision, error) {
	b, candidate, c, err := m.registry.Serving(ctx)
	if err != nil {
		return nil, fmt.Errorf("motor: %w", err)
	}
	rs, err := m.reasonerOf(b)
	if err != nil {
		return nil, err
	}
	br, batches := rs.(interface {
		ReasonBatch(context.Context, []ora.ReasonerInput) ([]ora.ReasonerDecision, error)
	})
	for _, in := range ins {
		batches = batches && (candidate == nil || !c.Routes(in.Signal))
	}
	if !batches {
		out := make([]ora.ReasonerDecision, len(ins))
		for i, in := range ins {
			if out[i], err = m.Reason(ctx, in); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	out, err := br.ReasonBatch(ctx, ins)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].MotorVersion = b.Version
	}
	return out, nil
}

func (m *Reasoner) reasonerOf(b Bundle) (ora.Reasoner, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := b.Version + "@" + b.Digest
	if rs, ok := m.built[key]; ok {
		return rs, nil
	}
	rs, err := m.build(b)
	if err != nil {
		return nil, fmt.Errorf("motor %s: %w", b.Version, err)
	}
	m.built[key] = rs
	return rs, nil
}
