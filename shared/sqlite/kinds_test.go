package sqlite

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
)

// EntriesOfKinds returns exactly the entries Entries holds of those kinds, in
// the same order, whether the list fits the prepared statement or not.
func TestEntriesOfKinds(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	appendKind := func(signal string, kind ora.EntryKind, q string) {
		t.Helper()
		if _, err := db.Append(ctx, ora.Entry{SignalID: signal, Kind: kind, Qualifier: q, Body: []byte(fmt.Sprintf(`{"q":%q}`, q))}); err != nil {
			t.Fatalf("Append %s/%s: %v", kind, q, err)
		}
	}
	for i := range 3 {
		appendKind("sig-k", ora.KindObservedFact, fmt.Sprint("fact-", i))
	}
	appendKind("sig-k", ora.KindOrientationPacket, "")
	appendKind("sig-k", ora.KindExecutionEvidence, "0/1")
	appendKind("sig-k", ora.KindExecutionEvidence, "0/0")
	appendKind("sig-k", ora.KindFinalVerdict, "")
	appendKind("sig-other", ora.KindFinalVerdict, "")
	all, err := db.Entries(ctx, "sig-k")
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	cases := []struct {
		name  string
		kinds []ora.EntryKind
		want  int
	}{
		{"two kinds", []ora.EntryKind{ora.KindFinalVerdict, ora.KindExecutionEvidence}, 3},
		{"one kind", []ora.EntryKind{ora.KindObservedFact}, 3},
		{"a kind it lacks", []ora.EntryKind{ora.KindHumanVerdict}, 0},
		{"every kind but facts and packets", slices.DeleteFunc(slices.Clone(ora.EntryKinds), func(k ora.EntryKind) bool {
			return k == ora.KindObservedFact || k == ora.KindOrientationPacket
		}), 3},
		{"every kind", ora.EntryKinds, len(all)},
		{"more kinds than the statement takes", slices.Concat(ora.EntryKinds, ora.EntryKinds), len(all)},
		{"none", nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := db.EntriesOfKinds(ctx, "sig-k", tc.kinds...)
			if err != nil {
				t.Fatalf("EntriesOfKinds: %v", err)
			}
			var want []ora.Entry
			for _, e := range all {
				if slices.Contains(tc.kinds, e.Kind) {
					want = append(want, e)
				}
			}
			if len(got) != tc.want || len(want) != tc.want {
				t.Fatalf("got %d entries, filtered Entries %d, want %d", len(got), len(want), tc.want)
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.Kind != w.Kind || g.Qualifier != w.Qualifier || string(g.Body) != string(w.Body) || g.Digest != w.Digest || !g.CreatedAt.Equal(w.CreatedAt) {
					t.Errorf("entry %d = %s/%s %s, Entries has %s/%s %s", i, g.Kind, g.Qualifier, g.Body, w.Kind, w.Qualifier, w.Body)
				}
			}
		})
	}
	if 2*len(ora.EntryKinds) <= maxKinds {
		t.Fatalf("ora.EntryKinds has %d kinds: the long-list case does not exceed maxKinds %d", len(ora.EntryKinds), maxKinds)
	}
	// Any list of distinct kinds is read by the statement, not by reading
	// every entry of the signal.
	if len(ora.EntryKinds) > maxKinds {
		t.Errorf("ora.EntryKinds has %d kinds, more than maxKinds %d: raise it", len(ora.EntryKinds), maxKinds)
	}
}
