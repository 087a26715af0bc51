package validate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/sqlite"
	"github.com/ora-runtime/ora/shared/validate"
)

// guard and judge are fakes with function fields.
type guard struct {
	check func(source string, texts ...string) bedrock.GuardVerdict
}

func (g guard) Check(_ context.Context, source string, texts ...string) (bedrock.GuardVerdict, error) {
	return g.check(source, texts...), nil
}

type judge struct {
	judge func(d ora.ReasonerDecision) reason.IntentVerdict
}

func (j judge) Judge(_ context.Context, d ora.ReasonerDecision, _ any) (reason.IntentVerdict, error) {
	return j.judge(d), nil
}

var versionLine = regexp.MustCompile(`(?m)^version: .*$`)

// motorBundle is the default rules under version v with a validators block.
func motorBundle(v, validators string) motor.Bundle {
	r := versionLine.ReplaceAllString(string(defaultrules.Default), `version: "`+v+`"`)
	return motor.Bundle{Version: v, Rules: r, Validators: json.RawMessage(validators), Changelog: "validators: " + validators}
}

// wave records a signal and a decision of tier that writes one object
// (key out/<n>.txt holding body), and runs the actor on it.
func wave(t *testing.T, db *sqlite.DB, root string, n, tier int, body string) (signalID, decisionID string) {
	t.Helper()
	ctx := context.Background()
	signalID, decisionID = fmt.Sprintf("s%d", n), fmt.Sprintf("d%d", n)
	raw := []byte(`{"text":"` + body + `"}`)
	sig := ora.NormalizedSignal{
		ID: signalID, Source: ora.Source{Type: ora.SourceWebhook, Name: "demo", Provider: "none", EventType: "note"},
		Timestamp: time.Now().UTC(), Payload: raw, NormalizedAt: time.Now().UTC(), DedupKey: signalID, RawDigest: ora.Digest(raw), Raw: raw,
	}
	e, err := ora.NewEntry(signalID, ora.KindSignalReceived, "", sig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	d := acttest.Decision(decisionID, signalID, ora.Scope{AllowedOperations: []string{act.TypeObjectPut}},
		ora.Action{Type: act.TypeObjectPut, Parameters: acttest.Params(t, map[string]any{"key": fmt.Sprintf("out/%d.txt", n), "body": body})})
	d.Tier = tier
	acttest.Record(t, db, d)
	cfg := act.Config{Object: act.ObjectConfig{AllowedPrefixes: []string{"out/"}}}
	reg := act.Standard(cfg, act.NewLogNotify(quiet), act.Folder{Root: root}, db, nil)
	if _, err := act.New(db, reg, acttest.Once(db), func(o *act.Options) { o.Log = quiet }).Act(ctx, signalID, decisionID); err != nil {
		t.Fatalf("act: %v", err)
	}
	return signalID, decisionID
}

// TestMotorValidatorSettings: the validators read the current motor
// version's validator settings: a wave validated after a promotion runs
// under the promoted settings, one after the rollback under the defaults
// again, and a PASS that a setting made possible says which check was not
// asked.
func TestMotorValidatorSettings(t *testing.T) {
	cases := []struct {
		name       string
		validators string // the promoted version's validators block
		validator  ora.Validator
		tier       int
		body       string // "blocked" makes the guardrail intervene
		before     ora.Verdict
		after      ora.Verdict
		says       string // in the summary under the promoted version
	}{
		{"forbidden paths tighten safety", `{"safety":{"forbidden_paths":["out/*"]}}`, ora.ValidatorSafety, 2, "report",
			ora.Pass, ora.Fail, `matches forbidden path "out/*" of motor 1.0.0's validator settings`},
		{"the guardrail from tier 3", `{"safety":{"guardrail_min_tier":3}}`, ora.ValidatorSafety, 2, "blocked",
			ora.Fail, ora.Pass, "the guardrail not asked: off for tier 2 under motor 1.0.0"},
		{"the guardrail off", `{"safety":{"guardrail":false}}`, ora.ValidatorSafety, 3, "blocked",
			ora.Fail, ora.Pass, "the guardrail not asked: off for tier 3 under motor 1.0.0"},
		{"the guardrail from tier 3 still checks tier 3", `{"safety":{"guardrail_min_tier":3}}`, ora.ValidatorSafety, 3, "blocked",
			ora.Fail, ora.Fail, "the guardrail intervened"},
		{"the intent judge off", `{"intent":{"judge":false}}`, ora.ValidatorIntent, 3, "report",
			ora.Fail, ora.Pass, "the intent judge not asked: off for tier 3 under motor 1.0.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db, root := acttest.DB(t), t.TempDir()
			base, err := motor.NewBase(defaultrules.Default, "base", 0)
			if err != nil {
				t.Fatal(err)
			}
			reg := motor.NewRegistry(db, base, nil)
			var guarded, judged int
			svc := validate.New(db, func(o *validate.Options) {
				o.Objects, o.Commitments, o.Motor = act.Folder{Root: root}, db, reg
				o.Guardrail = guard{check: func(_ string, texts ...string) bedrock.GuardVerdict {
					guarded++
					for _, x := range texts {
						if strings.Contains(x, "blocked") {
							return bedrock.GuardVerdict{Intervened: true, Policies: []string{"topic:blocked"}}
						}
					}
					return bedrock.GuardVerdict{}
				}}
				o.IntentJudge = judge{judge: func(ora.ReasonerDecision) reason.IntentVerdict {
					judged++
					return reason.IntentVerdict{Fulfilled: false, Reasoning: "no", Unmet: []string{"the report"}}
				}}
			})
			run := func(n int) ora.ValidatorResult {
				t.Helper()
				s, d := wave(t, db, root, n, tc.tier, tc.body)
				r, err := svc.Validate(ctx, tc.validator, s, d)
				if r.Verdict == "" {
					t.Fatalf("wave %d: no verdict: %v", n, err)
				}
				return r
			}
			if r := run(1); r.Verdict != tc.before {
				t.Fatalf("under the base motor: %s (%s), want %s", r.Verdict, r.Summary, tc.before)
			}
			if _, err := reg.Propose(ctx, motorBundle("1.0.0", tc.validators)); err != nil {
				t.Fatalf("propose: %v", err)
			}
			if _, err := reg.Promote(ctx, "1.0.0", "test", "t"); err != nil {
				t.Fatalf("promote: %v", err)
			}
			asked := guarded + judged
			r := run(2)
			if r.Verdict != tc.after || !strings.Contains(r.Summary, tc.says) {
				t.Errorf("under motor 1.0.0: %s (%s), want %s saying %q", r.Verdict, r.Summary, tc.after, tc.says)
			}
			if tc.after == ora.Pass && guarded+judged != asked {
				t.Errorf("the guardrail or the judge was asked %d times under a motor that turned it off", guarded+judged-asked)
			}
			if _, err := reg.Rollback(ctx, "test", "t"); err != nil {
				t.Fatalf("rollback: %v", err)
			}
			if r := run(3); r.Verdict != tc.before || strings.Contains(r.Summary, "1.0.0") {
				t.Errorf("after the rollback: %s (%s), want %s under the defaults", r.Verdict, r.Summary, tc.before)
			}
		})
	}
}

// TestProposeRefusesBadValidatorSettings: a malformed validators block is
// refused when the version is proposed, naming the field, and nothing is
// stored.
func TestProposeRefusesBadValidatorSettings(t *testing.T) {
	cases := []struct {
		name, validators, field string
	}{
		{"unknown setting", `{"safety":{"guardrail_min_tire":3}}`, "validators.safety.guardrail_min_tire"},
		{"unknown validator", `{"witness":{}}`, "validators.witness"},
		{"wrong type", `{"intent":{"judge":"no"}}`, "validators.intent.judge"},
		{"out of range", `{"safety":{"guardrail_min_tier":1}}`, "validators.safety.guardrail_min_tier"},
		{"empty pattern", `{"safety":{"forbidden_paths":["a/*",""]}}`, "validators.safety.forbidden_paths[1]"},
		{"a list of patterns", `{"safety":{"forbidden_paths":"a/*"}}`, "validators.safety.forbidden_paths"},
		{"not an object", `[1]`, "validators"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := acttest.DB(t)
			base, _ := motor.NewBase(defaultrules.Default, "base", 0)
			reg := motor.NewRegistry(db, base, nil)
			_, err := reg.Propose(ctx, motorBundle("1.0.0", tc.validators))
			if ora.ErrorCode(err) != ora.EINVALID || ora.ErrorField(err) != tc.field {
				t.Fatalf("propose: %v (field %q), want EINVALID naming %s", err, ora.ErrorField(err), tc.field)
			}
			vs, _, _ := reg.Versions(ctx)
			if len(vs) != 1 {
				t.Errorf("%d versions stored after a refused proposal, want the base only", len(vs))
			}
		})
	}
}
