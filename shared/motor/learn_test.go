package motor_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// patterns is a fixed list of learned patterns.
type patterns []operate.Pattern

func (ps patterns) Patterns(context.Context) ([]operate.Pattern, error) { return ps, nil }

func (ps patterns) Pattern(_ context.Context, id string) (operate.Pattern, error) {
	for _, p := range ps {
		if p.ID == id {
			return p, nil
		}
	}
	return operate.Pattern{}, ora.Errorf(ora.ENOTFOUND, "no learned pattern %q", id)
}

func learnedPattern(tax, stage, errName, class string) operate.Pattern {
	return operate.Pattern{ID: operate.PatternID(tax, stage, errName), Classification: class, Taxonomy: tax, Stage: stage, Error: errName,
		Fix: "app-patch:mapping@3f2a9c0d1e2b", Incident: "incident-0123456789abcdef", Wave: "sig_1", Confirmed: 2}
}

// A learned pattern is promoted as the next patch version of the current
// motor, through the gate; its sha256 covers the pattern; the operator's view
// of the motor carries it; a later proposal keeps it; promoting it twice, an
// unknown pattern, or one the gate refuses are errors.
func TestLearnerPromotes(t *testing.T) {
	for _, st := range acttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			ctx := context.Background()
			l := st.Open(t).Ledger
			var gateFails []string
			gate := func(_ context.Context, b motor.Bundle) ([]string, error) { return gateFails, nil }
			reg := motor.NewRegistry(l, bundle("1.0.0"), gate)
			p := learnedPattern(operate.AppSpec, "Reason", "InternalError", operate.ClassApp)
			other := learnedPattern(operate.MotorRules, "Act", "DecodeError", operate.ClassMotor)
			lr := motor.Learner{Patterns: patterns{p, other}, Registry: reg}

			b, ev, err := lr.Promote(ctx, p.ID, "", "olga")
			if err != nil {
				t.Fatalf("promote: %v", err)
			}
			if b.Version != "1.0.1" || ev.Version != "1.0.1" || ev.Previous != "1.0.0" || len(b.Learned) != 1 || b.Learned[0].ID != p.ID {
				t.Fatalf("promoted %+v (%+v), want 1.0.1 carrying %s", b, ev, p.ID)
			}
			if !strings.Contains(b.Rules, `version: "1.0.1"`) || !strings.Contains(b.Changelog, p.ID) {
				t.Errorf("rules version or changelog: %q", b.Changelog)
			}
			// The digest is the sha256 of the bundle, the pattern included.
			without := b
			without.Learned = nil
			w, _, err := without.Check()
			if err != nil || len(b.Digest) != 64 || w.Digest == b.Digest {
				t.Errorf("digest %q, without the pattern %q (%v): want two different sha256", b.Digest, w.Digest, err)
			}
			cur, prev, since, err := reg.Current(ctx)
			if err != nil || cur.Version != "1.0.1" {
				t.Fatalf("current: %s, %v", cur.Version, err)
			}
			if om := motor.OperatorMotor(cur, prev, since); len(om.Learned) != 1 || om.Learned[0].ID != p.ID || om.Previous != "1.0.0" {
				t.Errorf("the operator's motor: %+v", om)
			}
			if _, _, err := lr.Promote(ctx, p.ID, "", "olga"); ora.ErrorCode(err) != ora.ECONFLICT || !strings.Contains(err.Error(), "already") {
				t.Errorf("promote twice: %v, want a conflict", err)
			}
			if _, _, err := lr.Promote(ctx, "pattern-none", "", "olga"); ora.ErrorCode(err) != ora.ENOTFOUND {
				t.Errorf("unknown pattern: %v, want not found", err)
			}
			// A proposal that does not name learned patterns keeps them.
			next, err := reg.Propose(ctx, bundle("1.1.0"))
			if err != nil || len(next.Learned) != 1 {
				t.Errorf("a later proposal: %+v, %v; want it to keep the pattern", next.Learned, err)
			}
			// The gate refuses: named, and the motor stays.
			gateFails = []string{"incidents/reason-timeout"}
			_, _, err = lr.Promote(ctx, other.ID, "", "olga")
			if ge, ok := ora.Existing[*motor.GateError](err); !ok || ge.Failing[0] != "incidents/reason-timeout" {
				t.Errorf("a failing gate: %v, want a GateError naming the case", err)
			}
			if cur, _, _, _ := reg.Current(ctx); cur.Version != "1.0.1" {
				t.Errorf("after a refused promotion the current is %s, want 1.0.1", cur.Version)
			}
		})
	}
}

// A learned pattern in a bundle is checked: its id is its fingerprint's, its
// taxonomy belongs to its classification.
func TestCheckLearned(t *testing.T) {
	good := learnedPattern(operate.AppSpec, "Reason", "InternalError", operate.ClassApp)
	cases := []struct {
		name  string
		edit  func(*operate.Pattern)
		field string
	}{
		{"fine", func(*operate.Pattern) {}, ""},
		{"class of another taxonomy", func(p *operate.Pattern) { p.Classification = operate.ClassMotor }, "learned[0].taxonomy"},
		{"no stage", func(p *operate.Pattern) { p.Stage = "" }, "learned[0]"},
		{"an id of another fingerprint", func(p *operate.Pattern) { p.ID = "pattern-0000000000000000" }, "learned[0].id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := good
			tc.edit(&p)
			b := bundle("1.0.0")
			b.Learned = []operate.Pattern{p}
			_, _, err := b.Check()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("got %v", err)
				}
				return
			}
			var e *ora.Error
			if ora.ErrorCode(err) != ora.EINVALID || !errors.As(err, &e) || e.Field != tc.field {
				t.Errorf("got %v, want EINVALID on %s", err, tc.field)
			}
		})
	}
}
