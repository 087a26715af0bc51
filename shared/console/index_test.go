package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/console"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
)

// timeLedger is a fake ledger whose Recent honours its time window, as the
// stores do, and which counts the reads of whole waves.
type timeLedger struct {
	mu      sync.Mutex
	entries []ora.Entry // by created_at
	reads   int         // Entries calls
}

func (l *timeLedger) add(es ...ora.Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, es...)
	sort.SliceStable(l.entries, func(i, j int) bool { return l.entries[i].CreatedAt.Before(l.entries[j].CreatedAt) })
}

func (l *timeLedger) Entries(_ context.Context, id string) ([]ora.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads++
	var out []ora.Entry
	for _, e := range l.entries {
		if e.SignalID == id {
			out = append(out, e)
		}
	}
	return out, nil
}

func (l *timeLedger) Recent(_ context.Context, kind ora.EntryKind, from, to time.Time, limit int) ([]ora.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lo := sort.Search(len(l.entries), func(i int) bool { return !l.entries[i].CreatedAt.Before(from) })
	var out []ora.Entry
	for i := len(l.entries) - 1; i >= lo && len(out) < limit; i-- {
		if e := l.entries[i]; e.Kind == kind && e.CreatedAt.Before(to) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (l *timeLedger) Decision(context.Context, string) (ora.DecisionState, error) {
	return ora.DecisionState{}, ora.Errorf(ora.ENOTFOUND, "none")
}

type statuses struct {
	mu    sync.Mutex
	of    map[string]string
	reads map[string]int
}

func (s *statuses) WaveStatus(_ context.Context, id string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads[id]++
	if st, ok := s.of[id]; ok {
		return st, nil
	}
	return "", ora.Errorf(ora.ENOTFOUND, "no wave %s", id)
}

func (s *statuses) set(id, st string) {
	s.mu.Lock()
	s.of[id] = st
	s.mu.Unlock()
}

// seedWaves records n waves, one second apart from t0: a signal and a
// decision each, the confidence cycling through the bands.
func seedWaves(tb testing.TB, l *timeLedger, st *statuses, t0 time.Time, from, n int) {
	tb.Helper()
	var add []ora.Entry
	for i := from; i < from+n; i++ {
		id := fmt.Sprintf("sig-%06d", i)
		at := t0.Add(time.Duration(i) * time.Second)
		payload := json.RawMessage(`{"note":"` + strings.Repeat("x", 500) + `"}`)
		sig, err := ora.NewEntry(id, ora.KindSignalReceived, "", ora.NormalizedSignal{ID: id,
			Source:    ora.Source{Type: ora.SourceWebhook, Name: "demo", Provider: "hmac", EventType: "demo"},
			Timestamp: at, Payload: payload, NormalizedAt: at, DedupKey: id, RawDigest: ora.Digest(payload)})
		if err != nil {
			tb.Fatal(err)
		}
		sig.CreatedAt, sig.Meta = at, map[string]string{"source": []string{"demo", "github"}[i%2]}
		dec, _ := ora.NewEntry(id, ora.KindReasonerDecision, "dec-"+id, ora.ReasonerDecision{ID: "dec-" + id, SignalID: id, ActionType: "notify",
			Confidence: []float64{0.9, 0.6, 0.3}[i%3], Reasoning: strings.Repeat("because ", 100), AuthorType: ora.AuthorArchitect,
			Tier: 1, Timestamp: at, Scope: ora.Scope{AllowedOperations: []string{"notify"}}})
		dec.CreatedAt = at.Add(10 * time.Millisecond)
		add = append(add, sig, dec)
		st.of[id] = "SUCCEEDED"
	}
	l.add(add...)
}

func listServer(tb testing.TB, n int) (*console.Server, *timeLedger, *statuses, time.Time) {
	tb.Helper()
	l := &timeLedger{}
	st := &statuses{of: map[string]string{}, reads: map[string]int{}}
	t0 := time.Now().Add(-time.Duration(n+10) * time.Second)
	seedWaves(tb, l, st, t0, 0, n)
	s, _ := server(tb, false)
	s.Ledger, s.Statuses = l, st
	return s, l, st, t0
}

// The list reads one summary per wave: never a wave's entries, a final
// status once, and only what is new on each refresh.
func TestWaveListReadsSummaries(t *testing.T) {
	s, l, st, t0 := listServer(t, 30)
	h := s.Handler()
	st.set("sig-000029", "RUNNING")
	code, body := get(t, h, "/console/?band=low", nil)
	if code != http.StatusOK || !strings.Contains(body, "sig-000026") || strings.Contains(body, "sig-000028") {
		t.Fatalf("band=low: %d, want sig-000026 and not sig-000028 (medium):\n%s", code, body)
	}
	code, body = get(t, h, "/console/?status=RUNNING", nil)
	if code != http.StatusOK || !strings.Contains(body, "sig-000029") || strings.Contains(body, "sig-000028") {
		t.Fatalf("status=RUNNING: %d, want only sig-000029:\n%s", code, body)
	}
	st.set("sig-000029", "SUCCEEDED")
	seedWaves(t, l, st, t0, 30, 1) // a new wave after the first request
	_, body = get(t, h, "/console/", nil)
	if !strings.Contains(body, "sig-000030") {
		t.Errorf("the new wave is not listed")
	}
	for i := 0; i < 3; i++ {
		_, _ = get(t, h, "/console/?status=FAILED", nil) // matches nothing: every wave is read
	}
	if l.reads != 0 {
		t.Errorf("the list read whole waves %d times, want never", l.reads)
	}
	for id, n := range st.reads {
		want := 1
		if id == "sig-000029" {
			want = 3 // RUNNING twice, then SUCCEEDED for good
		}
		if n > want {
			t.Errorf("status of %s read %d times, want at most %d", id, n, want)
		}
	}
	if code, body = get(t, h, "/console/?page=2", nil); code != http.StatusOK || !strings.Contains(body, "sig-000010") || strings.Contains(body, "sig-000011") {
		t.Errorf("page 2: %d, want sig-000010 first after 20 newer:\n%s", code, body)
	}
}

// A ledger longer than one read is indexed whole, a chunk at a time, with
// waves sharing an instant at a chunk's boundary listed once.
func TestWaveListReadsInChunks(t *testing.T) {
	s, l, _, _ := listServer(t, 1200)
	l.mu.Lock()
	// Waves 680-719 share one instant, across the boundary of the first
	// chunk of 500 (the 500th newest is wave 700).
	for i := 2 * 680; i < 2*720; i++ {
		l.entries[i].CreatedAt = l.entries[2*680].CreatedAt
	}
	l.mu.Unlock()
	h := s.Handler()
	seen := map[string]int{}
	for page := 1; page <= 61; page++ {
		_, body := get(t, h, fmt.Sprintf("/console/?page=%d", page), nil)
		for _, part := range strings.Split(body, `href="/console/waves/`)[1:] {
			seen[part[:strings.Index(part, `"`)]]++
		}
	}
	if len(seen) != 1200 {
		t.Errorf("listed %d waves, want 1200", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}
}

// BenchmarkWaveList is one request of the console's waves list over 10,000
// waves, filtered (the 2-second poll of an open tab): the target is under
// 50 ms.
func BenchmarkWaveList(b *testing.B) {
	for _, q := range []string{"", "?band=low", "?status=FAILED", "?source=github&band=high&page=3"} {
		b.Run("filter "+q, func(b *testing.B) {
			s, _, _, _ := listServer(b, 10_000)
			h := s.Handler()
			if code, _ := get(b, h, "/console/"+q, nil); code != http.StatusOK { // the index's first fill
				b.Fatalf("status %d", code)
			}
			for b.Loop() {
				_, _ = get(b, h, "/console/"+q, nil)
			}
		})
	}
}

// BenchmarkWaveListSQLite is BenchmarkWaveList over the SQLite ledger of ora
// dev: 10,000 waves (a signal and a decision each), the statuses from a fake
// engine.
func BenchmarkWaveListSQLite(b *testing.B) {
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	mem := &timeLedger{}
	st := &statuses{of: map[string]string{}, reads: map[string]int{}}
	seedWaves(b, mem, st, time.Now().Add(-time.Duration(10_010)*time.Second), 0, 10_000)
	for _, e := range mem.entries {
		if _, err := db.Append(context.Background(), e); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("first fill", func(b *testing.B) { // the first request of a process
		for b.Loop() {
			s, _ := server(b, false)
			s.Ledger, s.Statuses = db, st
			if code, _ := get(b, s.Handler(), "/console/", nil); code != http.StatusOK {
				b.Fatalf("status %d", code)
			}
		}
	})
	for _, q := range []string{"", "?band=low", "?status=FAILED"} {
		b.Run("filter "+q, func(b *testing.B) {
			s, _ := server(b, false)
			s.Ledger, s.Statuses = db, st
			h := s.Handler()
			if code, body := get(b, h, "/console/"+q, nil); code != http.StatusOK { // the index's first fill
				b.Fatalf("status %d: %.300s", code, body)
			}
			for b.Loop() {
				_, _ = get(b, h, "/console/"+q, nil)
			}
		})
	}
}
