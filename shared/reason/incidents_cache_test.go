package reason_test

import (
	"context"
	"encoding/json"
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
			fail := func(wave, errName string) {
				t.Helper()
				s := ora.NormalizedSignal{
					ID: wave, Source: ora.Source{Type: ora.SourceWebhook, Name: "alpha", Provider: "hmac"},
					Timestamp: now, NormalizedAt: now, DedupKey: wave, Payload: json.RawMessage(`{}`), RawDigest: ora.Digest([]byte(wave)),
				}
				e, err := ora.NewEntry(wave, ora.KindSignalReceived, "", s)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := l.Append(ctx, e); err != nil {
					t.Fatal(err)
				}
				if _, err := svc.Operate(ctx, operate.Input{SignalID: wave, Wave: json.RawMessage(`{"plan":{},"packet":{}}`),
					Failure: operate.Failure{Error: errName, Cause: `{"errorMessage":"boom"}`}, EnteredAt: "t"}); err != nil {
					t.Fatal(err)
				}
			}
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
