package embedded

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// safetyResult returns the safety validator's recorded result of a signal.
func safetyResult(t *testing.T, r *Runtime, signalID string) (ora.ValidatorResult, bool) {
	t.Helper()
	entries, err := r.ledger.Entries(context.Background(), signalID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		var v ora.ValidatorResult
		if e.Kind == ora.KindValidatorResult && json.Unmarshal(e.Body, &v) == nil && v.Validator == ora.ValidatorSafety {
			return v, true
		}
	}
	return ora.ValidatorResult{}, false
}

// A promoted motor's validator settings reach the next wave of ora dev:
// forbidden paths that take in the log notifier's target fail the safety
// validation of a tier-2 wave that passed before; after the rollback the
// next wave passes again.
func TestPromotedValidatorSettingsReachTheNextWave(t *testing.T) {
	ctx := context.Background()
	r, err := New(ctx, testConfig(t, t.TempDir()), func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	// test-medium: a notify at tier 2, so safety validates it.
	wave := func(key string, want ...string) (operate.OperatorState, ora.ValidatorResult) {
		t.Helper()
		rec := send(t, r, srv.URL, key, `{"confidence":"medium"}`)
		st := waitOperator(t, r, rec.WaveID, want...)
		v, ok := safetyResult(t, r, rec.SignalID)
		if !ok {
			t.Fatalf("wave %s: no safety validator result", key)
		}
		return st, v
	}
	if st, v := wave("settings-before", operate.StateSuccess); v.Verdict != ora.Pass {
		t.Fatalf("under the base motor: %s, safety %s (%s)", st.State, v.Verdict, v.Summary)
	}
	rules := regexp.MustCompile(`(?m)^version: .*$`).ReplaceAllString(string(defaultrules.Default), `version: "1.0.0"`)
	b := motor.Bundle{Version: "1.0.0", Rules: rules, Validators: json.RawMessage(`{"safety":{"forbidden_paths":["log"]}}`),
		Changelog: "no action may reach the log notifier"}
	if _, err := r.motors.Propose(ctx, b); err != nil {
		t.Fatalf("propose: %v", err)
	}
	if _, err := r.motors.Promote(ctx, "1.0.0", "tighten safety", "tester"); err != nil {
		t.Fatalf("promote: %v", err)
	}
	st, v := wave("settings-after", operate.StatePaused, operate.StateFailed, operate.StateSuccess)
	if v.Verdict != ora.Fail || !strings.Contains(v.Summary, `forbidden path "log" of motor 1.0.0`) || st.State == operate.StateSuccess {
		t.Fatalf("under motor 1.0.0: wave %s, safety %s (%s); want a FAIL naming the motor's forbidden path", st.State, v.Verdict, v.Summary)
	}
	if _, err := r.motors.Rollback(ctx, "undo", "tester"); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if st, v := wave("settings-rolled-back", operate.StateSuccess); v.Verdict != ora.Pass {
		t.Fatalf("after the rollback: %s, safety %s (%s)", st.State, v.Verdict, v.Summary)
	}
}

// ora dev refuses a proposed motor whose model profile names a model the
// configured reasoner does not list (reasoner.bedrock: model and
// fallback_models), naming it and the allowed ones; one that names a
// configured model is stored.
func TestProposedModelsAreTheConfiguredOnes(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, t.TempDir())
	cfg.Reasoner.Bedrock.Model, cfg.Reasoner.Bedrock.FallbackModels = reason.GlobalSonnet45, []string{reason.GlobalHaiku45}
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rules := regexp.MustCompile(`(?m)^version: .*$`).ReplaceAllString(string(defaultrules.Default), `version: "1.0.0"`)
	b := motor.Bundle{Version: "1.0.0", Rules: rules, Changelog: "another model",
		Model: json.RawMessage(`{"model":"` + reason.GlobalHaiku45 + `","fallback_models":["` + reason.DefaultModel + `"]}`)}
	_, err = r.motors.Propose(ctx, b)
	if ora.ErrorCode(err) != ora.EINVALID || ora.ErrorField(err) != "model.fallback_models[0]" ||
		!strings.Contains(err.Error(), reason.DefaultModel) || !strings.Contains(err.Error(), reason.GlobalSonnet45+", "+reason.GlobalHaiku45) {
		t.Fatalf("propose with an unconfigured fallback: %v, want EINVALID naming %s and the configured models", err, reason.DefaultModel)
	}
	b.Model = json.RawMessage(`{"model":"` + reason.GlobalHaiku45 + `","fallback_models":["` + reason.GlobalSonnet45 + `"]}`)
	if _, err := r.motors.Propose(ctx, b); err != nil {
		t.Fatalf("propose with the configured models swapped: %v", err)
	}
}
