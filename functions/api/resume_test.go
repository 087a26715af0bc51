package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// tokens records the task tokens handed back (Step Functions'
// SendTaskSuccess).
type tokens struct {
	mu   sync.Mutex
	sent map[string]string
}

func (k *tokens) SendTaskSuccess(_ context.Context, token string, out []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sent[token] = string(out)
	return nil
}

// The api function's resume and learned-pattern routes over DynamoDB Local,
// wired as main wires them: a motor incident's resume is refused without a
// version, with an app patch, with a version nobody proposed and with one the
// gate fails (409 naming the case, the wave still paused); with a passing
// version it promotes it and resumes under it. The completed wave makes a
// learned pattern, which is promoted as the next motor version.
func TestResumeRoutesOverDynamoDB(t *testing.T) {
	ctx := context.Background()
	ledger := acttest.Dynamo(t).Ledger
	base, _ := motor.NewBase(defaultrules.Default, "default", 0)
	gate := func(_ context.Context, b motor.Bundle) ([]string, error) {
		if b.Version == "1.2.0" {
			return []string{"demo-high"}, nil
		}
		return nil, nil
	}
	motors := motor.NewRegistry(ledger, base, gate)
	for _, v := range []string{"1.1.0", "1.2.0"} {
		rulesText := regexp.MustCompile(`(?m)^version: .*$`).ReplaceAllString(string(defaultrules.Default), `version: "`+v+`"`)
		if _, err := motors.Propose(ctx, motor.Bundle{Version: v, Rules: rulesText, Changelog: "fix " + v}); err != nil {
			t.Fatal(err)
		}
	}
	sent := &tokens{sent: map[string]string{}}
	ops := operate.New(ledger, func(o *operate.Options) {
		o.Resumer = sent
		o.Motor = func(ctx context.Context) (operate.Motor, error) {
			b, prev, since, err := motors.Current(ctx)
			return motor.OperatorMotor(b, prev, since), err
		}
		o.Promote = func(ctx context.Context, version, reason, by string) error {
			_, err := motors.Promote(ctx, version, reason, by)
			return err
		}
	})
	now := time.Now().UTC()
	sig := ora.NormalizedSignal{ID: "w1", Source: ora.Source{Type: ora.SourceWebhook, Name: "demo", Provider: "hmac"},
		Timestamp: now, NormalizedAt: now, Payload: json.RawMessage(`{"confidence":"low"}`), DedupKey: "d-w1", RawDigest: ora.Digest([]byte("w1"))}
	e, _ := ora.NewEntry("w1", ora.KindSignalReceived, "", sig)
	if _, err := ledger.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	out, err := ops.Operate(ctx, operate.Input{SignalID: "w1", Wave: json.RawMessage(`{"plan":{},"packet":{}}`),
		Failure: operate.Failure{Error: "InternalError", Cause: "the rule's template is incomplete"}, EnteredAt: "t1"})
	if err != nil || out.Classification != "motor" {
		t.Fatalf("operate: %+v, %v", out, err)
	}
	if err := ops.Pause(ctx, "w1", out.OperatorDecisionID, "tok-1"); err != nil {
		t.Fatal(err)
	}
	h := New(ledger, fakeWaves{}, &fakeVerdicts{}, DefaultResourceServer, nil, func(s *httpapi.Server) {
		s.Operator, s.Motor, s.Learned = ops, motors, motor.Learner{Patterns: ops, Registry: motors}
	})
	pattern := operate.PatternID(operate.MotorRules, "Reason", "InternalError")
	steps := []struct {
		name, method, path, body string
		then                     func() // before the request
		want                     int
		wantBody                 string
	}{
		{name: "no version", method: "POST", path: "/waves/w1/resume", body: `{}`, want: 400, wantBody: "resumes under a new motor version"},
		{name: "an app patch", method: "POST", path: "/waves/w1/resume", body: `{"patch":{"kind":"input","target":"confidence","value":"high"}}`, want: 400, wantBody: "needs a motor version"},
		{name: "a version nobody proposed", method: "POST", path: "/waves/w1/resume", body: `{"motor_version":"7.0.0"}`, want: 404, wantBody: "7.0.0"},
		{name: "a version the gate fails", method: "POST", path: "/waves/w1/resume", body: `{"motor_version":"1.2.0"}`, want: 409, wantBody: `"failing":["demo-high"]`},
		{name: "no pattern yet", method: "GET", path: "/motor/patterns", want: 200, wantBody: `{"patterns":[]}`},
		{name: "a version that passes", method: "POST", path: "/waves/w1/resume", body: `{"motor_version":"1.1.0","reason":"complete the template"}`, want: 200, wantBody: "promoted motor 1.1.0 through the gate"},
		{name: "the wave completed: a pattern", method: "GET", path: "/motor/patterns", want: 200, wantBody: `"fix":"motor@1.1.0"`, then: func() {
			v, _ := ora.NewEntry("w1", ora.KindFinalVerdict, "", operate.Verdict{Outcome: "completed", At: time.Now().UTC()})
			if _, err := ledger.Append(ctx, v); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "patterns need ora.read", method: "GET", path: "/motor/patterns", want: 403, wantBody: "ora.read"},
		{name: "promote the pattern", method: "POST", path: "/motor/patterns/" + pattern + "/promote", body: `{"reason":"learned"}`, want: 200, wantBody: `"version":"1.1.1"`},
		{name: "promote it again", method: "POST", path: "/motor/patterns/" + pattern + "/promote", body: `{}`, want: 409, wantBody: "already"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.then != nil {
				st.then()
			}
			scope := "ora/ora.operate"
			if st.method == "GET" {
				scope = "ora/ora.read"
			}
			if st.want == 403 {
				scope = "ora/ora.approve"
			}
			resp := invoke(t, h, request(t, st.method, st.path, "", st.body, scope))
			if resp.StatusCode != st.want || !strings.Contains(resp.Body, st.wantBody) {
				t.Fatalf("%s %s: %d %s, want %d containing %s", st.method, st.path, resp.StatusCode, resp.Body, st.want, st.wantBody)
			}
			if st.want != 200 && st.method == "POST" && strings.Contains(st.path, "resume") {
				if ws, _ := ops.WaveState(ctx, "w1", "RUNNING"); ws.State != operate.StatePaused || len(sent.sent) != 0 {
					t.Errorf("after a refused resume: %s, tokens %v; want PAUSED, none sent", ws.State, sent.sent)
				}
			}
		})
	}
	if !strings.Contains(sent.sent["tok-1"], `"motor_version":"1.1.0"`) {
		t.Errorf("the token's output: %s", sent.sent["tok-1"])
	}
	if cur, _, _, _ := motors.Current(ctx); cur.Version != "1.1.1" || len(cur.Learned) != 1 || cur.Learned[0].ID != pattern {
		t.Errorf("the current motor: %s carrying %+v", cur.Version, cur.Learned)
	}
}
