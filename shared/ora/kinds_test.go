package ora

import (
	"context"
	"testing"
)

// entriesOnly is a ledger with Entries and no EntriesOfKinds.
type entriesOnly []Entry

func (l entriesOnly) Entries(_ context.Context, signalID string) ([]Entry, error) {
	var out []Entry
	for _, e := range l {
		if e.SignalID == signalID {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, Errorf(ENOTFOUND, "signal %q has no entries", signalID)
	}
	return out, nil
}

// byKinds is a ledger with its own EntriesOfKinds, which records its calls.
type byKinds struct {
	entriesOnly
	calls int
}

func (l *byKinds) Entries(context.Context, string) ([]Entry, error) {
	panic("EntriesOfKinds read every entry of a KindReader")
}

func (l *byKinds) EntriesOfKinds(ctx context.Context, signalID string, kinds ...EntryKind) ([]Entry, error) {
	l.calls++
	all, _ := l.entriesOnly.Entries(ctx, signalID)
	var out []Entry
	for _, e := range all {
		for _, k := range kinds {
			if e.Kind == k {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

func TestEntriesOfKinds(t *testing.T) {
	ctx := context.Background()
	entries := entriesOnly{
		{SignalID: "s", Kind: KindSignalReceived},
		{SignalID: "s", Kind: KindObservedFact, Qualifier: "a"},
		{SignalID: "s", Kind: KindObservedFact, Qualifier: "b"},
		{SignalID: "s", Kind: KindFinalVerdict},
	}
	readers := map[string]func() EntryReader{
		"filtered Entries": func() EntryReader { return entries },
		"KindReader":       func() EntryReader { return &byKinds{entriesOnly: entries} },
	}
	cases := []struct {
		name   string
		signal string
		kinds  []EntryKind
		want   []EntryKind // nil: ENOTFOUND
	}{
		{"kinds it has", "s", []EntryKind{KindFinalVerdict, KindSignalReceived}, []EntryKind{KindSignalReceived, KindFinalVerdict}},
		{"one kind twice", "s", []EntryKind{KindObservedFact}, []EntryKind{KindObservedFact, KindObservedFact}},
		{"a kind it lacks", "s", []EntryKind{KindHumanVerdict}, nil},
		{"an unknown signal", "nope", []EntryKind{KindSignalReceived}, nil},
	}
	for rname, reader := range readers {
		for _, tc := range cases {
			t.Run(rname+"/"+tc.name, func(t *testing.T) {
				l := reader()
				got, err := EntriesOfKinds(ctx, l, tc.signal, tc.kinds...)
				if tc.want == nil {
					if ErrorCode(err) != ENOTFOUND {
						t.Fatalf("err = %v, want ENOTFOUND", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("EntriesOfKinds: %v", err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("got %d entries, want %d", len(got), len(tc.want))
				}
				for i, k := range tc.want {
					if got[i].Kind != k {
						t.Errorf("entry %d kind %s, want %s", i, got[i].Kind, k)
					}
				}
				if b, ok := l.(*byKinds); ok && b.calls != 1 {
					t.Errorf("KindReader called %d times, want 1", b.calls)
				}
			})
		}
	}
}
