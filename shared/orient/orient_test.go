package orient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/sqlite"
)

func openLedger(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func appendEntry(t *testing.T, l ora.Ledger, signalID string, kind ora.EntryKind, qualifier string, body any, at time.Time) ora.Entry {
	t.Helper()
	e, err := ora.NewEntry(signalID, kind, qualifier, body)
	if err != nil {
		t.Fatal(err)
	}
	e.CreatedAt = at
	stored, err := l.Append(context.Background(), e)
	if err != nil {
		t.Fatalf("append %s/%s: %v", signalID, kind, err)
	}
	return stored
}

func storeSignal(t *testing.T, l ora.Ledger, sig ora.NormalizedSignal) {
	t.Helper()
	appendEntry(t, l, sig.ID, ora.KindSignalReceived, "", sig, sig.NormalizedAt)
}

// seedWorld writes a history around a wave whose signal arrives at t0: other
// signals, evidence and verdicts inside and outside the job windows, and open
// and closed commitments.
func seedWorld(t *testing.T, l ora.Ledger) ora.NormalizedSignal {
	t.Helper()
	ctx := context.Background()
	for i, at := range []time.Duration{-30 * time.Minute, -2 * time.Hour, 10 * time.Minute} {
		s := testSignal(fmt.Sprintf("other-%d", i))
		s.NormalizedAt, s.Timestamp = t0.Add(at), t0.Add(at)
		storeSignal(t, l, s)
	}
	appendEntry(t, l, "other-0", ora.KindExecutionEvidence, "0", map[string]any{"action": "notify", "ok": true}, t0.Add(-20*time.Minute))
	appendEntry(t, l, "other-1", ora.KindExecutionEvidence, "0", map[string]any{"action": "notify", "blob": strings.Repeat("x", 5000)}, t0.Add(-90*time.Minute))
	appendEntry(t, l, "old", ora.KindExecutionEvidence, "0", map[string]any{"action": "notify"}, t0.Add(-48*time.Hour))
	appendEntry(t, l, "other-0", ora.KindFinalVerdict, "", map[string]any{"final": "completed"}, t0.Add(-19*time.Minute))
	appendEntry(t, l, "other-1", ora.KindFinalVerdict, "", map[string]any{"final": "failed"}, t0.Add(-3*24*time.Hour))
	for i, id := range []string{"c-1", "c-2", "c-3"} {
		if _, err := l.OpenCommitment(ctx, ora.Commitment{ID: id, SignalID: "other-0", Title: "promise " + id, Status: ora.CommitmentOpen, OpenedAt: t0.Add(time.Duration(i-1) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.CloseCommitment(ctx, "c-1", "test"); err != nil {
		t.Fatal(err)
	}
	sig := testSignal("sig-1")
	storeSignal(t, l, sig)
	return sig
}

func TestPlan(t *testing.T) {
	l := openLedger(t)
	sig := seedWorld(t, l)
	jobs, err := orient.NewPlanner(l).Plan(context.Background(), sig.ID)
	if err != nil {
		t.Fatal(err)
	}
	again := orient.Plan(sig)
	a, _ := json.Marshal(jobs)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Errorf("plans differ:\n%s\n%s", a, b)
	}
	want := []struct {
		id     string
		window time.Duration
	}{{"open-commitments", 0}, {"recent-actions", 24 * time.Hour}, {"workspace-state", time.Hour}, {"actor-history", 7 * 24 * time.Hour}}
	if len(jobs) != len(want) {
		t.Fatalf("got %d jobs, want %d", len(jobs), len(want))
	}
	for i, w := range want {
		j := jobs[i]
		if j.ID != w.id || string(j.Kind) != w.id || j.Params.Window() != w.window || !j.Params.AsOf.Equal(t0) || j.Params.Limit != 50 {
			t.Errorf("job %d: got %+v, want id %s window %v as_of %v limit 50", i, j, w.id, w.window, t0)
		}
		if err := j.Validate(); err != nil {
			t.Errorf("job %s does not validate: %v", j.ID, err)
		}
	}
	for _, tt := range []struct{ name, id, code string }{
		{"unknown signal", "nope", ora.ENOTFOUND},
		{"empty id", "", ora.EINVALID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := orient.NewPlanner(l).Plan(context.Background(), tt.id); ora.ErrorCode(err) != tt.code {
				t.Errorf("got %v, want %s", err, tt.code)
			}
		})
	}
}

// ledgerOnly hides the SQLite ledger's batch write: Fetch then writes one
// Append per fact, as it does on a store without one.
type ledgerOnly struct{ ora.Ledger }

func TestFetch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(*sqlite.DB) orient.Store
	}{
		{"one transaction per job", func(db *sqlite.DB) orient.Store { return db }},
		{"one append per fact", func(db *sqlite.DB) orient.Store { return ledgerOnly{db} }},
	} {
		t.Run(tc.name, func(t *testing.T) { testFetch(t, tc.store) })
	}
}

func testFetch(t *testing.T, store func(*sqlite.DB) orient.Store) {
	l := openLedger(t)
	sig := seedWorld(t, l)
	ctx := context.Background()
	f := orient.NewFetcher(store(l))
	jobs := orient.Plan(sig)
	want := map[string][]string{
		// c-1 is closed; c-3 opened after the signal.
		"open-commitments": {"commitment:c-2"},
		// newest first; the 48 h old one is outside the window.
		"recent-actions": {"ledger:other-0/execution-evidence/0", "ledger:other-1/execution-evidence/0"},
		// other-1 is two hours old, other-2 arrived after; the wave's own signal is left out.
		"workspace-state": {"ledger:other-0/signal-received/"},
		"actor-history":   {"ledger:other-0/final-verdict/", "ledger:other-1/final-verdict/"},
	}
	for _, j := range jobs {
		t.Run(j.ID, func(t *testing.T) {
			n, err := f.Fetch(ctx, sig.ID, j)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(want[j.ID]) {
				t.Errorf("facts: got %d, want %d", n, len(want[j.ID]))
			}
			again, err := f.Fetch(ctx, sig.ID, j)
			if err != nil || again != n {
				t.Errorf("re-run: got %d, %v; want %d, nil", again, err, n)
			}
		})
	}
	entries, err := l.Entries(ctx, sig.ID)
	if err != nil {
		t.Fatal(err)
	}
	// One observed-fact entry per job (its facts fit one part), qualified
	// by FactsQualifier, each fact qualified by FactQualifier within it.
	parts := map[string]bool{}
	for _, e := range entries {
		if e.Kind == ora.KindObservedFact {
			parts[e.Qualifier] = true
			if e.Meta["job_id"] == "" || e.Qualifier != orient.FactsQualifier(e.Meta["job_id"], 0) {
				t.Errorf("facts entry %q: meta %v, want the job's first part", e.Qualifier, e.Meta)
			}
		}
	}
	if len(parts) != len(jobs) {
		t.Errorf("%d observed-fact entries %v, want one per job (%d)", len(parts), parts, len(jobs))
	}
	facts, err := orient.FactsOf(entries)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, fact := range facts {
		if !strings.HasPrefix(fact.ID, fact.Provenance["job_id"]+"/") || fact.WaveID != sig.ID || fact.Provenance["job_id"] == "" || fact.Utility <= 0 || fact.Utility > 1 {
			t.Errorf("fact %s: bad id, wave, provenance or utility: %+v", fact.ID, fact)
		}
		if want := orient.EstimateTokens(mustJSON(t, withTokens(fact, 0))); fact.EstimatedTokens != want {
			t.Errorf("fact %s: estimated_tokens %d, want %d", fact.ID, fact.EstimatedTokens, want)
		}
		if fact.SourceRef == "ledger:other-1/execution-evidence/0" && !strings.Contains(string(fact.Normalized), `"body_digest"`) {
			t.Errorf("a 5 kB body is carried inline: %s", fact.Normalized)
		}
		got[fact.SourceType] = append(got[fact.SourceType], fact.SourceRef)
	}
	for k, w := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(w) {
			t.Errorf("%s: got %v, want %v", k, got[k], w)
		}
	}
	t.Run("invalid jobs write nothing", func(t *testing.T) {
		bad := []orient.Job{
			{ID: "", Kind: orient.JobActorHistory, Params: jobs[3].Params},
			{ID: "x", Kind: "everything", Params: jobs[3].Params},
			{ID: "x", Kind: orient.JobActorHistory, Params: orient.Params{AsOf: t0, Limit: 0, WindowSeconds: 60}},
			{ID: "x", Kind: orient.JobActorHistory, Params: orient.Params{Limit: 5, WindowSeconds: 60}},
			{ID: "x", Kind: orient.JobActorHistory, Params: orient.Params{AsOf: t0, Limit: 5}},
		}
		for _, j := range bad {
			if _, err := f.Fetch(ctx, sig.ID, j); ora.ErrorCode(err) != ora.EINVALID {
				t.Errorf("job %+v: got %v, want EINVALID", j, err)
			}
		}
		after, _ := l.Entries(ctx, sig.ID)
		if len(after) != len(entries) {
			t.Errorf("entries: got %d, want %d", len(after), len(entries))
		}
	})
}

func withTokens(f ora.Fact, n int) ora.Fact { f.EstimatedTokens = n; return f }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUtility(t *testing.T) {
	tests := []struct {
		name string
		kind orient.JobKind
		age  time.Duration
		want float64
	}{
		{"fresh action", orient.JobRecentActions, 0, 0.7},
		{"action one half-life old", orient.JobRecentActions, orient.RecencyHalfLife, 0.525},
		{"very old action floors at half", orient.JobRecentActions, 1000 * time.Hour, 0.35},
		{"old commitment keeps its weight", orient.JobOpenCommitments, 1000 * time.Hour, 0.9},
		{"record from the future counts as fresh", orient.JobWorkspaceState, -time.Hour, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := orient.Utility(tt.kind, t0.Add(-tt.age), t0); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCompilePersists(t *testing.T) {
	l := openLedger(t)
	sig := seedWorld(t, l)
	ctx := context.Background()
	f := orient.NewFetcher(l)
	for _, j := range orient.Plan(sig) {
		if _, err := f.Fetch(ctx, sig.ID, j); err != nil {
			t.Fatal(err)
		}
	}
	c := orient.NewCompiler(l)
	p, err := c.Compile(ctx, sig.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != orient.PacketID(sig.ID) || p.TokenBudget != ora.DefaultTokenBudget || p.TokenUsed <= 0 || p.TokenUsed > p.TokenBudget {
		t.Errorf("packet %s: budget %d used %d", p.ID, p.TokenBudget, p.TokenUsed)
	}
	facts := 0
	for _, b := range p.Bands {
		facts += len(b.Facts)
	}
	if facts != 7 { // the signal and the six facts of TestFetch
		t.Errorf("packet holds %d facts, want 7", facts)
	}
	// A crash-retry recompiles to the same digest and succeeds.
	q, err := c.Compile(ctx, sig.ID)
	if err != nil || q.Digest != p.Digest {
		t.Fatalf("retry: got %s, %v; want %s", q.Digest, err, p.Digest)
	}
	// The reasoner reads exactly what was compiled.
	in, err := orient.Input(ctx, l, sig.ID)
	if err != nil {
		t.Fatal(err)
	}
	if in.Packet.Digest != p.Digest || in.Signal.ID != sig.ID {
		t.Errorf("input: packet %s signal %s; want %s %s", in.Packet.Digest, in.Signal.ID, p.Digest, sig.ID)
	}
	entries, _ := l.Entries(ctx, sig.ID)
	packets := 0
	for _, e := range entries {
		if e.Kind == ora.KindOrientationPacket {
			packets++
		}
	}
	if packets != 1 {
		t.Errorf("the wave has %d packets, want 1", packets)
	}

	t.Run("a different budget after the packet is written returns the stored one", func(t *testing.T) {
		small := orient.NewCompiler(l, func(o *orient.Options) { o.TokenBudget = 100000 })
		r, err := small.Compile(ctx, sig.ID)
		if err != nil || r.Digest != p.Digest {
			t.Errorf("got %s, %v; want the stored %s", r.Digest, err, p.Digest)
		}
	})
	t.Run("unknown signal", func(t *testing.T) {
		if _, err := c.Compile(ctx, "nope"); ora.ErrorCode(err) != ora.ENOTFOUND {
			t.Errorf("got %v, want ENOTFOUND", err)
		}
	})
	t.Run("input without a packet", func(t *testing.T) {
		if _, err := orient.Input(ctx, l, "other-0"); ora.ErrorCode(err) != ora.ENOTFOUND {
			t.Errorf("got %v, want ENOTFOUND", err)
		}
	})
}

func TestEnvOptions(t *testing.T) {
	tests := []struct {
		name, value string
		budget      int
		field       string
	}{
		{"unset keeps the default", "", ora.DefaultTokenBudget, ""},
		{"a budget", "200000", 200000, ""},
		{"not a number", "lots", 0, "ORA_TOKEN_BUDGET"},
		{"negative", "-5", 0, "ORA_TOKEN_BUDGET"},
		{"below the floors", "1000", 0, "ORA_TOKEN_BUDGET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt, err := orient.EnvOptions(func(k string) string {
				if k == "ORA_TOKEN_BUDGET" {
					return tt.value
				}
				return ""
			})
			if tt.field != "" {
				if ora.ErrorField(err) != tt.field {
					t.Fatalf("got %v, want EINVALID on %s", err, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, err := orient.Compile(testSignal("s"), nil, opt)
			if err != nil {
				t.Fatal(err)
			}
			if p.TokenBudget != tt.budget {
				t.Errorf("budget: got %d, want %d", p.TokenBudget, tt.budget)
			}
		})
	}
}

// kindsOnly is a ledger whose whole read of one wave fails: a stage reading
// that wave through it reads only the kinds it names.
type kindsOnly struct {
	*sqlite.DB
	wave  string
	kinds map[ora.EntryKind]bool
}

func (k *kindsOnly) Entries(ctx context.Context, signalID string) ([]ora.Entry, error) {
	if signalID == k.wave {
		return nil, fmt.Errorf("whole read of wave %s", signalID)
	}
	return k.DB.Entries(ctx, signalID)
}

func (k *kindsOnly) EntriesOfKinds(ctx context.Context, signalID string, kinds ...ora.EntryKind) ([]ora.Entry, error) {
	for _, kind := range kinds {
		k.kinds[kind] = k.kinds[kind] || signalID == k.wave
	}
	return k.DB.EntriesOfKinds(ctx, signalID, kinds...)
}

func TestPlanAndCompileReadOnlyTheirKinds(t *testing.T) {
	l := openLedger(t)
	sig := seedWorld(t, l)
	ctx := context.Background()
	k := &kindsOnly{DB: l, wave: sig.ID, kinds: map[ora.EntryKind]bool{}}
	wp, err := orient.NewPlanner(k).PlanWave(ctx, sig.ID)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	f := orient.NewFetcher(l)
	for _, j := range wp.Jobs {
		if _, err := f.Fetch(ctx, sig.ID, j); err != nil {
			t.Fatal(err)
		}
	}
	p, err := orient.NewCompiler(k).Compile(ctx, sig.ID)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	for _, kind := range []ora.EntryKind{ora.KindOrientationAudit, ora.KindReasonerDecision} {
		if k.kinds[kind] {
			t.Errorf("read %s entries", kind)
		}
	}
	// What was compiled from the kinds read is what a replay over the whole
	// wave compiles.
	v, err := orient.NewCompiler(l).Verify(ctx, sig.ID)
	if err != nil || v.StoredDigest != p.Digest || v.ReplayDigest != p.Digest {
		t.Fatalf("verify: %+v, %v; want digest %s", v, err, p.Digest)
	}
	// A retry finds the stored packet through the same reads.
	q, err := orient.NewCompiler(k).Compile(ctx, sig.ID)
	if err != nil || q.Digest != p.Digest {
		t.Fatalf("retry: got %s, %v; want %s", q.Digest, err, p.Digest)
	}
}
