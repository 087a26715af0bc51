package orient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// bigFact is a fact whose JSON is about n bytes.
func bigFact(i, n int) ora.Fact {
	return ora.Fact{ID: FactQualifier("job-a", i), WaveID: "w1", SourceType: "objects",
		Normalized: json.RawMessage(fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", n)))}
}

func TestFactEntriesSplitIntoParts(t *testing.T) {
	job := Job{ID: "job-a", Kind: JobWorkspaceState}
	var facts []ora.Fact
	for i := range 10 {
		facts = append(facts, bigFact(i, 60*1024)) // 10 x 60 KB: three parts of at most 256 KB
	}
	es, err := factEntries("w1", job, facts)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 {
		t.Fatalf("%d entries, want 3 parts of at most %d bytes", len(es), maxFactsEntryBytes)
	}
	for i, e := range es {
		if e.Qualifier != FactsQualifier("job-a", i) || e.Kind != ora.KindObservedFact {
			t.Errorf("part %d: %s %q", i, e.Kind, e.Qualifier)
		}
		if len(e.Body) > maxFactsEntryBytes+1024 || ora.EntrySize(e) > ora.MaxItemBytes {
			t.Errorf("part %d is %d bytes", i, len(e.Body))
		}
	}
	got, err := FactsOf(es)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 {
		t.Fatalf("%d facts read back, want 10", len(got))
	}
	for i, f := range got {
		if f.ID != FactQualifier("job-a", i) {
			t.Errorf("fact %d: id %s, want the job's order", i, f.ID)
		}
	}
	// A single fact over the part size is a part of its own.
	one, err := factEntries("w1", job, []ora.Fact{bigFact(0, 300*1024)})
	if err != nil || len(one) != 1 {
		t.Errorf("one 300 KB fact: %d entries, %v; want 1", len(one), err)
	}
	// No facts, no entry.
	if none, err := factEntries("w1", job, nil); err != nil || len(none) != 0 {
		t.Errorf("no facts: %d entries, %v", len(none), err)
	}
}

func TestFactsOfReadsBothShapesOnce(t *testing.T) {
	f0, f1 := bigFact(0, 10), bigFact(1, 10)
	single, _ := ora.NewEntry("w1", ora.KindObservedFact, f0.ID, f0)
	part, _ := ora.NewEntry("w1", ora.KindObservedFact, FactsQualifier("job-a", 0), JobFacts{JobID: "job-a", Facts: []ora.Fact{f0, f1}})
	other, _ := ora.NewEntry("w1", ora.KindSignalReceived, "", map[string]string{"facts": "not these"})
	got, err := FactsOf([]ora.Entry{other, single, part})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != f0.ID || got[1].ID != f1.ID {
		t.Errorf("got %+v, want f0 (single entry, first) and f1 once each", got)
	}
	bad := part
	bad.Body = json.RawMessage(`{"facts":"nope"}`)
	if _, err := FactsOf([]ora.Entry{bad}); ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), "job-a/facts-000") {
		t.Errorf("malformed part: %v, want EINVALID naming the entry", err)
	}
}

// A part with any value that decoding would not give back as it is, is not
// kept for the compile step's read: FactsOf decodes it.
func TestInexactFactsNotKept(t *testing.T) {
	at := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	plain := ora.Fact{ID: "f", WaveID: "w", SourceType: "s", Normalized: json.RawMessage(`{"m":"a b"}`), Utility: 0.5, CreatedAt: at}
	for name, change := range map[string]func(*ora.Fact){
		"none":                 func(*ora.Fact) {},
		"string escaped":       func(f *ora.Fact) { f.DedupeKey = "<k>" },
		"non-ASCII string":     func(f *ora.Fact) { f.SourceRef = "é" },
		"non-compact body":     func(f *ora.Fact) { f.Normalized = json.RawMessage(`{ "m": 1 }`) },
		"nil body":             func(f *ora.Fact) { f.Normalized = nil },
		"exponent float":       func(f *ora.Fact) { f.Utility = 1e-9 },
		"time not in UTC":      func(f *ora.Fact) { f.CreatedAt = at.In(time.FixedZone("x", 3600)) },
		"provenance escaped":   func(f *ora.Fact) { f.Provenance = map[string]string{"k": "a&b"} },
		"provenance key UTF-8": func(f *ora.Fact) { f.Provenance = map[string]string{"ü": "v"} },
	} {
		t.Run(name, func(t *testing.T) {
			f := plain
			f.WaveID = "w-" + name // a body of its own
			change(&f)
			es, err := factEntries("w1", Job{ID: "job-a", Kind: JobRecentActions}, []ora.Fact{f})
			if err != nil || len(es) != 1 {
				t.Fatalf("%d entries, %v", len(es), err)
			}
			_, kept := recentFacts.get(es[0].Digest)
			if want := name == "none"; kept != want {
				t.Fatalf("kept %v, want %v", kept, want)
			}
		})
	}
}

// fixedSource returns the same facts (fresh copies) for every job.
type fixedSource struct{ facts []ora.Fact }

func (s fixedSource) Jobs(context.Context, Wave, ora.AttentionRule) ([]Job, error) { return nil, nil }

func (s fixedSource) Observe(context.Context, Wave, Job) ([]ora.Fact, error) {
	out := make([]ora.Fact, len(s.facts))
	for i, f := range s.facts {
		f.Provenance = maps.Clone(f.Provenance)
		out[i] = f
	}
	return out, nil
}

// The fetch step writes each fact with the encoding it made to estimate the
// fact's tokens, the estimate put in: its entries are those factEntries makes
// from the facts Observe returns, byte for byte, and whether they are kept
// for the compile step's read is the same.
func TestFetchReusesTheSizingEncoding(t *testing.T) {
	at := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	src := fixedSource{facts: []ora.Fact{
		{SourceRef: "a", Provenance: map[string]string{"k": "v"}, Normalized: json.RawMessage(`{"estimated_tokens":0,"created_at":"x"}`), CreatedAt: at},
		{SourceRef: "b <inexact>", Provenance: map[string]string{}, Normalized: json.RawMessage(`{ "m" : "spaced" }`), CreatedAt: at.In(time.FixedZone("x", 60))},
		{SourceRef: "c", Provenance: map[string]string{}, Normalized: json.RawMessage(`"` + strings.Repeat("t", 5000) + `"`), CreatedAt: at},
	}}
	f := NewFetcher(nil, func(o *Options) { o.Sources = map[string]Source{FamilyHTTP: src} })
	for _, facts := range [][]ora.Fact{src.facts[:1], src.facts} {
		src.facts = facts
		f.sources[FamilyHTTP] = src
		job := Job{ID: fmt.Sprintf("web.%05d", len(facts)), Family: FamilyHTTP, Kind: "get", Target: "t", Weights: &Weights{Priority: 1}, Params: Params{AsOf: at, Limit: 10}}
		got, n, err := f.observe(context.Background(), "w-reuse", job)
		if err != nil || n != len(facts) {
			t.Fatalf("observe: %d facts, %v", n, err)
		}
		observed, err := f.Observe(context.Background(), "w-reuse", job)
		if err != nil {
			t.Fatal(err)
		}
		if observed[0].EstimatedTokens == 0 {
			t.Fatal("no token estimate: the test proves nothing")
		}
		want, err := factEntries("w-reuse", job, observed)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d entries, want %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i].Body, want[i].Body) || got[i].Digest != want[i].Digest {
				t.Fatalf("entry %d:\n got  %s\n want %s", i, got[i].Body, want[i].Body)
			}
			_, keptGot := recentFacts.get(got[i].Digest)
			if wantKept := len(facts) == 1; keptGot != wantKept {
				t.Errorf("entry %d kept %v, want %v", i, keptGot, wantKept)
			}
		}
	}
}
