package act_test

import (
	"context"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/ora"
)

// crashing is a ledger that crashes the actor once at a stage boundary: at
// the claim (TransitionDecision) or at the stage's Commit, either before
// the write reaches the store (nothing written) or after it (written, the
// answer lost). Both answer ETRANSIENT, as a lost connection does.
type crashing struct {
	ora.Ledger
	at    string // "claim" or "commit"
	after bool
	fired atomic.Bool
}

func (c *crashing) crash() bool { return c.fired.CompareAndSwap(false, true) }

func (c *crashing) TransitionDecision(ctx context.Context, id string, from, to ora.DecisionStatus, reason string) (ora.DecisionState, error) {
	if c.at != "claim" || !c.crash() {
		return c.Ledger.TransitionDecision(ctx, id, from, to, reason)
	}
	if c.after {
		if _, err := c.Ledger.TransitionDecision(ctx, id, from, to, reason); err != nil {
			return ora.DecisionState{}, err
		}
	}
	return ora.DecisionState{}, ora.Transient(nil, "crash at the claim")
}

func (c *crashing) Commit(ctx context.Context, s ora.Stage) (ora.Committed, error) {
	if c.at != "commit" || !c.crash() {
		return c.Ledger.Commit(ctx, s)
	}
	if c.after {
		if _, err := c.Ledger.Commit(ctx, s); err != nil {
			return ora.Committed{}, err
		}
	}
	return ora.Committed{}, ora.Transient(nil, "crash at the commit")
}

// TestActCrashAtEachBoundary crashes Act at the claim and at its stage's
// commit, before and after the write, on both stores; the crashed run
// leaves the stage whole or absent, and the retry (the state machine
// retries a transient error) completes it: every action ran once, each has
// exactly one evidence entry, and the decision is executed.
func TestActCrashAtEachBoundary(t *testing.T) {
	crashes := []struct {
		name  string
		at    string
		after bool
		// evidence and status the crashed run leaves
		evidence int
		status   ora.DecisionStatus
	}{
		{"claim, before the write", "claim", false, 0, ora.StatusDecided},
		{"claim, after the write", "claim", true, 0, ora.StatusExecuting},
		{"commit, before the write", "commit", false, 0, ora.StatusExecuting},
		{"commit, after the write", "commit", true, 2, ora.StatusExecuted},
	}
	for _, store := range acttest.Stores {
		for _, tc := range crashes {
			t.Run(store.Name+"/"+tc.name, func(t *testing.T) {
				f := newFixtureOn(t, store.Open(t), http.StatusOK)
				d := acttest.Decision("d1", "s1", fullScope, f.http(t, "/a"), f.http(t, "/b"))
				acttest.Record(t, f.db, d)
				c := &crashing{Ledger: f.db, at: tc.at, after: tc.after}
				u, _ := url.Parse(f.target.srv.URL)
				reg := act.Standard(act.Config{HTTP: act.HTTPConfig{AllowedHosts: []string{u.Host}, SigningSecret: secret, TimeoutSeconds: 5}}, act.NewLogNotify(quiet), nil, nil, nil)
				crashed := act.New(c, reg, f.once, func(o *act.Options) { o.Log = quiet })
				ctx := context.Background()
				if _, err := crashed.Act(ctx, "s1", "d1"); ora.ErrorCode(err) != ora.ETRANSIENT {
					t.Fatalf("crashed Act: got %v, want a transient error", err)
				}
				if got := evidenceCount(t, f.db); got != tc.evidence {
					t.Errorf("after the crash: %d evidence entries, want %d (the stage whole or absent)", got, tc.evidence)
				}
				if got := acttest.Status(t, f.db, "d1"); got != tc.status {
					t.Errorf("after the crash: decision %s, want %s", got, tc.status)
				}
				res, err := crashed.Act(ctx, "s1", "d1")
				if err != nil {
					t.Fatalf("retried Act: %v", err)
				}
				if len(res.Evidence) != 2 {
					t.Errorf("retried Act: evidence %v, want 2", res.Evidence)
				}
				if got := evidenceCount(t, f.db); got != 2 {
					t.Errorf("after the retry: %d evidence entries, want 2", got)
				}
				if got := acttest.Status(t, f.db, "d1"); got != ora.StatusExecuted {
					t.Errorf("after the retry: decision %s, want executed", got)
				}
				if got := f.target.hits.Load(); got != 2 {
					t.Errorf("requests: got %d, want 2 (each action once)", got)
				}
			})
		}
	}
}

func evidenceCount(t *testing.T, l ora.Ledger) int {
	t.Helper()
	es, err := l.Entries(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Kind == ora.KindExecutionEvidence {
			n++
		}
	}
	return n
}
