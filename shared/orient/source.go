package orient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Source is one source family of observation: it turns an attention rule into
// a wave's jobs (Plan) and runs one job into facts (Fetch). Adding a family is
// one file implementing it and one entry in the fetcher's and planner's
// Sources option.
type Source interface {
	// Jobs expands an enabled rule into jobs for the wave, in a
	// deterministic order, each with Kind, Target and Params set (Plan fills
	// ID, Family, Rule, Band, Weights and TimeoutMS). Errors: EINVALID naming
	// the bad predicate field, ETRANSIENT.
	Jobs(ctx context.Context, w Wave, r ora.AttentionRule) ([]Job, error)
	// Observe runs one job and returns its facts with Normalized,
	// Provenance, SourceRef, DedupeKey and CreatedAt set; Fetch sets ids,
	// band, scores and sizes. Errors: EINVALID, ETRANSIENT.
	Observe(ctx context.Context, w Wave, j Job) ([]ora.Fact, error)
}

// Wave is what a source knows of the wave it observes for.
type Wave struct {
	SignalID string
	// AsOf is when the signal was normalized: a re-run reads the same window.
	AsOf time.Time
	// Limits are the pinned profile's capability limits (Plan only).
	Limits ora.Limits
	// Drops counts what a family leaves out, by reason (Plan only; may be nil).
	Drops Drops
}

// Weights score a job's facts; they come from the job's attention rule.
type Weights struct {
	Priority        float64 `json:"priority"`
	Novelty         float64 `json:"novelty,omitempty"`
	Risk            float64 `json:"risk,omitempty"`
	HalfLifeSeconds int     `json:"half_life_seconds,omitempty"`
	// RiskWhen are the rule's risk matches: a fact they hold on is marked
	// risky (provenance "risk" = "high") before it is scored.
	RiskWhen []ora.RiskMatch `json:"risk_when,omitempty"`
}

// Risky reports whether any of w's risk matches holds on a fact's normalized
// body: the value at the match's dot path, as text, is one of its values.
func (w Weights) Risky(normalized []byte) bool {
	if len(w.RiskWhen) == 0 {
		return false
	}
	var v any
	if json.Unmarshal(normalized, &v) != nil {
		return false
	}
	for _, m := range w.RiskWhen {
		cur := v
		for _, k := range strings.Split(m.Path, ".") {
			obj, ok := cur.(map[string]any)
			if !ok {
				cur = nil
				break
			}
			cur = obj[k]
		}
		if cur == nil {
			continue
		}
		text := fmt.Sprint(cur)
		if s, ok := cur.(string); ok {
			text = s
		}
		if slices.Contains(m.In, text) {
			return true
		}
	}
	return false
}

// Score returns a fact's utility under w: Priority times a recency factor
// 0.5 + 0.5 * 2^(-age / half-life) (1 when the half-life is 0), plus Risk
// when the source marked the fact risky (provenance "risk" = "high"), plus
// Novelty when it marked it new (provenance "novel" = "true"). Rounded to six
// decimals so that it survives a JSON round trip unchanged.
func (w Weights) Score(f ora.Fact, asOf time.Time) float64 {
	u := w.Priority
	if w.HalfLifeSeconds > 0 {
		age := max(asOf.Sub(f.CreatedAt), 0)
		u *= 0.5 + 0.5*math.Exp2(-float64(age)/float64(time.Duration(w.HalfLifeSeconds)*time.Second))
	}
	if f.Provenance["risk"] == "high" {
		u += w.Risk
	}
	if f.Provenance["novel"] == "true" {
		u += w.Novelty
	}
	return math.Round(u*1e6) / 1e6
}

// predicate decodes a rule's predicate strictly into v. Errors: EINVALID
// naming the rule's predicate.
func predicate(r ora.AttentionRule, v any) error {
	if err := decodeStrict(r.Predicate, v); err != nil {
		return ora.Invalid("rules."+r.ID+".predicate", "%v", err)
	}
	return nil
}

// decodeStrict decodes one JSON value into v, refusing unknown fields and
// trailing data (fail closed).
func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
