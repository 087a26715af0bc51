package motor_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
)

var versionLine = regexp.MustCompile(`(?m)^version: .*$`)

// bundle is the default rules under version v, edited by replacing old with new.
func bundle(v string, edits ...string) motor.Bundle {
	r := versionLine.ReplaceAllString(string(defaultrules.Default), `version: "`+v+`"`)
	for i := 0; i+1 < len(edits); i += 2 {
		r = strings.Replace(r, edits[i], edits[i+1], 1)
	}
	return motor.Bundle{Version: v, Rules: r, Changelog: "test " + v}
}

func base() motor.Bundle {
	return motor.Bundle{Version: "2026-11-22.2", Rules: string(defaultrules.Default), Changelog: "base"}
}

func TestParseVersion(t *testing.T) {
	for v, ok := range map[string]bool{"1.2.3": true, "0.0.1": true, "10.20.30": true, "1.2": false, "v1.2.3": false, "1.02.3": false, "1.2.x": false, "": false} {
		if _, err := motor.ParseVersion(v); (err == nil) != ok {
			t.Errorf("ParseVersion(%q): %v, want ok=%v", v, err, ok)
		}
	}
	if !motor.Less("1.9.0", "1.10.0") || motor.Less("1.10.0", "1.9.0") || !motor.Less("2026-11-22.2", "0.0.1") {
		t.Error("Less orders semantic versions numerically, non-semantic ones first")
	}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name  string
		b     motor.Bundle
		field string
	}{
		{"not semver", motor.Bundle{Version: "one", Rules: "x", Changelog: "c"}, "version"},
		{"no rules", motor.Bundle{Version: "1.0.0", Changelog: "c"}, "rules"},
		{"rules of another version", func() motor.Bundle { b := bundle("1.0.0"); b.Version = "1.0.1"; return b }(), "rules.version"},
		{"no changelog", func() motor.Bundle { b := bundle("1.0.0"); b.Changelog = ""; return b }(), "changelog"},
		{"model not JSON", func() motor.Bundle { b := bundle("1.0.0"); b.Model = []byte("{"); return b }(), "model"},
		{"negative budget", func() motor.Bundle { b := bundle("1.0.0"); b.Orientation.TokenBudget = -1; return b }(), "orientation.token_budget"},
		{"validators not JSON", func() motor.Bundle { b := bundle("1.0.0"); b.Validators = []byte("{"); return b }(), "validators"},
		{"validators: unknown setting", func() motor.Bundle {
			b := bundle("1.0.0")
			b.Validators = []byte(`{"intent":{"judge":true,"threshold":0.5}}`)
			return b
		}(), "validators.intent.threshold"},
		{"validators: bad value", func() motor.Bundle {
			b := bundle("1.0.0")
			b.Validators = []byte(`{"safety":{"guardrail_min_tier":4}}`)
			return b
		}(), "validators.safety.guardrail_min_tier"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tc.b.Check()
			if got := ora.ErrorField(err); got != tc.field {
				t.Errorf("field: got %q (%v), want %q", got, err, tc.field)
			}
		})
	}
	b, _, err := bundle("1.0.0").Check()
	if err != nil || len(b.Digest) != 64 {
		t.Errorf("a good bundle: %+v, %v", b.Digest, err)
	}
	b = bundle("1.0.0")
	b.Validators = []byte(`{"safety":{"guardrail":false,"guardrail_min_tier":3,"forbidden_paths":["secrets/*"]},"intent":{"judge":false}}`)
	if _, _, err := b.Check(); err != nil {
		t.Errorf("a bundle setting every validator setting: %v", err)
	}
}

// TestValidatorSettings: a block sets what it names; what it leaves out
// keeps the defaults.
func TestValidatorSettings(t *testing.T) {
	def := motor.DefaultValidatorSettings()
	if !def.Safety.GuardrailOn() || def.Safety.GuardrailFrom() != 2 || !def.Intent.JudgeOn() || len(def.Safety.ForbiddenPaths) != 0 {
		t.Errorf("defaults: %+v", def)
	}
	for raw, want := range map[string]func(motor.ValidatorSettings) bool{
		``: func(s motor.ValidatorSettings) bool {
			return s.Safety.GuardrailOn() && s.Safety.GuardrailFrom() == 2 && s.Intent.JudgeOn()
		},
		`null`: func(s motor.ValidatorSettings) bool { return s.Safety.GuardrailOn() && s.Intent.JudgeOn() },
		`{"intent":{"judge":false}}`: func(s motor.ValidatorSettings) bool {
			return !s.Intent.JudgeOn() && s.Safety.GuardrailOn() && s.Safety.GuardrailFrom() == 2
		},
		`{"safety":{"guardrail_min_tier":3}}`: func(s motor.ValidatorSettings) bool {
			return s.Safety.GuardrailOn() && s.Safety.GuardrailFrom() == 3 && s.Intent.JudgeOn()
		},
	} {
		s, err := motor.ParseValidatorSettings([]byte(raw))
		if err != nil || !want(s) {
			t.Errorf("%q: %+v, %v", raw, s, err)
		}
	}
}

// The golden set passes under the shipped rules; a motor that changes a
// decision fails it, wave by wave.
func TestReplay(t *testing.T) {
	golden, err := motor.Golden()
	if err != nil {
		t.Fatal(err)
	}
	if len(golden) < 5 {
		t.Fatalf("golden set: %d waves, want at least 5", len(golden))
	}
	rep, err := motor.Replay(context.Background(), base(), golden)
	if err != nil || len(rep.Failing) != 0 {
		t.Fatalf("the shipped rules fail the golden set: %+v, %v", rep, err)
	}
	worse := bundle("1.0.0", "confidence: 0.95", "confidence: 0.6")
	rep, _ = motor.Replay(context.Background(), worse, golden)
	if strings.Join(rep.Failing, ",") != "demo-high" {
		t.Fatalf("failing: %v, want [demo-high]", rep.Failing)
	}
	for _, c := range rep.Waves {
		if c.Name == "demo-high" && (strings.Join(c.Changed, ",") != "band" || c.Got.Band != "medium") {
			t.Errorf("demo-high: %+v, want the band changed to medium", c)
		}
	}
	diff := motor.Diff(base(), worse)
	if !strings.Contains(strings.Join(diff, "\n"), "rules + confidence: 0.6") {
		t.Errorf("diff: %v", diff)
	}
}

// Propose, a gated promotion, rollback, over both ledgers.
func TestRegistry(t *testing.T) {
	golden, _ := motor.Golden()
	for _, st := range acttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			ctx := context.Background()
			reg := motor.NewRegistry(st.Open(t).Ledger, base(), motor.GoldenGate(golden))
			if cur, prev, _, _ := reg.Current(ctx); cur.Version != "2026-11-22.2" || prev != "" {
				t.Fatalf("initial: %s (previous %q)", cur.Version, prev)
			}
			if _, err := reg.Rollback(ctx, "nothing yet", "t"); ora.ErrorCode(err) != ora.ECONFLICT {
				t.Errorf("rollback with nothing before: %v", err)
			}
			// A version that changes a golden decision is refused, naming the wave.
			if _, err := reg.Propose(ctx, bundle("1.0.0", "confidence: 0.95", "confidence: 0.6")); err != nil {
				t.Fatal(err)
			}
			_, err := reg.Promote(ctx, "1.0.0", "try", "t")
			if ora.ErrorCode(err) != ora.ECONFLICT || !strings.Contains(err.Error(), "demo-high") {
				t.Fatalf("promote a failing motor: %v, want a conflict naming demo-high", err)
			}
			if _, err := reg.Propose(ctx, bundle("1.0.0")); ora.ErrorCode(err) != ora.ECONFLICT {
				t.Errorf("re-propose 1.0.0 with other content: %v, want a conflict", err)
			}
			if _, err := reg.Promote(ctx, "9.9.9", "x", "t"); ora.ErrorCode(err) != ora.ENOTFOUND {
				t.Errorf("promote an unknown version: %v", err)
			}
			// A passing version promotes; proposing it twice is harmless.
			good := bundle("1.0.1", "reasoning: Pushes to the default branch are routine; the team is told.", "reasoning: Pushes to the default branch are routine.")
			for range 2 {
				if _, err := reg.Propose(ctx, good); err != nil {
					t.Fatal(err)
				}
			}
			ev, err := reg.Promote(ctx, "1.0.1", "fix MOTOR-RULES", "olga")
			if err != nil || ev.Previous != "2026-11-22.2" || ev.Changelog != "test 1.0.1" || ev.Seq != 1 {
				t.Fatalf("promote: %+v, %v", ev, err)
			}
			set, _ := reg.Rules(ctx)
			if cur, prev, _, _ := reg.Current(ctx); cur.Version != "1.0.1" || prev != "2026-11-22.2" || set.Version() != "1.0.1" {
				t.Errorf("current after promote: %s (previous %s), rules %s", cur.Version, prev, set.Version())
			}
			vs, events, _ := reg.Versions(ctx)
			status := map[string]string{}
			for _, v := range vs {
				status[v.Version] = v.Status
			}
			if status["1.0.1"] != "current" || status["2026-11-22.2"] != "previous" || status["1.0.0"] != "proposed" || len(events) != 1 {
				t.Errorf("versions: %v, events %d", status, len(events))
			}
			// Rollback restores the previous version, recorded with its reason.
			ev, err = reg.Rollback(ctx, "regression", "olga")
			if err != nil || ev.Version != "2026-11-22.2" || ev.Type != "rollback" || ev.Reason != "regression" {
				t.Fatalf("rollback: %+v, %v", ev, err)
			}
			if cur, _, _, _ := reg.Current(ctx); cur.Version != "2026-11-22.2" {
				t.Errorf("current after rollback: %s", cur.Version)
			}
		})
	}
}

// Two promotions, then two rollbacks walk back down: 1.0.1 -> 1.0.0 -> base.
func TestRollbackWalksBack(t *testing.T) {
	ctx := context.Background()
	reg := motor.NewRegistry(acttest.DB(t), base(), nil)
	for _, v := range []string{"1.0.0", "1.0.1"} {
		if _, err := reg.Propose(ctx, bundle(v)); err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Promote(ctx, v, "up", "t"); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"1.0.0", "2026-11-22.2"} {
		ev, err := reg.Rollback(ctx, "down", "t")
		cur, _, _, _ := reg.Current(ctx)
		if err != nil || ev.Version != want || cur.Version != want {
			t.Fatalf("rollback: %+v, current %s, %v; want %s", ev, cur.Version, err, want)
		}
	}
	if _, err := reg.Rollback(ctx, "down", "t"); ora.ErrorCode(err) != ora.ECONFLICT {
		t.Errorf("rollback past the base: %v, want a conflict", err)
	}
}

// withModel is bundle(v) with a model profile.
func withModel(v, profile string) motor.Bundle {
	b := bundle(v)
	b.Model = []byte(profile)
	return b
}

// TestAllowedModels: a proposal whose model profile names a model the stack
// does not let the reason function invoke is refused, naming the model and
// the allowed ones; so is the promotion of a version stored before the
// allowed list changed.
func TestAllowedModels(t *testing.T) {
	allowed := []string{"us.model-a", "us.model-b"}
	cases := []struct {
		name    string
		models  []string
		profile string
		field   string // "" accepted
		says    []string
	}{
		{"primary allowed", allowed, `{"model":"us.model-a","fallback_models":["us.model-b"]}`, "", nil},
		{"no model named", allowed, `{"max_stages":2}`, "", nil},
		{"primary not allowed", allowed, `{"model":"us.model-c"}`, "model.model", []string{`"us.model-c"`, "allowed: us.model-a, us.model-b"}},
		{"fallback not allowed", allowed, `{"model":"us.model-a","fallback_models":["us.model-b","eu.model-x"]}`, "model.fallback_models[1]", []string{`"eu.model-x"`, "us.model-a, us.model-b"}},
		{"a model id not a string", allowed, `{"model":5}`, "model.model", nil},
		{"not an object", allowed, `["us.model-a"]`, "model", nil},
		{"none allowed", []string{}, `{"model":"us.model-a"}`, "model.model", []string{"invoke no model"}},
		{"no list: not checked", nil, `{"model":"anything"}`, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := motor.NewRegistry(acttest.DB(t), base(), nil, func(o *motor.Options) { o.Models = tc.models })
			_, err := reg.Propose(context.Background(), withModel("1.0.0", tc.profile))
			if tc.field == "" {
				if err != nil {
					t.Fatalf("propose: %v, want it stored", err)
				}
				return
			}
			if ora.ErrorCode(err) != ora.EINVALID || ora.ErrorField(err) != tc.field {
				t.Fatalf("propose: %v (field %q), want EINVALID naming %s", err, ora.ErrorField(err), tc.field)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
	t.Run("promote checks again", func(t *testing.T) {
		ctx := context.Background()
		ledger := acttest.DB(t)
		// Proposed while the stack allowed model-c; promoted after it stopped.
		before := motor.NewRegistry(ledger, base(), nil, func(o *motor.Options) { o.Models = []string{"us.model-a", "us.model-c"} })
		if _, err := before.Propose(ctx, withModel("1.0.0", `{"model":"us.model-c"}`)); err != nil {
			t.Fatal(err)
		}
		after := motor.NewRegistry(ledger, base(), nil, func(o *motor.Options) { o.Models = allowed })
		_, err := after.Promote(ctx, "1.0.0", "try", "t")
		if ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), `"us.model-c"`) || !strings.Contains(err.Error(), "us.model-a, us.model-b") {
			t.Fatalf("promote: %v, want EINVALID naming us.model-c and the allowed models", err)
		}
		if cur, _, _, _ := after.Current(ctx); cur.Version != base().Version {
			t.Errorf("current: %s, want the base still", cur.Version)
		}
		if _, err := before.Promote(ctx, "1.0.0", "try", "t"); err != nil {
			t.Errorf("promote where the model is allowed: %v", err)
		}
	})
}

func TestModelsFromEnv(t *testing.T) {
	for env, want := range map[string]string{"": "", "a": "a", " a , b,": "a|b"} {
		got := motor.ModelsFromEnv(func(string) string { return env })
		if got == nil || strings.Join(got, "|") != want {
			t.Errorf("%q: %#v, want %q (never nil)", env, got, want)
		}
	}
}
