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
)

// A canary's waves are validated under the candidate's validator settings,
// not the current version's: a candidate whose forbidden paths take in the
// log notifier fails the safety validation of the wave it serves, naming
// itself, while the current motor has no such setting.
func TestCanaryWavesRunTheCandidatesValidators(t *testing.T) {
	ctx := context.Background()
	r, err := New(ctx, testConfig(t, t.TempDir()), func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	rules := regexp.MustCompile(`(?m)^version: .*$`).ReplaceAllString(string(defaultrules.Default), `version: "1.0.0"`)
	b := motor.Bundle{Version: "1.0.0", Rules: rules, Validators: json.RawMessage(`{"safety":{"forbidden_paths":["log"]}}`),
		Changelog: "no action may reach the log notifier"}
	if _, err := r.motors.Propose(ctx, b); err != nil {
		t.Fatalf("propose: %v", err)
	}
	if _, err := r.motors.Canary(ctx, "1.0.0", motor.CanaryRequest{Share: 1, Waves: 5, Reason: "try tighter safety"}, "tester"); err != nil {
		t.Fatalf("canary: %v", err)
	}
	// test-medium: a notify at tier 2, so safety validates it.
	rec := send(t, r, srv.URL, "canary-validators", `{"confidence":"medium"}`)
	st := waitOperator(t, r, rec.WaveID, operate.StatePaused, operate.StateFailed, operate.StateSuccess)
	v, ok := safetyResult(t, r, rec.SignalID)
	if !ok {
		t.Fatal("no safety validator result")
	}
	if v.Verdict != ora.Fail || !strings.Contains(v.Summary, `forbidden path "log" of motor 1.0.0`) || st.State == operate.StateSuccess {
		t.Fatalf("wave served by the canary: %s, safety %s (%s); want a FAIL under the candidate's forbidden path", st.State, v.Verdict, v.Summary)
	}
	cur, _, _, err := r.motors.Current(ctx)
	if err != nil || cur.Version == "1.0.0" {
		t.Fatalf("current motor %q, %v: the canary must not be current", cur.Version, err)
	}
}
