package act_test

import (
	"context"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/ora"
)

// entriesOnly hides the ledger's EntriesOfKinds: LoadWave filters Entries.
type entriesOnly struct{ l ora.Ledger }

func (e entriesOnly) Entries(ctx context.Context, signalID string) ([]ora.Entry, error) {
	return e.l.Entries(ctx, signalID)
}

// LoadWave's entries are the wave's own (signal, decision, evidence,
// verdicts), without its observed facts and packet, whether the ledger reads
// by kind (SQLite) or every entry.
func TestLoadWaveLeavesFactsUnread(t *testing.T) {
	ctx := context.Background()
	db := acttest.DB(t)
	acttest.Record(t, db, acttest.Decision("d1", "s1", fullScope,
		ora.Action{Type: act.TypeNotify, Parameters: acttest.Params(t, map[string]string{"message": "m"})}))
	for _, e := range []ora.Entry{
		{SignalID: "s1", Kind: ora.KindObservedFact, Qualifier: "job-1", Body: []byte(`{"facts":[]}`)},
		{SignalID: "s1", Kind: ora.KindOrientationPacket, Body: []byte(`{"facts":[]}`)},
		{SignalID: "s1", Kind: ora.KindFinalVerdict, Body: []byte(`{"outcome":"completed"}`)},
	} {
		if _, err := db.Append(ctx, e); err != nil {
			t.Fatalf("Append %s: %v", e.Kind, err)
		}
	}
	for name, l := range map[string]act.Entries{"by kind": db, "every entry": entriesOnly{db}} {
		t.Run(name, func(t *testing.T) {
			w, err := act.LoadWave(ctx, l, "s1", "d1")
			if err != nil {
				t.Fatalf("LoadWave: %v", err)
			}
			var kinds []ora.EntryKind
			for _, e := range w.Entries {
				kinds = append(kinds, e.Kind)
			}
			if len(kinds) != 2 || kinds[0] != ora.KindReasonerDecision || kinds[1] != ora.KindFinalVerdict {
				t.Errorf("wave entries %v, want [reasoner-decision final-verdict]", kinds)
			}
			if _, ok := w.Find(ora.KindFinalVerdict, ""); !ok {
				t.Error("the final verdict is not found")
			}
			if w.Decision.ID != "d1" {
				t.Errorf("decision %q, want d1", w.Decision.ID)
			}
		})
	}
	if _, err := act.LoadWave(ctx, db, "nope", "d1"); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("unknown signal: err %v, want ENOTFOUND", err)
	}
}
