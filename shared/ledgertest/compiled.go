package ledgertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/factref"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// RunCompiledFacts runs real waves through orientation (plan, fetch,
// compile with the default profile) on a ledger after a history of signals,
// evidence and verdicts, and checks facts by reference end to end: the
// recent entries both waves read are stored once (fewer fact bodies than
// the references their facts and packets hold), and Verify, which
// recompiles a packet from its stored facts, matches the stored digest, on
// the ledger that wrote them and on cold, which newStore's second result
// opens on the same store with nothing cached.
func RunCompiledFacts(t *testing.T, newStore func(t *testing.T) (l ora.Ledger, bodies FactBodies, cold func() ora.Ledger)) {
	t.Helper()
	ctx := context.Background()
	l, fb, cold := newStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	add := func(id string, kind ora.EntryKind, q string, body any, at time.Time) {
		t.Helper()
		e, err := ora.NewEntry(id, kind, q, body)
		if err != nil {
			t.Fatal(err)
		}
		e.CreatedAt = at
		mustAppend(t, l, e)
	}
	signal := func(id string, at time.Time) {
		t.Helper()
		raw := []byte(`{"confidence":"high","title":"deploy ` + id + ` finished"}`)
		add(id, ora.KindSignalReceived, "", ora.NormalizedSignal{ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: "ci", Provider: "github"},
			Timestamp: at, NormalizedAt: at, DedupKey: "ci:" + id, RawDigest: ora.Digest(raw), Payload: raw, Raw: raw}, at)
	}
	for i := range 6 {
		id := fmt.Sprintf("past-%d", i)
		at := now.Add(time.Duration(i-40) * time.Minute)
		signal(id, at)
		add(id, ora.KindExecutionEvidence, "0", map[string]any{"action": "notify", "ok": true, "channel": "#deploys"}, at.Add(time.Second))
		add(id, ora.KindFinalVerdict, "", map[string]any{"final": "completed", "summary": "notified #deploys"}, at.Add(2*time.Second))
	}
	waves := []string{"wave-a", "wave-b"}
	refs := 0
	for i, w := range waves {
		signal(w, now.Add(time.Duration(i)*time.Second))
		wp, err := orient.NewPlanner(l).PlanWave(ctx, w)
		if err != nil {
			t.Fatalf("plan %s: %v", w, err)
		}
		f := orient.NewFetcher(l)
		for _, j := range wp.Jobs {
			if _, err := f.Fetch(ctx, w, j); err != nil {
				t.Fatalf("fetch %s/%s: %v", w, j.ID, err)
			}
		}
		if _, err := orient.NewCompiler(l).Compile(ctx, w); err != nil {
			t.Fatalf("compile %s: %v", w, err)
		}
		es, err := l.Entries(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[ora.EntryKind]int{}
		for _, e := range es {
			if _, bodies := factref.Split(e.Kind, e.Body); len(bodies) > 0 {
				kinds[e.Kind]++
				refs += len(bodies)
			}
		}
		if kinds[ora.KindObservedFact] == 0 || kinds[ora.KindOrientationPacket] != 1 {
			t.Errorf("%s: entries with facts kept by reference, by kind: %v; want facts parts and the packet", w, kinds)
		}
	}
	n := countBodies(t, fb)
	t.Logf("%d fact bodies for %d references", n, refs)
	if n == 0 || n >= refs {
		t.Errorf("%d fact bodies for %d references; want each body once (fewer bodies than references)", n, refs)
	}
	for name, led := range map[string]ora.Ledger{"the writer": l, "a cold ledger": cold()} {
		for _, w := range waves {
			v, err := orient.NewCompiler(led).Verify(ctx, w)
			if err != nil || !v.Match {
				t.Errorf("%s: Verify %s: %+v, %v; want a match", name, w, v, err)
			}
		}
	}
}
