package handler

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
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// clock is a hand-moved clock for the registry's cache TTL.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// orientedIn stores a test-source signal and compiles its packet in any ledger.
func orientedIn(t *testing.T, l ora.Ledger, id, payload string) {
	t.Helper()
	ctx := context.Background()
	sig := ora.NormalizedSignal{
		ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: "test", Provider: "hmac"},
		Timestamp: at, NormalizedAt: at, Payload: json.RawMessage(payload), DedupKey: "d-" + id, RawDigest: ora.Digest([]byte(payload)),
	}
	e, err := ora.NewEntry(id, ora.KindSignalReceived, "", sig)
	if err != nil {
		t.Fatal(err)
	}
	e.CreatedAt = at
	if _, err := l.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := orient.NewCompiler(l).Compile(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// storedDecision reads the one decision the wave recorded.
func storedDecision(t *testing.T, l ora.Ledger, id string) ora.ReasonerDecision {
	t.Helper()
	entries, err := l.Entries(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []ora.ReasonerDecision
	for _, e := range entries {
		if e.Kind == ora.KindReasonerDecision {
			var d ora.ReasonerDecision
			if err := json.Unmarshal(e.Body, &d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%s holds %d decisions, want 1", id, len(out))
	}
	return out[0]
}

// The reason handler decides under the motor version promoted in the ledger:
// the API's registry (another process on AWS) promotes and rolls back; the
// reason function's registry, with its cache TTL, sees the change once the
// TTL has passed, and every decision records the motor and app versions it
// ran under. Over SQLite and DynamoDB Local.
func TestHandleUnderTheVersionedMotor(t *testing.T) {
	golden, err := motor.Golden()
	if err != nil {
		t.Fatal(err)
	}
	base, err := motor.NewBase(defaultrules.Default, "the default rules", 0)
	if err != nil {
		t.Fatal(err)
	}
	// 1.1.0 raises the medium test path's confidence: the golden set still
	// passes (same action, same band), the decision changes.
	v := "1.1.0"
	rulesText := regexp.MustCompile(`(?m)^version: .*$`).ReplaceAllString(string(defaultrules.Default), `version: "`+v+`"`)
	rulesText = strings.Replace(rulesText, "confidence: 0.65", "confidence: 0.7", 1)
	candidate := motor.Bundle{Version: v, Rules: rulesText, Changelog: "medium test path at 0.7"}
	const ttl = 5 * time.Second
	for _, st := range acttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			ctx := context.Background()
			l := st.Open(t).Ledger
			api := motor.NewRegistry(l, base, motor.GoldenGate(golden)) // the API Lambda's
			clk := &clock{now: at}
			reasonReg := motor.NewRegistry(l, base, nil, func(o *motor.Options) { o.CacheTTL, o.Now = ttl, clk.Now })
			h := Handler{Ledger: l, Reasoner: motor.NewReasoner(reasonReg, nil), AppVersion: "1.0.0+abc"}
			decide := func(id string) (Output, ora.ReasonerDecision) {
				t.Helper()
				orientedIn(t, l, id, `{"confidence":"medium"}`)
				out, err := invoke(t, h, `{"signal_id":"`+id+`"}`)
				if err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				return out, storedDecision(t, l, id)
			}
			check := func(id string, conf float64, version string) {
				t.Helper()
				out, d := decide(id)
				if out.Confidence != conf || d.Confidence != conf || d.MotorVersion != version || d.RulesVersion != version || d.AppVersion != "1.0.0+abc" {
					t.Errorf("%s: confidence %v (stored %v), motor %q, rules %q, app %q; want %v under %s, app 1.0.0+abc",
						id, out.Confidence, d.Confidence, d.MotorVersion, d.RulesVersion, d.AppVersion, conf, version)
				}
			}
			check("w1", 0.65, base.Version)

			if _, err := api.Propose(ctx, candidate); err != nil {
				t.Fatal(err)
			}
			if _, err := api.Promote(ctx, v, "raise medium", "olga"); err != nil {
				t.Fatalf("promote: %v", err)
			}
			check("w2", 0.65, base.Version) // within the TTL: the cached version
			clk.Add(ttl)
			check("w3", 0.7, v) // the promotion reached the reason function

			// A wave resumed at Reason right after its resume promoted a
			// version decides under exactly that version, though this
			// process's cached read predates the promotion.
			v2 := "1.2.0"
			next := motor.Bundle{Version: v2, Rules: strings.Replace(strings.Replace(rulesText, `version: "`+v+`"`, `version: "`+v2+`"`, 1), "confidence: 0.7", "confidence: 0.75", 1), Changelog: "medium test path at 0.75"}
			if _, err := api.Propose(ctx, next); err != nil {
				t.Fatal(err)
			}
			if _, err := api.Promote(ctx, v2, "resume with the fix", "olga"); err != nil {
				t.Fatalf("promote: %v", err)
			}
			resumedAt(t, l, "w-resumed", v2)
			check("w-resumed", 0.75, v2)
			// The resumed wave's read refreshed this process's cache.
			check("w-ordinary", 0.75, v2)
			if _, err := api.Rollback(ctx, "undo the fix", "olga"); err != nil {
				t.Fatalf("rollback: %v", err)
			}

			if _, err := api.Rollback(ctx, "regression", "olga"); err != nil {
				t.Fatalf("rollback: %v", err)
			}
			clk.Add(ttl)
			check("w4", 0.65, base.Version) // the rollback restored the previous version
		})
	}
}

// resumedAt records what the operator records of a wave it resumed under
// motor version: its decision to pause, and the resuming step naming the
// version (operate's qualifiers op/ and resuming/).
func resumedAt(t *testing.T, l ora.Ledger, id, version string) {
	t.Helper()
	for _, e := range []struct {
		q    string
		body any
	}{
		{"op/op-1", operate.Record{DecisionID: "op-1", SignalID: id, Classification: "motor", Taxonomy: operate.MotorRules, Action: "pause", Stage: "Reason", At: at}},
		{"resuming/op-1", map[string]any{"state": operate.StateResuming, "motor_version": version, "by": "olga", "at": at.Add(time.Minute)}},
	} {
		entry, err := ora.NewEntry(id, ora.KindOperatorDecision, e.q, e.body)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(context.Background(), entry); err != nil {
			t.Fatal(err)
		}
	}
}
