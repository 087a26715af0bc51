package orient

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// compileSimple is the straightforward implementation compile replaced: a
// full sort, then each phase over every fact. It is the reference the
// property test holds compile to.
// simpleKey is the reference implementation's sort key.
type simpleKey struct {
	utility float64
	sec     int64
	nsec    int32
	i       int32
}

func compileSimple(sig ora.NormalizedSignal, facts []ora.Fact, sp spec, drops Drops) (ora.OrientationPacket, error) {
	w := Wave{Drops: drops}
	sigFact := SignalFact(sig)
	fact := func(i int32) *ora.Fact {
		if int(i) == len(facts) {
			return &sigFact
		}
		return &facts[i]
	}
	keys := make([]simpleKey, len(facts)+1)
	for i := range keys {
		f := fact(int32(i))
		keys[i] = simpleKey{f.Utility, f.CreatedAt.Unix(), int32(f.CreatedAt.Nanosecond()), int32(i)}
	}
	slices.SortFunc(keys, func(a, b simpleKey) int {
		if c := cmp.Compare(b.utility, a.utility); c != 0 {
			return c
		}
		if c := cmp.Compare(a.sec, b.sec); c != 0 {
			return c
		}
		if c := cmp.Compare(a.nsec, b.nsec); c != 0 {
			return c
		}
		return before(fact(a.i), fact(b.i))
	})
	// order[r] is the fact of rank r; from here on facts are named by rank.
	order := make([]*ora.Fact, len(keys))
	for r, k := range keys {
		order[r] = fact(k.i)
	}

	type band struct {
		ora.BandBudget
		used   int
		bySrc  map[string]int // tokens taken in steps 3-5, by source type
		queue  []int32        // ranks of candidates, not yet admitted
		taken  []int32
		srcCap int
	}
	bands := make([]*band, len(sp.bands))
	for i, b := range sp.bands {
		bands[i] = &band{BandBudget: b, bySrc: map[string]int{}, srcCap: int(sp.share * float64(b.MaxTokens))}
	}
	find := func(name ora.Band) *band {
		for _, b := range bands {
			if b.Band == name {
				return b
			}
		}
		return nil
	}
	bandOf := func(f *ora.Fact) *band {
		if f.Band != "" {
			if b := find(f.Band); b != nil {
				return b
			}
		}
		return find(BandFor(f.SourceType))
	}
	candidate := make([]*band, len(order)) // the band of each kept rank
	truncated := false
	ids := make(map[string]struct{}, min(len(order), sp.maxFacts+1))
	dedupe := make(map[string]struct{}, min(len(order), sp.maxFacts+1))
	kept := 0
	for r, f := range order {
		if kept > sp.maxFacts { // +1: the signal's own fact is not an observation
			w.drop(DropFactCap, len(order)-r) // the rest, without looking for duplicates
			truncated = true
			break
		}
		if _, dup := ids[f.ID]; dup {
			w.drop(DropDuplicate, 1)
			continue
		}
		if _, dup := dedupe[f.DedupeKey]; dup && f.DedupeKey != "" {
			w.drop(DropDuplicate, 1)
			continue
		}
		ids[f.ID] = struct{}{}
		if f.DedupeKey != "" {
			dedupe[f.DedupeKey] = struct{}{}
		}
		kept++
		b := bandOf(f)
		if b == nil {
			w.drop(DropNoBand, 1)
			truncated = true
			continue
		}
		candidate[r] = b
		b.queue = append(b.queue, int32(r))
	}
	reserved := 0
	for _, b := range bands {
		reserved += b.MinTokens
	}
	seed := maphash.MakeSeed()
	content := map[uint64][]*ora.Fact{}
	novel := func(f *ora.Fact) bool {
		for _, g := range content[maphash.Bytes(seed, f.Normalized)] {
			if bytes.Equal(g.Normalized, f.Normalized) {
				return false
			}
		}
		return true
	}
	// try admits the fact of rank r into its band within limit; it reports
	// whether the fact is settled (admitted, or dropped as not novel) rather
	// than left for later.
	try := func(r int32, limit func(*band) int, checkBudget, diverse bool) bool {
		f, b := order[r], candidate[r]
		t := tokens(*f)
		grow := max(b.used+t, b.MinTokens) - max(b.used, b.MinTokens)
		if b.used+t > limit(b) || (checkBudget && reserved+grow > sp.budget) {
			return false
		}
		if diverse && b.bySrc[f.SourceType]+t > b.srcCap {
			return false
		}
		if !novel(f) {
			w.drop(DropNotNovel, 1)
			return true
		}
		if checkBudget {
			b.bySrc[f.SourceType] += t
		}
		b.used += t
		reserved += grow
		b.taken = append(b.taken, r)
		h := maphash.Bytes(seed, f.Normalized)
		content[h] = append(content[h], f)
		return true
	}
	floor := func(b *band) int { return b.MinTokens }
	target := func(b *band) int { return b.TargetTokens }
	ceiling := func(b *band) int { return b.MaxTokens }
	admit := func(b *band, limit func(*band) int, checkBudget, diverse bool) {
		rest := b.queue[:0]
		for _, r := range b.queue {
			if !try(r, limit, checkBudget, diverse) {
				rest = append(rest, r)
			}
		}
		b.queue = rest
	}
	for _, b := range bands {
		admit(b, floor, false, false)
	}
	for _, b := range bands {
		admit(b, target, true, true)
	}
	// The facts not yet admitted, in the stable order (ranks ascending).
	var rest []int32
	for _, b := range bands {
		rest = append(rest, b.queue...)
		b.queue = nil
	}
	slices.Sort(rest)
	deferred := rest[:0]
	for i, r := range rest {
		if reserved >= sp.budget {
			// Full: every floor phase fact is in, so nothing else can fit.
			deferred = append(deferred, rest[i:]...)
			break
		}
		if !try(r, ceiling, true, true) {
			deferred = append(deferred, r)
		}
	}
	for _, r := range deferred {
		if reserved >= sp.budget || !try(r, ceiling, true, false) {
			w.drop(DropBudget, 1)
			truncated = true
		}
	}

	p := ora.OrientationPacket{
		ID:             PacketID(sig.ID),
		WaveID:         sig.ID,
		ProfileID:      sp.profileID,
		ProfileVersion: sp.version,
		TokenBudget:    sp.budget,
		Truncated:      truncated,
		Bands:          make([]ora.PacketBand, len(bands)),
	}
	for i, b := range bands {
		slices.Sort(b.taken)
		taken := make([]ora.Fact, len(b.taken))
		for j, r := range b.taken {
			taken[j] = *order[r]
		}
		p.Bands[i] = ora.PacketBand{BandBudget: b.BandBudget, UsedTokens: b.used, Facts: taken}
		p.TokenUsed += b.used
	}
	d, err := PacketDigest(p)
	if err != nil {
		return ora.OrientationPacket{}, err
	}
	p.Digest = d
	return p, nil
}

// randomCompileInput makes facts that exercise every rule: repeated ids and
// dedupe keys, repeated content, equal utilities and times, tiny and huge
// facts, facts of bands the profile lacks.
func randomCompileInput(r *rand.Rand) ([]ora.Fact, spec) {
	t0 := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	sources := []string{"open-commitments", "recent-actions", "workspace-state", "actor-history", "objects", "http"}
	n := r.IntN(400)
	facts := make([]ora.Fact, n)
	ties := map[string]ora.Fact{}
	for i := range facts {
		id := fmt.Sprintf("f%03d", r.IntN(n+1))
		size := 1 + r.IntN(400)
		if r.IntN(15) == 0 {
			size = 2000 + r.IntN(20000)
		}
		f := ora.Fact{
			ID: id, SourceType: sources[r.IntN(len(sources))], Utility: float64(r.IntN(6)) / 5,
			EstimatedTokens: size, CreatedAt: t0.Add(-time.Duration(r.IntN(3)) * time.Hour),
			Normalized: json.RawMessage(fmt.Sprintf(`{"v":%d}`, r.IntN(n/2+1))), DedupeKey: "k:" + id,
		}
		if r.IntN(8) == 0 {
			f.DedupeKey = fmt.Sprintf("shared%d", r.IntN(4))
		}
		if r.IntN(10) == 0 {
			f.DedupeKey = ""
		}
		if r.IntN(12) == 0 {
			f.Band = ora.Band([]string{"identity", "objectives", "exploration", "nowhere"}[r.IntN(4)])
		}
		// Facts equal in every field the order compares are equal in all:
		// the order between two such is not specified.
		tie := fmt.Sprint(f.ID, f.DedupeKey, string(f.Normalized), f.Utility, f.CreatedAt)
		if g, ok := ties[tie]; ok {
			f = g
		}
		ties[tie] = f
		facts[i] = f
	}
	budget := 500 + r.IntN(40000)
	var bands []ora.BandBudget
	floors := 0
	for _, b := range ora.DefaultBands() {
		if r.IntN(8) == 0 {
			continue // a band the profile lacks: its facts have no band
		}
		lo := r.IntN(budget/8 + 1)
		if floors+lo > budget {
			lo = 0
		}
		floors += lo
		mid := lo + r.IntN(budget/4+1)
		bands = append(bands, ora.BandBudget{Band: b.Band, MinTokens: lo, TargetTokens: mid, MaxTokens: mid + r.IntN(budget/2+1)})
	}
	if len(bands) == 0 {
		bands = ora.DefaultBands()
		budget = ora.DefaultTokenBudget
	}
	share := []float64{1, 0.5, 0.3, 0.1}[r.IntN(4)]
	return facts, spec{"p", 1, budget, bands, share, 1 + r.IntN(n+2), nil}
}

// compile produces exactly the packet and the drop counts of the simple
// implementation, on random inputs.
func TestCompileMatchesTheSimpleImplementation(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	sig := ora.NormalizedSignal{ID: "sig-1", Source: ora.Source{Type: ora.SourceWebhook, Name: "t", Provider: "t"},
		Timestamp: time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC), NormalizedAt: time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)}
	for i := range 1000 {
		facts, sp := randomCompileInput(r)
		wantDrops, gotDrops := Drops{}, Drops{}
		want, err := compileSimple(sig, facts, sp, wantDrops)
		if err != nil {
			t.Fatal(err)
		}
		got, unsigned, err := compile(sig, facts, sp, gotDrops)
		if err != nil {
			t.Fatal(err)
		}
		// The entry's body spliced from the unsigned encoding is json.Marshal's.
		if body, err := withDigest(unsigned, &got); err != nil || !bytes.Equal(body, mustMarshal(t, got)) {
			t.Fatalf("case %d: the packet's body from its unsigned encoding differs from json.Marshal's (%v)", i, err)
		}
		if got.Digest != want.Digest || got.Truncated != want.Truncated || got.TokenUsed != want.TokenUsed {
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			t.Fatalf("case %d (%d facts, %+v): packets differ:\n got %s\nwant %s", i, len(facts), sp, gb, wb)
		}
		if fmt.Sprint(gotDrops) != fmt.Sprint(wantDrops) {
			t.Fatalf("case %d: drops %v, want %v", i, gotDrops, wantDrops)
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
