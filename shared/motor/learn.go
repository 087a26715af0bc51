package motor

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// Patterns lists the learned patterns; *operate.Service is one.
type Patterns interface {
	// Patterns returns every learned pattern. Errors: ETRANSIENT.
	Patterns(ctx context.Context) ([]operate.Pattern, error)
	// Pattern returns one. Errors: ENOTFOUND, ETRANSIENT.
	Pattern(ctx context.Context, id string) (operate.Pattern, error)
}

// Learner promotes learned patterns (incident fingerprints with a
// confirmed fix) into the motor: the current version plus the pattern is
// proposed as the next patch version and promoted through the same gate as
// any motor change, so its sha256 covers the pattern.
type Learner struct {
	Patterns Patterns
	Registry *Registry
}

// List returns every learned pattern, each with the motor version that
// carries it ("" while a candidate). Errors: ETRANSIENT.
func (l Learner) List(ctx context.Context) ([]operate.Pattern, error) {
	return l.Patterns.Patterns(ctx)
}

// Promote proposes the current motor with pattern id learned, as the next
// free patch version, and promotes it through the gate. A proposal the gate
// refuses stays proposed. Errors: ENOTFOUND (no such pattern), ECONFLICT
// (the current motor carries it already; a failing gate, carrying a
// *GateError), EINVALID, ETRANSIENT.
func (l Learner) Promote(ctx context.Context, id, reason, by string) (Bundle, Event, error) {
	p, err := l.Patterns.Pattern(ctx, id)
	if err != nil {
		return Bundle{}, Event{}, fmt.Errorf("learn %s: %w", id, err)
	}
	cur, _, _, err := l.Registry.Current(ctx)
	if err != nil {
		return Bundle{}, Event{}, err
	}
	for _, q := range cur.Learned {
		if q.ID == p.ID {
			return Bundle{}, Event{}, ora.Conflict(nil, "motor %s carries pattern %s already", cur.Version, p.ID)
		}
	}
	versions, _, err := l.Registry.Versions(ctx)
	if err != nil {
		return Bundle{}, Event{}, err
	}
	taken := map[string]bool{}
	for _, v := range versions {
		taken[v.Version] = true
	}
	next := nextPatch(cur.Version, taken)
	p.Motor = "" // the version carrying it is the bundle's own
	b := cur
	b.Version, b.Digest = next, ""
	b.Rules = versionLine.ReplaceAllString(cur.Rules, "version: "+strconv.Quote(next))
	b.Learned = append(append([]operate.Pattern(nil), cur.Learned...), p)
	b.Changelog = fmt.Sprintf("learned pattern %s: %s at %s (%s) is %s, fixed by %s (incident %s, wave %s, confirmed %d time(s))",
		p.ID, p.Taxonomy, p.Stage, p.Error, p.Classification, p.Fix, p.Incident, p.Wave, p.Confirmed)
	b, err = l.Registry.Propose(ctx, b)
	if err != nil {
		return Bundle{}, Event{}, fmt.Errorf("learn %s: %w", id, err)
	}
	if reason == "" {
		reason = "promote learned pattern " + p.ID
	}
	ev, err := l.Registry.Promote(ctx, b.Version, reason, by)
	if err != nil {
		return b, Event{}, err
	}
	return b, ev, nil
}

// versionLine is the rules file's top-level version field.
var versionLine = regexp.MustCompile(`(?m)^version:.*$`)

// nextPatch is the first patch version after v that is not taken; after
// a version that is not semantic (a rules file's own, the base), the first
// free of 0.0.1, 0.0.2, ...
func nextPatch(v string, taken map[string]bool) string {
	n, err := ParseVersion(v)
	if err != nil {
		n = [3]int{0, 0, 0}
	}
	for {
		n[2]++
		s := fmt.Sprintf("%d.%d.%d", n[0], n[1], n[2])
		if !taken[s] {
			return s
		}
	}
}

// OperatorMotor is what the operator knows of a motor version: its
// version, the one before it, since when it is current, and its learned
// patterns.
func OperatorMotor(b Bundle, previous string, since time.Time) operate.Motor {
	return operate.Motor{Version: b.Version, Previous: previous, Since: since, Learned: b.Learned}
}
