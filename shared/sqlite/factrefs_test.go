package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ledgertest"
	"github.com/ora-runtime/ora/shared/ora"
)

// factPart is the body of a facts entry as the fetch step writes it (compact
// JSON, encoding/json's bytes), with the given normalized bodies.
func factPart(t *testing.T, normalized ...any) []byte {
	t.Helper()
	type fact struct {
		ID         string            `json:"fact_id"`
		SourceRef  string            `json:"source_ref"`
		Provenance map[string]string `json:"provenance"`
		Normalized json.RawMessage   `json:"normalized"`
		Utility    float64           `json:"utility"`
	}
	var facts []fact
	for i, n := range normalized {
		b, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		facts = append(facts, fact{ID: fmt.Sprintf("job/%05d", i), SourceRef: "ledger:sig/execution-evidence/0",
			Provenance: map[string]string{"store": "ledger"}, Normalized: b, Utility: 0.7})
	}
	b, err := json.Marshal(map[string]any{"job_id": "job", "job_kind": "recent_actions", "part": 0, "facts": facts})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFactsByReference writes facts and packets whose normalized bodies the
// ledger keeps by reference and reads back the same bytes, through Append,
// AppendNew, Entries, Recent-free reads and a conflict; bodies shared by
// several entries are stored once.
func TestFactsByReference(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("recent action output ", 10)
	shared := map[string]any{"decision": "notify", "detail": long}
	tests := []struct {
		name string
		kind ora.EntryKind
		body []byte
		refs int // normalized bodies kept by reference
	}{
		{"a facts part", ora.KindObservedFact, factPart(t, shared, map[string]any{"other": long}), 2},
		{"a short body stays in the row", ora.KindObservedFact, factPart(t, map[string]string{"a": "b"}), 0},
		{"a nested normalized key is inside its value", ora.KindObservedFact,
			factPart(t, map[string]any{"normalized": map[string]string{"x": long}, "y": long}), 1},
		{"a string that reads like the key", ora.KindObservedFact,
			factPart(t, map[string]string{"text": `,"normalized":{"no":1}` + long}), 1},
		{"escapes and non-ASCII", ora.KindObservedFact, factPart(t, map[string]string{"t": "é \"q\" \\ <b> \u2028 " + long}), 1},
		{"a packet sharing a body with the facts", ora.KindOrientationPacket, factPart(t, shared), 1},
		{"another kind is stored as it is", ora.KindExecutionEvidence, factPart(t, shared), 0},
	}
	db := openDB(t, func(o *Options) { o.Retention = ora.Retention{} })
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sig := fmt.Sprintf("sig-%d", i)
			e := ora.NewEntryJSON(sig, tc.kind, "q", tc.body)
			var err error
			if i%2 == 0 {
				_, err = db.Append(ctx, e)
			} else {
				_, err = db.AppendNew(ctx, []ora.Entry{e})
			}
			if err != nil {
				t.Fatalf("append: %v", err)
			}
			got, err := db.Entries(ctx, sig)
			if err != nil || len(got) != 1 || string(got[0].Body) != string(tc.body) || got[0].Digest != e.Digest {
				t.Fatalf("Entries = %v, %v; want the body as written", got, err)
			}
			var row []byte
			if err := db.r.QueryRowContext(ctx, `SELECT body FROM ledger_entries WHERE signal_id = ?`, sig).Scan(&row); err != nil {
				t.Fatal(err)
			}
			if refs := strings.Count(string(row), "\x01"); refs != tc.refs {
				t.Errorf("the row holds %d references, want %d", refs, tc.refs)
			}
			_, err = db.Append(ctx, e)
			if stored, ok := ora.Existing[ora.Entry](err); !ok || string(stored.Body) != string(tc.body) {
				t.Errorf("second Append: %v; want a conflict carrying the body as written", err)
			}
		})
	}
	// A second DB on the file, with nothing remembered: every body is put
	// together from fact_bodies.
	fresh, err := Open(ctx, db.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for i, tc := range tests {
		got, err := fresh.Entries(ctx, fmt.Sprintf("sig-%d", i))
		if err != nil || len(got) != 1 || string(got[0].Body) != string(tc.body) {
			t.Errorf("%s: Entries from a fresh DB = %v, %v; want the body as written", tc.name, got, err)
		}
	}
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM fact_bodies`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	// The shared body (in the first facts part and the packet) once; the
	// other facts part's second body; the three single ones.
	if want := 5; n != want {
		t.Errorf("fact_bodies holds %d bodies, want %d", n, want)
	}
}

// TestFactBodiesExpireWithTheirLastRow sweeps fact bodies shared by rows of
// different expiries: a body goes only once every row referring to it has.
func TestFactBodiesExpireWithTheirLastRow(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	db := openDB(t, func(o *Options) { o.Retention = ora.Retention{ora.KindObservedFact: time.Hour} })
	long := strings.Repeat("z", 300)
	for i, created := range []time.Time{t0, t0.Add(30 * time.Minute)} {
		e := ora.NewEntryJSON(fmt.Sprintf("sig-%d", i), ora.KindObservedFact, "q", factPart(t, map[string]string{"shared": long}))
		e.CreatedAt = created
		if _, err := db.AppendNew(ctx, []ora.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name        string
		at          time.Duration
		rows, facts int
	}{
		{"the first row expired, its body still referred to", time.Hour + 5*time.Minute, 1, 1},
		{"both rows expired, the body's expiry rounded up to the minute", time.Hour + 30*time.Minute + 30*time.Second, 0, 1},
		{"the body after its expiry", time.Hour + 32*time.Minute, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := db.Sweep(ctx, t0.Add(tc.at), SweepOptions{}); err != nil {
				t.Fatal(err)
			}
			var rows, facts int
			_ = db.r.QueryRowContext(ctx, `SELECT count(*) FROM ledger_entries`).Scan(&rows)
			_ = db.r.QueryRowContext(ctx, `SELECT count(*) FROM fact_bodies`).Scan(&facts)
			if rows != tc.rows || facts != tc.facts {
				t.Errorf("%d rows and %d fact bodies left, want %d and %d", rows, facts, tc.rows, tc.facts)
			}
			if rows == 1 {
				if es, err := db.Entries(ctx, "sig-1"); err != nil || len(es) != 1 {
					t.Errorf("the row left reads back: %v, %v", es, err)
				}
			}
		})
	}
}

// factBodiesProbe counts and drops the rows of fact_bodies (forgetting what
// the process keeps of them, as another process would not have it).
type factBodiesProbe struct{ d *DB }

func (p factBodiesProbe) Count(ctx context.Context) (int, error) {
	var n int
	err := p.d.r.QueryRowContext(ctx, `SELECT count(*) FROM fact_bodies`).Scan(&n)
	return n, err
}

func (p factBodiesProbe) Drop(ctx context.Context, digest string) error {
	if _, err := p.d.w.ExecContext(ctx, `DELETE FROM fact_bodies WHERE digest = ?`, digest); err != nil {
		return err
	}
	p.d.facts.mu.Lock()
	p.d.facts.bodies, p.d.facts.size, p.d.facts.whole, p.d.facts.wholeSize = nil, 0, nil, 0
	p.d.facts.mu.Unlock()
	return nil
}

func TestFactRefsContract(t *testing.T) {
	ledgertest.RunFactRefs(t, func(t *testing.T) (ora.Ledger, ledgertest.FactBodies) {
		d := openDB(t)
		return d, factBodiesProbe{d}
	})
}

// TestCompiledFacts runs real waves through orientation on SQLite
// (ledgertest.RunCompiledFacts); the cold ledger is a second DB on the file.
func TestCompiledFacts(t *testing.T) {
	ledgertest.RunCompiledFacts(t, func(t *testing.T) (ora.Ledger, ledgertest.FactBodies, func() ora.Ledger) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		d, err := Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		return d, factBodiesProbe{d}, func() ora.Ledger {
			c, err := Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
	})
}
