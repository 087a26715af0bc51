package reason_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// countingState counts the incidents reads that reach the operator.
type countingState struct {
	svc   *operate.Service
	reads int
}

func (c *countingState) Incidents(ctx context.Context) ([]operate.Incident, operate.Summary, error) {
	c.reads++
	return c.svc.Incidents(ctx)
}

// The cache reads the incidents again when an incident is recorded (the next
// call sees it), not while nothing was recorded, and again once MaxAge has
// passed; both ledgers.
func TestCachedIncidentsSeesNewIncidents(t *testing.T) {
	for _, st := range acttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			ctx := context.Background()
			l := st.Open(t).Ledger
			now := time.Now().UTC().Truncate(time.Second)
			clock := func() time.Time { return now }
			svc := operate.New(l, func(o *operate.Options) {
				o.Now = clock
				o.Motor = func(context.Context) (operate.Motor, error) { return operate.Motor{Version: "1.0.0"}, nil }
			})
			state := &countingState{svc: svc}
			c := reason.CacheIncidents(state, l, clock)
			c.MaxAge = time.Minute
			fail := func(wave, errName string) { failWave(t, l, svc, now, wave, errName) }
			check := func(step string, incidents, reads int) {
				t.Helper()
				incs, sum, err := c.Incidents(ctx)
				if err != nil || len(incs) != incidents || sum.Incidents != incidents || state.reads != reads {
					t.Fatalf("%s: %d incidents (summary %d), %d reads, %v; want %d incidents, %d reads", step, len(incs), sum.Incidents, state.reads, err, incidents, reads)
				}
			}
			check("empty ledger", 0, 1)
			check("nothing recorded", 0, 1)
			fail("w1", "InternalError")
			check("first incident", 1, 2)
			check("nothing recorded since", 1, 2)
			fail("w2", "InternalError") // a second occurrence of the same incident
			incs, _, _ := c.Incidents(ctx)
			if state.reads != 3 || len(incs) != 1 || len(incs[0].Occurrences) != 2 {
				t.Fatalf("second occurrence: %d reads, %+v", state.reads, incs)
			}
			fail("w3", "InvalidInput")
			check("second incident", 2, 4)
			now = now.Add(59 * time.Second)
			check("within MaxAge", 2, 4)
			now = now.Add(time.Second)
			check("MaxAge passed", 2, 5)
		})
	}
}

// failWave records a wave that failed with errName and the operator's
// handling of it (an incident, or an occurrence of one).
func failWave(tb testing.TB, l ora.Ledger, svc *operate.Service, now time.Time, wave, errName string) {
	tb.Helper()
	ctx := context.Background()
	s := ora.NormalizedSignal{
		ID: wave, Source: ora.Source{Type: ora.SourceWebhook, Name: "alpha", Provider: "hmac"},
		Timestamp: now, NormalizedAt: now, DedupKey: wave, Payload: json.RawMessage(`{}`), RawDigest: ora.Digest([]byte(wave)),
	}
	e, err := ora.NewEntry(wave, ora.KindSignalReceived, "", s)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := l.Append(ctx, e); err != nil {
		tb.Fatal(err)
	}
	if _, err := svc.Operate(ctx, operate.Input{SignalID: wave, Wave: json.RawMessage(`{"plan":{},"packet":{}}`),
		Failure: operate.Failure{Error: errName, Cause: `{"errorMessage":"boom"}`}, EnteredAt: "t"}); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkKernelIncidents is the kernel's incidents read in a bad week (100
// failed waves over four incidents on SQLite), read through and cached.
func BenchmarkKernelIncidents(b *testing.B) {
	l := acttest.Stores[0].Open(b).Ledger
	now := time.Now().UTC().Truncate(time.Second)
	clock := func() time.Time { return now }
	svc := operate.New(l, func(o *operate.Options) {
		o.Now = clock
		o.Motor = func(context.Context) (operate.Motor, error) { return operate.Motor{Version: "1.0.0"}, nil }
	})
	errs := []string{"InternalError", "InvalidInput", "ActionFailed", "Timeout"}
	for i := range 100 {
		now = now.Add(time.Second)
		failWave(b, l, svc, now, fmt.Sprintf("w%d", i), errs[i%len(errs)])
	}
	for _, bc := range []struct {
		name  string
		state reason.OperatorState
	}{
		{"read through", svc},
		{"cached", reason.CacheIncidents(svc, l, clock)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := bc.state.Incidents(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
