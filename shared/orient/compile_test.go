package orient_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var t0 = time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)

func testSignal(id string) ora.NormalizedSignal {
	raw := []byte(`{"confidence":"high"}`)
	return ora.NormalizedSignal{
		ID:           id,
		Source:       ora.Source{Type: ora.SourceWebhook, Name: "test", Provider: "test"},
		Timestamp:    t0,
		Payload:      raw,
		NormalizedAt: t0,
		DedupKey:     "test:" + id,
		RawDigest:    ora.Digest(raw),
		Raw:          raw,
	}
}

func fact(id, source string, utility float64, tokens int, created time.Time) ora.Fact {
	return ora.Fact{
		ID: id, WaveID: "sig-1", SourceType: source, SourceRef: "ref:" + id,
		Provenance: map[string]string{"job_id": source}, Normalized: json.RawMessage(`{"id":"` + id + `"}`),
		DedupeKey: "key:" + id, Utility: utility, EstimatedTokens: tokens, CreatedAt: created,
	}
}

func bandOf(t *testing.T, p ora.OrientationPacket, b ora.Band) ora.PacketBand {
	t.Helper()
	for _, pb := range p.Bands {
		if pb.Band == b {
			return pb
		}
	}
	t.Fatalf("packet has no band %s", b)
	return ora.PacketBand{}
}

func ids(fs []ora.Fact) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

func TestCompileTieBreak(t *testing.T) {
	src := string(orient.JobOpenCommitments)
	facts := []ora.Fact{
		fact("c", src, 0.5, 10, t0.Add(-time.Hour)),
		fact("b", src, 0.5, 10, t0.Add(-time.Hour)),
		fact("a", src, 0.5, 10, t0),
		fact("z", src, 0.9, 10, t0),
		fact("y", src, 0.5, 10, t0.Add(-2*time.Hour)),
	}
	p, err := orient.Compile(testSignal("sig-1"), facts)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(ids(bandOf(t, p, ora.BandObjectives).Facts))
	want := "[z y b c a]" // utility desc, created_at asc, fact_id asc
	if got != want {
		t.Errorf("objectives: got %s, want %s", got, want)
	}
}

func TestCompileBands(t *testing.T) {
	small := []ora.BandBudget{
		{Band: ora.BandIdentity, MinTokens: 0, TargetTokens: 300, MaxTokens: 300},
		{Band: ora.BandObjectives, MinTokens: 30, TargetTokens: 40, MaxTokens: 60},
		{Band: ora.BandSituational, MinTokens: 20, TargetTokens: 20, MaxTokens: 100},
		{Band: ora.BandReserve, MinTokens: 10, TargetTokens: 10, MaxTokens: 10},
	}
	obj, sit := string(orient.JobOpenCommitments), string(orient.JobRecentActions)
	sigTokens := orient.SignalFact(testSignal("sig-1")).EstimatedTokens
	tests := []struct {
		name      string
		budget    int
		facts     []ora.Fact
		want      map[ora.Band]string
		truncated bool
	}{
		{
			name:   "floors then targets then utility up to max",
			budget: 1000,
			facts: []ora.Fact{
				fact("o1", obj, 0.9, 25, t0), fact("o2", obj, 0.8, 10, t0), fact("o3", obj, 0.7, 5, t0),
				fact("o4", obj, 0.6, 20, t0), fact("s1", sit, 0.95, 15, t0), fact("s2", sit, 0.5, 15, t0),
			},
			// objectives floor 30: o1 (25), o3 (5); target 40: o2 (10); max 60: o4 (20).
			// situational floor 20: s1 (15); max 100: s2.
			want: map[ora.Band]string{ora.BandObjectives: "[o1 o2 o3 o4]", ora.BandSituational: "[s1 s2]"},
		},
		{
			name:   "a band's max is a hard ceiling",
			budget: 1000,
			facts: []ora.Fact{
				fact("o1", obj, 0.9, 50, t0), fact("o2", obj, 0.8, 20, t0),
			},
			// floor 30: o1 does not fit, o2 does; target 40: o1 does not; max 60: o1 does not.
			want:      map[ora.Band]string{ora.BandObjectives: "[o2]", ora.BandSituational: "[]"},
			truncated: true,
		},
		{
			name:   "unfilled floors stay reserved against the budget",
			budget: sigTokens + 65,
			facts: []ora.Fact{
				fact("o1", obj, 0.9, 30, t0), fact("o2", obj, 0.8, 30, t0),
			},
			// Identity holds the signal fact; reserved = signal + 30 + 20 + 10. o2 would
			// take objectives to 60, over the budget once the empty situational and
			// reserve floors are kept.
			want:      map[ora.Band]string{ora.BandObjectives: "[o1]", ora.BandSituational: "[]"},
			truncated: true,
		},
		{
			name:   "duplicates by dedupe key keep the better fact",
			budget: 1000,
			facts: func() []ora.Fact {
				a, b := fact("o1", obj, 0.5, 5, t0), fact("o2", obj, 0.9, 5, t0)
				a.DedupeKey, b.DedupeKey = "same", "same"
				return []ora.Fact{a, b}
			}(),
			want: map[ora.Band]string{ora.BandObjectives: "[o2]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := orient.Compile(testSignal("sig-1"), tt.facts, func(o *orient.Options) {
				o.TokenBudget, o.Bands = tt.budget, small
			})
			if err != nil {
				t.Fatal(err)
			}
			for b, want := range tt.want {
				if got := fmt.Sprint(ids(bandOf(t, p, b).Facts)); got != want {
					t.Errorf("%s: got %s, want %s", b, got, want)
				}
			}
			if p.Truncated != tt.truncated {
				t.Errorf("truncated: got %v, want %v", p.Truncated, tt.truncated)
			}
			if got := fmt.Sprint(ids(bandOf(t, p, ora.BandIdentity).Facts)); got != "[signal]" {
				t.Errorf("identity: got %s, want [signal]", got)
			}
			if p.TokenUsed > p.TokenBudget {
				t.Errorf("token_used %d over budget %d", p.TokenUsed, p.TokenBudget)
			}
		})
	}
}

func TestCheckBands(t *testing.T) {
	tests := []struct {
		name   string
		budget int
		bands  []ora.BandBudget
		field  string
	}{
		{"the defaults", ora.DefaultTokenBudget, ora.DefaultBands(), ""},
		{"zero budget", 0, ora.DefaultBands(), "token_budget"},
		{"floors over the budget", 89999, ora.DefaultBands(), "bands"},
		{"no bands", 10, []ora.BandBudget{}, "bands"},
		{"unnamed band", 10, []ora.BandBudget{{MinTokens: 1, TargetTokens: 1, MaxTokens: 1}}, "bands[0].band"},
		{"twice", 10, []ora.BandBudget{{Band: "a"}, {Band: "a"}}, "bands[1].band"},
		{"negative min", 10, []ora.BandBudget{{Band: "a", MinTokens: -1}}, "bands[0].min_tokens"},
		{"target below min", 10, []ora.BandBudget{{Band: "a", MinTokens: 2, TargetTokens: 1, MaxTokens: 3}}, "bands[0].target_tokens"},
		{"max below target", 10, []ora.BandBudget{{Band: "a", MinTokens: 1, TargetTokens: 3, MaxTokens: 2}}, "bands[0].max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := orient.CheckBands(tt.budget, tt.bands)
			if got := ora.ErrorField(err); got != tt.field || (tt.field != "" && ora.ErrorCode(err) != ora.EINVALID) {
				t.Errorf("got %v, want EINVALID on %q", err, tt.field)
			}
		})
	}
	_, err := orient.Compile(testSignal("s"), nil, func(o *orient.Options) { o.TokenBudget = 1000 })
	if ora.ErrorField(err) != "bands" {
		t.Errorf("Compile with floors over the budget: got %v, want EINVALID on bands", err)
	}
}

// randomFacts returns n facts over every source type, with sizes from tiny to
// over a band's max, coarse utilities and times so that ties happen, and a few
// duplicate dedupe keys.
func randomFacts(r *rand.Rand, n int) []ora.Fact {
	sources := []string{"open-commitments", "recent-actions", "workspace-state", "actor-history", "other"}
	out := make([]ora.Fact, n)
	for i := range out {
		size := 1 + r.IntN(3000)
		if r.IntN(20) == 0 {
			size = 20000 + r.IntN(100000)
		}
		f := fact(fmt.Sprintf("f%04d", i), sources[r.IntN(len(sources))], float64(r.IntN(5))/4, size,
			t0.Add(-time.Duration(r.IntN(4))*time.Hour))
		if r.IntN(10) == 0 {
			f.DedupeKey = fmt.Sprintf("dup%d", r.IntN(5))
		}
		out[i] = f
	}
	return out
}

func randomBands(r *rand.Rand) (int, []ora.BandBudget) {
	budget := 1000 + r.IntN(200000)
	var bands []ora.BandBudget
	floors := 0
	for _, b := range ora.DefaultBands() {
		lo := r.IntN(budget / 6)
		mid := lo + r.IntN(budget/4+1)
		hi := mid + r.IntN(budget/2+1)
		bands = append(bands, ora.BandBudget{Band: b.Band, MinTokens: lo, TargetTokens: mid, MaxTokens: hi})
		floors += lo
	}
	return max(budget, floors), bands
}

func TestCompileProperties(t *testing.T) {
	for seed := range uint64(120) {
		r := rand.New(rand.NewPCG(seed, 0x0ea))
		budget, bands := randomBands(r)
		if seed%3 == 0 {
			budget, bands = ora.DefaultTokenBudget, ora.DefaultBands()
		}
		facts := randomFacts(r, r.IntN(400))
		opt := func(o *orient.Options) { o.TokenBudget, o.Bands = budget, bands }
		compile := func(facts []ora.Fact) (ora.OrientationPacket, error) {
			if seed%2 == 0 {
				return orient.Compile(testSignal("sig-1"), facts, opt)
			}
			// Odd seeds: a profile with a source diversity share.
			prof := orient.DefaultProfile()
			prof.TokenBudget, prof.Bands, prof.MaxSourceShare = budget, bands, 0.3
			return orient.CompileProfile(testSignal("sig-1"), facts, prof, nil)
		}
		p, err := compile(facts)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		// Never over budget, and the counts add up.
		used := 0
		taken := map[string]bool{}
		for _, b := range p.Bands {
			sum := 0
			for _, f := range b.Facts {
				sum += max(1, f.EstimatedTokens)
				taken[f.ID] = true
			}
			if sum != b.UsedTokens || b.UsedTokens > b.MaxTokens {
				t.Fatalf("seed %d: band %s used %d, facts sum %d, max %d", seed, b.Band, b.UsedTokens, sum, b.MaxTokens)
			}
			used += max(b.UsedTokens, b.MinTokens)
		}
		if used > budget || p.TokenUsed > budget {
			t.Fatalf("seed %d: reserved %d, token_used %d, over budget %d", seed, used, p.TokenUsed, budget)
		}
		// Floors satisfied where facts allow: a band below its floor has no left-out,
		// non-duplicate fact that would have fit the gap.
		// A fact whose dedupe key a better one has is a duplicate, not a candidate.
		ordered := append([]ora.Fact(nil), facts...)
		slices.SortFunc(ordered, func(a, b ora.Fact) int {
			return cmp.Or(cmp.Compare(b.Utility, a.Utility), a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
		dup, keys := map[string]bool{}, map[string]bool{}
		for _, f := range ordered {
			dup[f.ID] = keys[f.DedupeKey]
			keys[f.DedupeKey] = true
		}
		for _, b := range p.Bands {
			gap := b.MinTokens - b.UsedTokens
			if gap <= 0 {
				continue
			}
			for _, f := range facts {
				if orient.BandFor(f.SourceType) == b.Band && !taken[f.ID] && !dup[f.ID] && f.EstimatedTokens <= gap {
					t.Fatalf("seed %d: band %s is %d under its floor, yet %s (%d tokens) was left out", seed, b.Band, gap, f.ID, f.EstimatedTokens)
				}
			}
		}
		// Replay determinism: shuffled input and a JSON round trip give the same packet.
		again := append([]ora.Fact(nil), facts...)
		r.Shuffle(len(again), func(i, j int) { again[i], again[j] = again[j], again[i] })
		b, _ := json.Marshal(again)
		var decoded []ora.Fact
		if err := json.Unmarshal(b, &decoded); err != nil {
			t.Fatal(err)
		}
		q, err := compile(decoded)
		if err != nil {
			t.Fatal(err)
		}
		if q.Digest != p.Digest {
			t.Fatalf("seed %d: replay digest %s, first %s", seed, q.Digest, p.Digest)
		}
		if d, _ := orient.PacketDigest(p); d != p.Digest {
			t.Fatalf("seed %d: digest %s does not match the content %s", seed, p.Digest, d)
		}
	}
}

func TestCompileGolden(t *testing.T) {
	facts := []ora.Fact{
		fact("open-commitments/00000", "open-commitments", 0.9, 40, t0.Add(-48*time.Hour)),
		fact("recent-actions/00000", "recent-actions", 0.65, 30, t0.Add(-time.Hour)),
		fact("actor-history/00000", "actor-history", 0.55, 20, t0.Add(-3*time.Hour)),
		fact("workspace-state/00000", "workspace-state", 0.45, 25, t0.Add(-10*time.Minute)),
	}
	p, err := orient.Compile(testSignal("sig-golden"), facts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "packet.golden.json")
	if *update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(append(got, '\n')) != string(want) {
		t.Errorf("packet differs from %s (run with -update after checking):\n%s", path, got)
	}
}

// BenchmarkCompile compiles a packet from 1,000 facts under the default
// budget and bands.
func BenchmarkCompile(b *testing.B) {
	facts := randomFacts(rand.New(rand.NewPCG(1, 2)), 1000)
	sig := testSignal("sig-1")
	for b.Loop() {
		if _, err := orient.Compile(sig, facts); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCompileDiversity(t *testing.T) {
	// Situational max 110,000 with share 0.5: one source may fill 55,000
	// beyond the floor phase before the other source gets its turn.
	var facts []ora.Fact
	for i := range 40 {
		f := fact(fmt.Sprintf("a%02d", i), "loud", 0.9, 3000, t0)
		f.Band = ora.BandSituational
		facts = append(facts, f)
	}
	for i := range 5 {
		f := fact(fmt.Sprintf("b%02d", i), "quiet", 0.1, 3000, t0)
		f.Band = ora.BandSituational
		facts = append(facts, f)
	}
	prof := orient.DefaultProfile()
	tests := []struct {
		share float64
		quiet int
	}{
		// Floors take 15 loud facts (45,000); the targets 10 more loud ones
		// (30,000 of the loud source's share).
		{1, 0},   // no diversity: the loud source's higher utility takes all the room
		{0.5, 2}, // loud may reach 55,000: 8 more, then quiet fills 2 before the band's max
		{0.3, 5}, // loud may reach 33,000: 1 more, all 5 quiet, then deferred loud facts fill up
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.share), func(t *testing.T) {
			prof.MaxSourceShare = tt.share
			drops := orient.Drops{}
			p, err := orient.CompileProfile(testSignal("sig-1"), facts, prof, drops)
			if err != nil {
				t.Fatal(err)
			}
			b := bandOf(t, p, ora.BandSituational)
			quiet := 0
			for _, f := range b.Facts {
				if f.SourceType == "quiet" {
					quiet++
				}
			}
			if quiet != tt.quiet || b.UsedTokens > b.MaxTokens {
				t.Errorf("quiet facts: got %d, want %d (band used %d of %d)", quiet, tt.quiet, b.UsedTokens, b.MaxTokens)
			}
			if drops[orient.DropBudget] == 0 {
				t.Errorf("drops: %v, want some budget drops", drops)
			}
		})
	}
}

func TestCompileNovelty(t *testing.T) {
	a := fact("a", "recent-actions", 0.9, 100, t0)
	b := fact("b", "recent-actions", 0.8, 100, t0)
	b.Normalized = a.Normalized // same content, another record
	c := fact("c", "recent-actions", 0.7, 100, t0)
	drops := orient.Drops{}
	p, err := orient.CompileProfile(testSignal("sig-1"), []ora.Fact{c, b, a}, orient.DefaultProfile(), drops)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(bandOf(t, p, ora.BandSituational).Facts); fmt.Sprint(got) != "[a c]" {
		t.Errorf("situational facts: got %v, want [a c] (b repeats a's content)", got)
	}
	if drops[orient.DropNotNovel] != 1 {
		t.Errorf("drops: got %v, want one not_novel", drops)
	}
}

func TestCompileFactCap(t *testing.T) {
	var facts []ora.Fact
	for i := range 10 {
		facts = append(facts, fact(fmt.Sprintf("f%02d", i), "recent-actions", float64(i)/10, 10, t0))
	}
	prof := orient.DefaultProfile()
	prof.Limits.MaxFacts = 4
	drops := orient.Drops{}
	p, err := orient.CompileProfile(testSignal("sig-1"), facts, prof, drops)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(bandOf(t, p, ora.BandSituational).Facts); fmt.Sprint(got) != "[f09 f08 f07 f06]" || drops[orient.DropFactCap] != 6 || !p.Truncated {
		t.Errorf("got %v, drops %v, truncated %v; want the 4 best, 6 fact_cap drops, truncated", got, drops, p.Truncated)
	}
}

// benchFacts returns n facts shaped like the ledger family's: about 120
// bytes of normalized JSON each, spread over the four ledger queries and two
// other families, with utilities from 0 to 1 and a day of timestamps.
func benchFacts(n int) []ora.Fact {
	r := rand.New(rand.NewPCG(7, 11))
	sources := []string{"open-commitments", "recent-actions", "workspace-state", "actor-history", "objects", "http"}
	out := make([]ora.Fact, n)
	for i := range out {
		id := fmt.Sprintf("job-%04d/%05d", i/50, i%50)
		src := sources[r.IntN(len(sources))]
		out[i] = ora.Fact{
			ID: id, WaveID: "sig-1", SourceType: src, SourceRef: "ledger:" + id,
			Provenance: map[string]string{"store": "ledger", "job_id": id[:8]},
			Normalized: json.RawMessage(fmt.Sprintf(`{"signal_id":"s-%d","kind":"execution-evidence","qualifier":"%d","body":{"ok":true,"n":%d}}`, i, i%7, r.IntN(1e6))),
			DedupeKey:  "ref:" + id, Utility: math.Round(r.Float64()*1e6) / 1e6, EstimatedTokens: 60 + r.IntN(120),
			CreatedAt: t0.Add(-time.Duration(r.IntN(86400)) * time.Second),
		}
	}
	return out
}

// BenchmarkCompileScale compiles 5,000, 50,000 and 500,000 facts into a
// 150,000-token packet under the default profile (README, "Orientation").
func BenchmarkCompileScale(b *testing.B) {
	prof := orient.DefaultProfile()
	prof.Limits.MaxFacts = ora.DefaultMaxFacts
	for _, n := range []int{5000, 50000, 500000} {
		facts := benchFacts(n)
		sig := testSignal("sig-1")
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			if n > ora.DefaultMaxFacts {
				prof.Limits.MaxFacts = ora.DefaultMaxFacts // the cap applies: the rest are dropped after the sort
			}
			var walls []time.Duration
			cpu0 := processCPU()
			for b.Loop() {
				start := time.Now()
				if _, err := orient.CompileProfile(sig, facts, prof, nil); err != nil {
					b.Fatal(err)
				}
				walls = append(walls, time.Since(start))
			}
			// The target is a median; on a shared machine the CPU
			// the process spent (GC included) is steadier than wall time.
			slices.Sort(walls)
			b.ReportMetric(float64(walls[len(walls)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(processCPU()-cpu0)/1e6/float64(len(walls)), "cpu-ms/op")
		})
	}
}

// processCPU is the user and system CPU the process has spent so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PacketDigest writes the packet's JSON itself; it must hash exactly the
// bytes json.Marshal makes, for every kind of value a fact may hold.
func TestPacketDigestIsEncodingJSONs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	strs := []string{"", "plain", "with \"quotes\" and \\", "<b>&amp;</b>", "tab\there\nnewline", "\x00\x01\x1f\x7f",
		"héllo wörld", "line\u2028sep\u2029", "bad \xff utf-8", "emoji 🙂", "ref:job-1/00001"}
	raws := []json.RawMessage{nil, json.RawMessage(`{"a":1}`), json.RawMessage(`{ "a" : [1, 2] }`), json.RawMessage(`"<tag>&"`),
		json.RawMessage(`{"s":"h\u00e9"}`), json.RawMessage(`{"s":"é"}`), json.RawMessage("[1,\n2]"), json.RawMessage(`123`), json.RawMessage(`{"x":"\u2028"}`),
		json.RawMessage(`{"m":"with spaces and \"quotes\" \\ and \u003c"}`), json.RawMessage(`{"m":"a b",  "n":1}`), json.RawMessage(`{"m":"tab\there"}`),
		json.RawMessage(`["a b",{"k":"v w"}]`), json.RawMessage(`{"m":"é ok"}`), json.RawMessage(`{"m":"<b>"}`), json.RawMessage(`{"m":"x\\"}`)}
	floats := []float64{0, math.Copysign(0, -1), 1, 0.5, 0.123456, 1e-7, 3e-9, 1e21, 2.5e22, 1e20, -0.25, 123456789.125, 1e-6}
	times := []time.Time{{}, t0, t0.Add(123456789 * time.Nanosecond), t0.In(time.FixedZone("x", -5*3600-30*60)), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)}
	// Every other run draws only values that decode to themselves (plain
	// strings, compact ASCII bodies, floats without exponents, UTC times), so
	// that its facts are kept for the compile step's read.
	plainStrs, plainRaws := []string{"", "plain", "ref:job-1/00001", "with spaces"}, []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"m":"a b"}`), json.RawMessage(`123`)}
	allStrs, allRaws, allFloats, allTimes := strs, raws, floats, times
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	keptRuns := 0
	for run := range 300 {
		strs, raws, floats, times := allStrs, allRaws, allFloats, allTimes
		if run%2 == 1 {
			strs, raws, floats, times = plainStrs, plainRaws, floats[:7], times[:3]
		}
		p := ora.OrientationPacket{ID: pick(strs), WaveID: pick(strs), ProfileID: pick(strs), ProfileVersion: r.IntN(9),
			TokenBudget: r.IntN(200000), TokenUsed: r.IntN(200000) - 10, Truncated: r.IntN(2) == 0, Digest: pick(strs)}
		if r.IntN(10) > 0 {
			p.Bands = []ora.PacketBand{}
		}
		for range r.IntN(4) {
			b := ora.PacketBand{BandBudget: ora.BandBudget{Band: ora.Band(pick(strs)), MinTokens: r.IntN(100), TargetTokens: r.IntN(100), MaxTokens: r.IntN(100)}, UsedTokens: r.IntN(100)}
			if r.IntN(5) > 0 {
				b.Facts = []ora.Fact{}
			}
			for range r.IntN(6) {
				f := ora.Fact{ID: pick(strs), WaveID: pick(strs), SourceType: pick(strs), SourceRef: pick(strs),
					Normalized: raws[r.IntN(len(raws))], DedupeKey: pick(strs), Band: ora.Band(pick(strs)),
					Utility: floats[r.IntN(len(floats))], EstimatedTokens: r.IntN(500), CreatedAt: times[r.IntN(len(times))]}
				if r.IntN(4) > 0 {
					f.Provenance = map[string]string{}
					for range r.IntN(4) {
						f.Provenance[pick(strs)] = pick(strs)
					}
				}
				b.Facts = append(b.Facts, f)
			}
			p.Bands = append(p.Bands, b)
		}
		got, err := orient.PacketDigest(p)
		q := p
		q.Digest = ""
		b, jerr := json.Marshal(q)
		if err != nil || jerr != nil {
			t.Fatalf("run %d: PacketDigest error %v, json.Marshal error %v", run, err, jerr)
		}
		if want := ora.Digest(b); got != want {
			t.Fatalf("run %d: PacketDigest %s, want %s, the digest of %s", run, got, want, b)
		}
		// The packet entry's body and a fetch job's parts are the same
		// encoder's bytes: equal to json.Marshal's too.
		want, _ := json.Marshal(p)
		if body, err := orient.EncodePacket(&p); err != nil || !bytes.Equal(body, want) {
			t.Fatalf("run %d: EncodePacket\n got  %s (%v)\n want %s", run, body, err, want)
		}
		var facts []ora.Fact
		for _, b := range p.Bands {
			for _, f := range b.Facts {
				want, _ := json.Marshal(f)
				if got, err := orient.AppendFact([]byte("x"), &f); err != nil || !bytes.Equal(got, append([]byte("x"), want...)) {
					t.Fatalf("run %d: AppendFact\n got  %s (%v)\n want x%s", run, got, err, want)
				}
				facts = append(facts, f)
			}
		}
		job := orient.Job{ID: pick(strs), Kind: orient.JobKind(pick(strs))}
		es, err := orient.FactEntries("sig-1", job, facts)
		if err != nil {
			t.Fatalf("run %d: FactEntries: %v", run, err)
		}
		if len(facts) == 0 && len(es) != 0 || len(facts) > 0 && len(es) != 1 {
			t.Fatalf("run %d: %d facts in %d entries, want one entry (none without facts)", run, len(facts), len(es))
		}
		if len(es) == 1 {
			want, _ := json.Marshal(orient.JobFacts{JobID: job.ID, JobKind: job.Kind, Facts: facts})
			if !bytes.Equal(es[0].Body, want) || es[0].Digest != ora.Digest(want) || es[0].Validate() != nil {
				t.Fatalf("run %d: facts entry\n got  %s (digest %s, valid %v)\n want %s", run, es[0].Body, es[0].Digest, es[0].Validate(), want)
			}
			// Facts kept for the compile step's read are what decoding
			// the body gives.
			if kept, ok := orient.KeptFacts(es[0].Digest); ok {
				keptRuns++
				var jf orient.JobFacts
				if err := json.Unmarshal(es[0].Body, &jf); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(kept, jf.Facts) {
					t.Fatalf("run %d: kept facts\n %+v\ndecoded\n %+v", run, kept, jf.Facts)
				}
			}
		}
	}
	if keptRuns == 0 {
		t.Error("no run's facts were kept: the kept facts were not compared")
	}
	// What json.Marshal refuses, PacketDigest refuses.
	for _, f := range []ora.Fact{{Utility: math.NaN()}, {Utility: math.Inf(1)}, {Normalized: json.RawMessage(`{`)}, {Normalized: json.RawMessage{}},
		{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, {CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 24*3600))}} {
		p := ora.OrientationPacket{Bands: []ora.PacketBand{{Facts: []ora.Fact{f}}}}
		if _, err := orient.PacketDigest(p); err == nil {
			t.Errorf("PacketDigest of a fact json.Marshal refuses (%+v): no error", f)
		}
	}
}

// Compiles running at once (ora dev compiles several waves together) share
// the pooled working memory safely: each gets the packet it gets alone.
func TestCompileConcurrently(t *testing.T) {
	prof := orient.DefaultProfile()
	sizes := []int{3000, 700, 5000, 1200}
	want := make([]string, len(sizes))
	facts := make([][]ora.Fact, len(sizes))
	for i, n := range sizes {
		facts[i] = benchFacts(n)
		p, err := orient.CompileProfile(testSignal("sig-1"), facts[i], prof, nil)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = p.Digest
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(sizes)*5)
	for round := range 5 {
		for i := range sizes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := orient.CompileProfile(testSignal("sig-1"), facts[i], prof, nil)
				if err == nil && p.Digest != want[i] {
					err = fmt.Errorf("round %d, %d facts: digest %s, want %s", round, sizes[i], p.Digest, want[i])
				}
				if err != nil {
					errs <- err
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
