package operate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ora-runtime/ora/shared/ora"
)

// Pattern is a learned pattern: an incident fingerprint (class, stage,
// error, whatever the motor version) with a confirmed fix, an incident
// resumed with a motor version or an app patch whose wave then completed.
// Promoted into the motor (motor.Learner), it becomes a rule the operator
// applies: a failure that matches it is classified as the fix confirmed.
type Pattern struct {
	ID             string `json:"id"` // "pattern-" and 16 hex digits of the fingerprint
	Classification string `json:"classification"`
	Taxonomy       string `json:"taxonomy"`
	Stage          string `json:"stage"`
	Error          string `json:"error"`
	// Fix is what confirmed it: motor@VERSION, app-patch:KIND@DIGEST, or
	// both; Incident and Wave are the first incident and wave it was
	// confirmed by, Confirmed how many resumed waves completed.
	Fix       string `json:"fix"`
	Incident  string `json:"incident"`
	Wave      string `json:"wave"`
	Confirmed int    `json:"confirmed"`
	// Motor is the motor version that carries the pattern once promoted
	// ("" while it is a candidate).
	Motor string `json:"motor,omitempty"`
}

// PatternID is the id of the pattern of a fingerprint: its class, stage
// and error, whatever the motor version.
func PatternID(taxonomy, stage, errName string) string {
	return "pattern-" + ora.Digest([]byte(taxonomy + "\x00" + stage + "\x00" + errName))[:16]
}

// Matches reports whether a failure at stage with errName is the pattern's.
func (p Pattern) Matches(stage, errName string) bool {
	return p.Stage == stage && p.Error == errName
}

// Patterns returns the learned patterns of the incidents within
// IncidentWindow: each fingerprint with a confirmed fix, once, with the
// patterns the current motor carries marked by its version. Errors:
// ETRANSIENT.
func (s *Service) Patterns(ctx context.Context) ([]Pattern, error) {
	incs, _, err := s.Incidents(ctx)
	if err != nil {
		return nil, err
	}
	motor, err := s.o.Motor(ctx)
	if err != nil {
		return nil, fmt.Errorf("operate: motor version: %w", err)
	}
	carried := map[string]bool{}
	for _, p := range motor.Learned {
		carried[p.ID] = true
	}
	byID := map[string]*Pattern{}
	for i := len(incs) - 1; i >= 0; i-- { // oldest first: the first confirmation names the pattern
		inc := incs[i]
		class, tax := inc.Classification, inc.Fingerprint.Taxonomy
		if inc.Override != nil {
			class, tax = inc.Override.Classification, inc.Override.Taxonomy
		}
		for _, o := range inc.Occurrences {
			if o.ResumedWith == "" || o.ResumedWith == "as-is" {
				continue
			}
			ok, err := s.completed(ctx, o.WaveID)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			id := PatternID(tax, inc.Fingerprint.Stage, inc.Fingerprint.Error)
			p := byID[id]
			if p == nil {
				p = &Pattern{ID: id, Classification: class, Taxonomy: tax, Stage: inc.Fingerprint.Stage, Error: inc.Fingerprint.Error,
					Fix: fixOf(o), Incident: inc.ID, Wave: o.WaveID}
				byID[id] = p
			}
			p.Confirmed++
		}
	}
	out := make([]Pattern, 0, len(byID))
	for id, p := range byID {
		if carried[id] {
			p.Motor = motor.Version
		}
		out = append(out, *p)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

// Pattern returns one learned pattern. Errors: ENOTFOUND, ETRANSIENT.
func (s *Service) Pattern(ctx context.Context, id string) (Pattern, error) {
	all, err := s.Patterns(ctx)
	if err != nil {
		return Pattern{}, err
	}
	for _, p := range all {
		if p.ID == id {
			return p, nil
		}
	}
	return Pattern{}, ora.Errorf(ora.ENOTFOUND, "no learned pattern %q: a pattern is an incident resumed with a fix whose wave completed", id)
}

func fixOf(o Occurrence) string {
	motor, app := "", ""
	with := o.ResumedWith
	if strings.HasPrefix(with, "motor") {
		motor = "motor@" + o.ResumedUnder
	}
	if _, patch, ok := strings.Cut(with, ":"); ok {
		app = "app-patch:" + patch
	}
	return strings.Trim(motor+","+app, ",")
}

// completed reports whether the wave's final verdict says it completed.
func (s *Service) completed(ctx context.Context, waveID string) (bool, error) {
	entries, err := s.ledger.Entries(ctx, waveID)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("operate: read wave %s: %w", waveID, err)
	}
	return readWave(entries).outcome == "completed", nil
}

// ClassifyUnder classifies a failure under motor m: Classify, unless the
// failure is not transient and matches a learned pattern m carries; then
// the class the pattern's confirmed fix says. The operator classifies every
// failure with it, and the promotion gate replays golden incidents with it
// under the candidate version.
func ClassifyUnder(m Motor, f Facts) Class {
	v := Classify(f)
	if p, ok := learned(m, f.Stage, f.Error); ok && !v.Transient {
		v = Class{Classification: p.Classification, Taxonomy: p.Taxonomy, Rule: fmt.Sprintf("learned pattern %s (fixed by %s, motor %s)", p.ID, p.Fix, m.Version)}
	}
	return v
}

// learned returns the current motor's learned pattern a failure at stage
// with errName matches.
func learned(m Motor, stage, errName string) (Pattern, bool) {
	for _, p := range m.Learned {
		if p.Matches(stage, errName) {
			return p, true
		}
	}
	return Pattern{}, false
}

// ResumedUnder returns the motor version a wave's latest resume sent it on
// under, read from its ledger entries (the resuming step, recorded before the
// wave leaves its pause): a stage that runs again after the resume decides
// under exactly that version, even when its process read the motor before a
// promotion the resume made. ok is false when the wave was never resumed.
func ResumedUnder(entries []ora.Entry) (version string, ok bool) {
	w := readWave(entries)
	rec, found := w.latest()
	if !found {
		return "", false
	}
	steps := w.steps[rec.DecisionID]
	for _, q := range []string{qResumed, qResuming} {
		if v := steps[q].MotorVersion; v != "" {
			return v, true
		}
	}
	return "", false
}

// AppPatchOf returns the app patch a wave's latest resume applied, read from
// its ledger entries: what a stage that runs again after the resume is to
// use in place of what it read before (the wave's state carries the same
// patch as operation.app_patch). ok is false when the wave was not resumed
// with one.
func AppPatchOf(entries []ora.Entry) (p AppPatch, ok bool) {
	w := readWave(entries)
	rec, found := w.latest()
	if !found {
		return AppPatch{}, false
	}
	b, done := w.steps[rec.DecisionID][qResumed]
	if !done || b.Patch == nil {
		return AppPatch{}, false
	}
	return *b.Patch, true
}
