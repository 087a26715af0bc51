package orient

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// SourceSignal is the source type of the fact Compile makes from the signal
// itself.
const SourceSignal = "signal"

// BandFor returns the band a fact of a source type goes to: the signal to
// identity, open commitments to objectives, actor history to capabilities,
// recent actions to situational, workspace state and anything else to
// exploration. The reserve band gets no facts: its floor is headroom.
func BandFor(sourceType string) ora.Band {
	switch sourceType {
	case SourceSignal:
		return ora.BandIdentity
	case string(JobOpenCommitments):
		return ora.BandObjectives
	case string(JobActorHistory):
		return ora.BandCapabilities
	case string(JobRecentActions):
		return ora.BandSituational
	}
	return ora.BandExploration
}

// PacketID returns the id of a wave's packet.
func PacketID(signalID string) string { return "pkt-" + signalID }

// SignalFact is the identity fact Compile makes from the signal: its id,
// source, timestamps, dedup key and raw digest (the payload itself reaches the
// reasoner beside the packet, not in it).
func SignalFact(sig ora.NormalizedSignal) ora.Fact {
	n, _ := json.Marshal(map[string]any{
		"signal_id":  sig.ID,
		"source":     sig.Source,
		"timestamp":  sig.Timestamp.UTC(),
		"dedup_key":  sig.DedupKey,
		"raw_digest": sig.RawDigest,
	})
	f := ora.Fact{
		ID:         SourceSignal,
		WaveID:     sig.ID,
		SourceType: SourceSignal,
		SourceRef:  fmt.Sprintf("ledger:%s/%s/", sig.ID, ora.KindSignalReceived),
		Provenance: map[string]string{"store": "ledger", "signal_id": sig.ID, "kind": string(ora.KindSignalReceived), "raw_digest": sig.RawDigest},
		Normalized: n,
		DedupeKey:  "signal:" + sig.ID,
		Utility:    1,
		CreatedAt:  sig.NormalizedAt.UTC(),
	}
	b, _ := json.Marshal(f)
	f.EstimatedTokens = EstimateTokens(b)
	return f
}

// before is the stable order of seed 002: utility descending, then
// created_at ascending, then fact_id ascending; facts equal on all three
// (a repeated id) are ordered by dedupe key and content, so that the order
// never depends on the input's.
func before(a, b *ora.Fact) int {
	if c := cmp.Compare(b.Utility, a.Utility); c != 0 {
		return c
	}
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	if c := cmp.Compare(a.ID, b.ID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.DedupeKey, b.DedupeKey); c != 0 {
		return c
	}
	return bytes.Compare(a.Normalized, b.Normalized)
}

func tokens(f ora.Fact) int { return max(1, f.EstimatedTokens) }

// CheckBands validates a budget and its bands: a positive budget, bands
// named once each, 0 <= min <= target <= max, and floors that fit the budget.
func CheckBands(budget int, bands []ora.BandBudget) error {
	if budget <= 0 {
		return ora.Invalid("token_budget", "%d must be positive", budget)
	}
	if len(bands) == 0 {
		return ora.Invalid("bands", "at least one band is required")
	}
	seen := map[ora.Band]bool{}
	floors := 0
	for i, b := range bands {
		where := fmt.Sprintf("bands[%d]", i)
		switch {
		case b.Band == "":
			return ora.Invalid(where+".band", "required")
		case seen[b.Band]:
			return ora.Invalid(where+".band", "%q appears twice", b.Band)
		case b.MinTokens < 0:
			return ora.Invalid(where+".min_tokens", "%d is negative", b.MinTokens)
		case b.TargetTokens < b.MinTokens:
			return ora.Invalid(where+".target_tokens", "%d is below min_tokens %d", b.TargetTokens, b.MinTokens)
		case b.MaxTokens < b.TargetTokens:
			return ora.Invalid(where+".max_tokens", "%d is below target_tokens %d", b.MaxTokens, b.TargetTokens)
		}
		seen[b.Band] = true
		floors += b.MinTokens
	}
	if floors > budget {
		return ora.Invalid("bands", "the floors add up to %d, over the budget of %d", floors, budget)
	}
	return nil
}

// Compile builds the orientation packet of sig's wave from its facts under
// the options' budget and bands (see CompileProfile), with no source
// diversity limit. Errors: EINVALID for a bad budget or bands.
func Compile(sig ora.NormalizedSignal, facts []ora.Fact, opts ...func(*Options)) (ora.OrientationPacket, error) {
	o := options(opts)
	if err := CheckBands(o.TokenBudget, o.Bands); err != nil {
		return ora.OrientationPacket{}, err
	}
	p, _, err := compile(sig, facts, spec{o.ProfileID, o.ProfileVersion, o.TokenBudget, o.Bands, 1, ora.DefaultMaxFacts, nil}, nil)
	return p, err
}

// CompileProfile builds the orientation packet of sig's wave from its facts
// and the signal's own identity fact (SignalFact) under a profile version.
// It is a pure function of its inputs and never exceeds the budget:
//
//  1. Facts are sorted by the stable order (utility desc, created_at asc,
//     fact_id asc); a fact whose id or dedupe key an earlier one has is
//     dropped (duplicate); past the profile's max_facts the rest are dropped
//     (fact_cap); each goes to its band (its rule's band, or BandFor its
//     source type; no such band in the profile: no_band).
//  2. Floors: every band's min_tokens is reserved, and each band takes its
//     facts in order while they fit within its floor (a fact that does not
//     fit is skipped, later smaller ones may still fit).
//  3. Targets: each band, in the profile's order, takes more of its facts
//     while it stays within target_tokens.
//  4. Utility: the remaining facts of all bands, in the stable order, are
//     taken while their band stays within max_tokens.
//  5. Diversity: in steps 3 and 4 one source type may fill at most
//     max_source_share of a band's max_tokens; a fact over that share is
//     deferred, and the deferred facts get a last pass, in the stable order,
//     after every other source had its turn (so a band with one source still
//     fills up).
//  6. Novelty: a fact whose normalized content equals that of a fact already
//     admitted adds nothing new and is dropped (not_novel).
//
// Steps 3 to 5 admit a fact only when the sum over all bands of max(used,
// min_tokens) stays within the budget, so unfilled floors stay reserved (the
// reserve band's floor is the reasoner's headroom) and token_used <= budget.
// Truncated is set when a fact was left out for room, band or cap. drops,
// when not nil, counts the facts left out by reason. It does constant work
// per fact plus a heap pop for each fact a phase looks at, and phases stop
// looking once a band's room is below its smallest fact: O(n + k log n) for
// k facts looked at, O(n log n) at worst. Errors: EINVALID for a bad
// profile.
func CompileProfile(sig ora.NormalizedSignal, facts []ora.Fact, p ora.Profile, drops Drops) (ora.OrientationPacket, error) {
	pk, _, err := compileProfile(sig, facts, p, drops, nil)
	return pk, err
}

// compileProfile is CompileProfile returning also the packet's encoding with
// its digest empty (see compile), under the input patch patch (nil: none).
func compileProfile(sig ora.NormalizedSignal, facts []ora.Fact, p ora.Profile, drops Drops, patch *ora.AppPatch) (ora.OrientationPacket, []byte, error) {
	if err := p.Validate(); err != nil {
		return ora.OrientationPacket{}, nil, err
	}
	return compile(sig, facts, spec{p.ID, p.Version, p.TokenBudget, p.Bands, p.MaxSourceShare, p.Limits.MaxFacts, patch}, drops)
}

type spec struct {
	profileID string
	version   int
	budget    int
	bands     []ora.BandBudget
	share     float64
	maxFacts  int
	// patch is the input patch the wave's identity fact records (nil: none).
	patch *ora.AppPatch
}

// sortKey is what the stable order compares first, packed small so that
// comparisons stay in cache: the utility as an unsigned integer whose
// ascending order is the utility's descending order, then created_at; ties
// fall back to before, then to the input position.
type sortKey struct {
	u    uint64
	sec  int64
	nsec int32
	i    int32
}

// utilityKey maps a utility to an integer that sorts it descending, as
// cmp.Compare orders floats (-0 equals 0; NaN after every number).
func utilityKey(x float64) uint64 {
	if x != x {
		return math.MaxUint64
	}
	if x == 0 {
		x = 0 // -0
	}
	b := math.Float64bits(x)
	if b>>63 == 1 {
		b = ^b
	} else {
		b |= 1 << 63
	}
	return ^b
}

// order compares facts in the stable order of seed 002.
type order struct {
	facts []ora.Fact
	sig   *ora.Fact
}

func (o order) fact(i int32) *ora.Fact {
	if int(i) == len(o.facts) {
		return o.sig
	}
	return &o.facts[i]
}

func (o order) cmp(a, b *sortKey) int {
	if a.u != b.u {
		return cmp.Compare(a.u, b.u)
	}
	if a.sec != b.sec {
		return cmp.Compare(a.sec, b.sec)
	}
	if a.nsec != b.nsec {
		return cmp.Compare(a.nsec, b.nsec)
	}
	if a.i == b.i {
		return 0
	}
	if c := before(o.fact(a.i), o.fact(b.i)); c != 0 {
		return c
	}
	return cmp.Compare(a.i, b.i)
}

// keyHeap is a binary min-heap of facts in the stable order: Compile pops
// only as many facts as the budget can still use.
type keyHeap struct {
	k []sortKey
	o order
}

func (h *keyHeap) down(i int) {
	n := len(h.k)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.o.cmp(&h.k[r], &h.k[l]) < 0 {
			m = r
		}
		if h.o.cmp(&h.k[m], &h.k[i]) >= 0 {
			return
		}
		h.k[i], h.k[m] = h.k[m], h.k[i]
		i = m
	}
}

func (h *keyHeap) init() {
	for i := len(h.k)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *keyHeap) pop() sortKey {
	top := h.k[0]
	last := len(h.k) - 1
	h.k[0] = h.k[last]
	h.k = h.k[:last]
	h.down(0)
	return top
}

// selectNth reorders k so that k[n] is the fact of rank n among them (as a
// full sort would place it), smaller ones before it: quickselect, O(len(k))
// expected, falling back to a sort past a depth bound (O(n log n) at worst).
func (o order) selectNth(k []sortKey, n int) {
	lo, hi := 0, len(k)-1
	for depth := 2 * bits.Len(uint(len(k))); lo < hi; depth-- {
		if depth == 0 {
			slices.SortFunc(k[lo:hi+1], func(a, b sortKey) int { return o.cmp(&a, &b) })
			return
		}
		// Median of three as the pivot, moved to hi.
		mid := lo + (hi-lo)/2
		if o.cmp(&k[mid], &k[lo]) < 0 {
			k[mid], k[lo] = k[lo], k[mid]
		}
		if o.cmp(&k[hi], &k[lo]) < 0 {
			k[hi], k[lo] = k[lo], k[hi]
		}
		if o.cmp(&k[mid], &k[hi]) < 0 {
			k[mid], k[hi] = k[hi], k[mid]
		}
		p := k[hi]
		s := lo
		for i := lo; i < hi; i++ {
			if o.cmp(&k[i], &p) < 0 {
				k[i], k[s] = k[s], k[i]
				s++
			}
		}
		k[s], k[hi] = k[hi], k[s]
		switch {
		case n == s:
			return
		case n < s:
			hi = s - 1
		default:
			lo = s + 1
		}
	}
}

// firsts is an open-addressing table of the facts that had each hash: an
// entry packs the fact's index (the low idxBits bits) with a fingerprint of
// its hash (the other bits; the slot comes from the hash's low bits), in 4
// bytes, so that the table of 50,000 facts stays within a core's cache.
// Compile uses it to find the facts that share an id or a dedupe key with
// another; a fingerprint that matches by chance only sends a fact down the
// exact path.
type firsts struct {
	t       []uint32
	idxBits uint
}

// newFirsts returns an empty table for n facts (at most 1<<24) in buf's
// memory when it is large enough: a load of at most 3/8 keeps the probes
// short.
func newFirsts(n int, buf []uint32) firsts {
	size := 1 << bits.Len(uint(2*n+1))
	if cap(buf) < size {
		buf = make([]uint32, size)
	} else {
		buf = buf[:size]
		clear(buf)
	}
	return firsts{t: buf, idxBits: uint(bits.Len(uint(n)))}
}

// scratch is compile's working memory, kept for the next compile (a warm
// Lambda or ora dev compiles one wave after another) so that the garbage
// collector does not sweep megabytes per wave: the sort keys, the
// duplicate table and the keys kept for the max_facts cut.
type scratch struct {
	keys, kept []sortKey
	seen       []uint32
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// sized returns buf with length n, reusing its memory when it can; the
// caller sets every element.
func sized(buf []sortKey, n int) []sortKey {
	if cap(buf) < n {
		return make([]sortKey, n)
	}
	return buf[:n]
}

// add records fact i under h and returns the first fact recorded under it
// before, or -1.
func (t firsts) add(h uint64, i int) int {
	idxMask := uint32(1)<<t.idxBits - 1
	fp := uint32(h>>32) &^ idxMask
	if fp == 0 {
		fp = idxMask + 1 // 0 marks an empty slot
	}
	mask := uint64(len(t.t) - 1)
	for s := h & mask; ; s = (s + 1) & mask {
		e := t.t[s]
		switch {
		case e == 0:
			t.t[s] = fp | uint32(i)
			return -1
		case e&^idxMask == fp:
			return int(e & idxMask)
		}
	}
}

// compile is CompileProfile's algorithm, done with little more work than the
// budget needs: one pass finds duplicates by hashing (only the facts that
// share an id or a dedupe key are ordered to settle which one stays), a
// quickselect finds the max_facts cut, and each band's candidates sit in a
// heap from which the phases pop in the stable order only while the band
// can still take a fact (its room, or the budget's, is at least its smallest
// fact). O(n + k log n) for k facts popped; O(n log n) at worst.
//
// Besides the packet it returns the packet's encoding with its digest empty:
// the bytes its digest is the sha256 of, which withDigest turns into the
// packet entry's body without encoding the packet again.
func compile(sig ora.NormalizedSignal, facts []ora.Fact, sp spec, drops Drops) (ora.OrientationPacket, []byte, error) {
	w := Wave{Drops: drops}
	sigFact, err := signalFactUnder(sig, sp.patch)
	if err != nil {
		return ora.OrientationPacket{}, nil, err
	}
	o := order{facts: facts, sig: &sigFact}
	n := len(facts) + 1
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	sc.keys = sized(sc.keys, n)
	keys := sc.keys
	seed := maphash.MakeSeed()
	// Duplicates: only facts sharing an id or dedupe key hash can be one;
	// those are settled in the stable order, exactly as a full pass would.
	const (
		shared = 1 // shares an id or a dedupe key hash with another fact
		dup    = 2 // a duplicate of a fact before it in the stable order
	)
	state := make([]uint8, n)
	var sharing []sortKey
	mark := func(i int) {
		if state[i] == 0 {
			state[i] = shared
			sharing = append(sharing, keys[i])
		}
	}
	if n > 1<<24 {
		return ora.OrientationPacket{}, nil, ora.Invalid("facts", "%d facts are more than a wave compiles (%d)", n-1, 1<<24-1)
	}
	// Ids first, then dedupe keys, each in one pass over the facts, so
	// that one table at a time is in the cache.
	seen := newFirsts(n, sc.seen)
	sc.seen = seen.t
	keyed := false
	for i := range keys {
		f := o.fact(int32(i))
		keys[i] = sortKey{utilityKey(f.Utility), f.CreatedAt.Unix(), int32(f.CreatedAt.Nanosecond()), int32(i)}
		if j := seen.add(maphash.String(seed, f.ID), i); j >= 0 {
			mark(j)
			mark(i)
		}
		keyed = keyed || f.DedupeKey != ""
	}
	if keyed {
		clear(seen.t)
		for i := range keys {
			f := o.fact(int32(i))
			if f.DedupeKey == "" {
				continue
			}
			if j := seen.add(maphash.String(seed, f.DedupeKey), i); j >= 0 {
				mark(j)
				mark(i)
			}
		}
	}
	dups := 0
	if len(sharing) > 0 {
		slices.SortFunc(sharing, func(a, b sortKey) int { return o.cmp(&a, &b) })
		seenID := make(map[string]struct{}, len(sharing))
		seenKey := make(map[string]struct{}, len(sharing))
		for _, k := range sharing {
			f := o.fact(k.i)
			_, d := seenID[f.ID]
			if !d && f.DedupeKey != "" {
				_, d = seenKey[f.DedupeKey]
			}
			if d {
				state[k.i] = dup
				dups++
				continue
			}
			seenID[f.ID] = struct{}{}
			if f.DedupeKey != "" {
				seenKey[f.DedupeKey] = struct{}{}
			}
		}
	}
	// The max_facts cut (+1: the signal's own fact is not an observation):
	// past the (max_facts+1)-th kept fact every fact is dropped, duplicate
	// or not.
	truncated := false
	var cut *sortKey
	switch limit := sp.maxFacts + 1; {
	case n-dups > limit:
		sc.kept = sized(sc.kept, n-dups)
		kept := sc.kept[:0]
		for i, k := range keys {
			if state[i] != dup {
				kept = append(kept, k)
			}
		}
		o.selectNth(kept, limit-1)
		cut = &kept[limit-1]
	case n-dups == limit && dups > 0:
		// Every kept fact is in; duplicates after the last one are cut.
		for i := range keys {
			if state[i] != dup && (cut == nil || o.cmp(&keys[i], cut) > 0) {
				cut = &keys[i]
			}
		}
	}

	type band struct {
		ora.BandBudget
		used    int
		bySrc   map[string]int // tokens taken in steps 3-5, by source type
		pending []sortKey      // popped, not yet admitted, in the stable order
		heap    keyHeap        // the rest of the band's candidates
		minTok  int            // the smallest candidate's tokens
		taken   []sortKey
		srcCap  int
	}
	bands := make([]*band, len(sp.bands))
	for i, b := range sp.bands {
		bands[i] = &band{BandBudget: b, bySrc: map[string]int{}, srcCap: int(sp.share * float64(b.MaxTokens)),
			heap: keyHeap{o: o}, minTok: math.MaxInt}
	}
	indexOf := func(name ora.Band) int16 {
		for i, b := range bands {
			if b.Band == name {
				return int16(i)
			}
		}
		return -1
	}
	// Each candidate's band (its index in bands), counted first so that
	// each band's heap is allocated once, at its size.
	const (
		noBand  = -1
		dropped = -2
	)
	bandOf := make([]int16, n)
	perBand := make([]int, len(bands))
	// The source types seen so far and their bands: a wave has a handful,
	// so a short list searched in order beats a map.
	type srcBand struct {
		src string
		b   int16
	}
	var srcBands []srcBand
	bandOfSource := func(src string) int16 {
		for _, sb := range srcBands {
			if sb.src == src {
				return sb.b
			}
		}
		b := indexOf(BandFor(src))
		srcBands = append(srcBands, srcBand{src, b})
		if len(srcBands) > 16 { // many sources: keep the most recent
			srcBands = slices.Delete(srcBands, 0, 1)
		}
		return b
	}
	for i := range keys {
		k := &keys[i]
		if cut != nil && o.cmp(k, cut) > 0 {
			w.drop(DropFactCap, 1)
			truncated = true
			bandOf[i] = dropped
			continue
		}
		if state[i] == dup {
			w.drop(DropDuplicate, 1)
			bandOf[i] = dropped
			continue
		}
		f := o.fact(k.i)
		b := int16(noBand)
		if f.Band != "" {
			b = indexOf(f.Band)
		}
		if b == noBand {
			b = bandOfSource(f.SourceType)
		}
		if b == noBand {
			w.drop(DropNoBand, 1)
			truncated = true
		} else {
			perBand[b]++
			bands[b].minTok = min(bands[b].minTok, tokens(*f))
		}
		bandOf[i] = b
	}
	// The bands' heaps are the parts of keys, partitioned in place by band
	// (an American flag pass: each key is swapped straight into its
	// band's part), the dropped keys last; keys is not needed otherwise
	// any more.
	bucket := func(k *sortKey) int {
		if b := bandOf[k.i]; b >= 0 {
			return int(b)
		}
		return len(bands)
	}
	next := make([]int, len(bands)+2)
	for i := range bands {
		next[i+1] = next[i] + perBand[i]
	}
	ends := slices.Clone(next[1:])
	ends[len(bands)] = len(keys)
	for b := range len(bands) {
		for next[b] < ends[b] {
			k := &keys[next[b]]
			if c := bucket(k); c != b {
				keys[next[b]], keys[next[c]] = keys[next[c]], keys[next[b]]
				next[c]++
				continue
			}
			next[b]++
		}
	}
	for i, b := range bands {
		start := ends[i] - perBand[i]
		b.heap.k = keys[start:ends[i]:ends[i]]
	}
	for _, b := range bands {
		b.heap.init()
	}
	reserved := 0
	for _, b := range bands {
		reserved += b.MinTokens
	}
	content := map[uint64][]*ora.Fact{}
	// novel reports whether no admitted fact has f's content, and the
	// content's hash.
	novel := func(f *ora.Fact) (bool, uint64) {
		h := maphash.Bytes(seed, f.Normalized)
		for _, g := range content[h] {
			if bytes.Equal(g.Normalized, f.Normalized) {
				return false, h
			}
		}
		return true, h
	}
	// closed reports that no fact of b can be admitted within limit any
	// more: its room, or (checkBudget) the budget's, is below its smallest
	// fact. Rooms only shrink, so a closed band stays closed.
	closed := func(b *band, limit func(*band) int, checkBudget bool) bool {
		if b.minTok > limit(b)-b.used {
			return true
		}
		return checkBudget && b.minTok-max(b.MinTokens-b.used, 0) > sp.budget-reserved
	}
	// try admits the fact of k into b within limit; it reports whether the
	// fact is settled (admitted, or dropped as not novel) rather than left
	// for later.
	try := func(k sortKey, b *band, limit func(*band) int, checkBudget, diverse bool) bool {
		f := o.fact(k.i)
		t := tokens(*f)
		grow := max(b.used+t, b.MinTokens) - max(b.used, b.MinTokens)
		if b.used+t > limit(b) || (checkBudget && reserved+grow > sp.budget) {
			return false
		}
		if diverse && b.bySrc[f.SourceType]+t > b.srcCap {
			return false
		}
		fresh, h := novel(f)
		if !fresh {
			w.drop(DropNotNovel, 1)
			return true
		}
		if checkBudget {
			b.bySrc[f.SourceType] += t
		}
		b.used += t
		reserved += grow
		b.taken = append(b.taken, k)
		content[h] = append(content[h], f)
		return true
	}
	// next returns b's next candidate in the stable order, if any.
	peek := func(b *band) (sortKey, bool) {
		if len(b.pending) > 0 {
			return b.pending[0], true
		}
		if len(b.heap.k) > 0 {
			return b.heap.k[0], true
		}
		return sortKey{}, false
	}
	pop := func(b *band) sortKey {
		if len(b.pending) > 0 {
			k := b.pending[0]
			b.pending = b.pending[1:]
			return k
		}
		return b.heap.pop()
	}
	floor := func(b *band) int { return b.MinTokens }
	target := func(b *band) int { return b.TargetTokens }
	ceiling := func(b *band) int { return b.MaxTokens }
	// admit runs one band's phase over its candidates in the stable order,
	// until the band is closed for it; what is not admitted stays pending.
	admit := func(b *band, limit func(*band) int, checkBudget, diverse bool) {
		var keep []sortKey
		for {
			if _, ok := peek(b); !ok || closed(b, limit, checkBudget) {
				break
			}
			if k := pop(b); !try(k, b, limit, checkBudget, diverse) {
				keep = append(keep, k)
			}
		}
		b.pending = append(keep, b.pending...)
	}
	for _, b := range bands {
		admit(b, floor, false, false)
	}
	for _, b := range bands {
		admit(b, target, true, true)
	}
	// The facts not yet admitted, merged across bands in the stable order;
	// a closed band's facts can no longer fit and are left for the count.
	type item struct {
		k sortKey
		b *band
	}
	var deferred []item
	for {
		var best *band
		var bestKey sortKey
		for _, b := range bands {
			k, ok := peek(b)
			if !ok || closed(b, ceiling, true) {
				continue
			}
			if best == nil || o.cmp(&k, &bestKey) < 0 {
				best, bestKey = b, k
			}
		}
		if best == nil {
			break
		}
		pop(best)
		if !try(bestKey, best, ceiling, true, true) {
			deferred = append(deferred, item{bestKey, best})
		}
	}
	for _, d := range deferred {
		if closed(d.b, ceiling, true) || !try(d.k, d.b, ceiling, true, false) {
			w.drop(DropBudget, 1)
			truncated = true
		}
	}
	for _, b := range bands {
		if left := len(b.pending) + len(b.heap.k); left > 0 {
			w.drop(DropBudget, left)
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
		slices.SortFunc(b.taken, func(x, y sortKey) int { return o.cmp(&x, &y) })
		taken := make([]ora.Fact, len(b.taken))
		for j, k := range b.taken {
			taken[j] = *o.fact(k.i)
		}
		p.Bands[i] = ora.PacketBand{BandBudget: b.BandBudget, UsedTokens: b.used, Facts: taken}
		p.TokenUsed += b.used
	}
	unsigned, err := encodePacket(&p)
	if err != nil {
		return ora.OrientationPacket{}, nil, err
	}
	p.Digest = ora.Digest(unsigned)
	return p, unsigned, nil
}

// unsignedTail ends the encoding of a packet whose digest is empty.
const unsignedTail = `,"digest_sha256":""}`

// withDigest returns the encoding of p (whose Digest is set) from the
// encoding of p with its digest empty: the digest is its last field and a
// hex string, which encoding/json writes as it is.
func withDigest(unsigned []byte, p *ora.OrientationPacket) ([]byte, error) {
	if !bytes.HasSuffix(unsigned, []byte(unsignedTail)) || !plain(p.Digest) {
		return encodePacket(p)
	}
	n := len(unsigned) - len(`"}`)
	out := make([]byte, 0, n+len(p.Digest)+2)
	out = append(out, unsigned[:n]...)
	out = append(out, p.Digest...)
	return append(out, `"}`...), nil
}

// Compiler compiles a wave's packet from the ledger and persists it.
type Compiler struct {
	store    Store
	profiles *Profiles
	o        Options
	opts     []func(*Options)
}

// NewCompiler returns a compiler over store; the options set the budget, the
// bands and the profile of waves planned without a pin.
func NewCompiler(store Store, opts ...func(*Options)) *Compiler {
	return &Compiler{store: store, profiles: NewProfiles(store, opts...), o: options(opts), opts: opts}
}

// recompile compiles a wave's packet from its entries: under its pinned
// profile version, or the options for a wave planned without a pin, and
// under the input patch patch (nil: none).
func (c *Compiler) recompile(ctx context.Context, sig ora.NormalizedSignal, entries []ora.Entry, drops Drops, patch *ora.AppPatch) (ora.OrientationPacket, []byte, error) {
	facts, err := FactsOf(entries)
	if err != nil {
		return ora.OrientationPacket{}, nil, err
	}
	pin, err := pinOf(entries)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		o := options(c.opts)
		return compile(sig, facts, spec{o.ProfileID, o.ProfileVersion, o.TokenBudget, o.Bands, 1, ora.DefaultMaxFacts, patch}, nil)
	}
	if err != nil {
		return ora.OrientationPacket{}, nil, err
	}
	prof, err := c.profiles.Version(ctx, pin.ProfileID, pin.ProfileVersion)
	if err != nil {
		return ora.OrientationPacket{}, nil, err
	}
	return compileProfile(sig, facts, prof, drops, patch)
}

// Compile reads the wave's signal, pinned profile and observed facts,
// compiles its packet and writes it as the wave's one orientation-packet
// entry, with an orientation.packet.compiled audit record. When the wave
// already has a packet (a retry after a crash), the stored packet is returned
// without recompiling: it is the one the reasoner reads. Errors: EINVALID,
// ENOTFOUND (no such signal), ETRANSIENT.
func (c *Compiler) Compile(ctx context.Context, signalID string) (ora.OrientationPacket, error) {
	return c.compileUnder(ctx, signalID, nil)
}

// compileUnder is Compile under an app patch (nil: none; see CompileUnder).
func (c *Compiler) compileUnder(ctx context.Context, signalID string, patch *ora.AppPatch) (ora.OrientationPacket, error) {
	start := time.Now()
	sig, entries, err := loadSignal(ctx, c.store, signalID, compileKinds...)
	if err != nil {
		return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: %w", signalID, err)
	}
	if p, err := Packet(entries); err == nil {
		return p, nil
	}
	if patch != nil {
		if _, err := checkInputPatch(sig, patch); err != nil {
			return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: %w", signalID, err)
		}
	}
	drops := Drops{}
	p, unsigned, err := c.recompile(ctx, sig, entries, drops, patch)
	if err != nil {
		return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: %w", signalID, err)
	}
	body, err := withDigest(unsigned, &p)
	if err != nil {
		return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: %w", signalID, err)
	}
	e := ora.NewEntryJSON(signalID, ora.KindOrientationPacket, "", body)
	e.Meta = map[string]string{"packet_id": p.ID, "digest": p.Digest, "profile_id": p.ProfileID, "profile_version": strconv.Itoa(p.ProfileVersion)}
	audit, err := c.profiles.auditEntry(signalID, ora.AuditPacketCompiled, ora.AuditRecord{
		Action: ora.AuditPacketCompiled, Actor: "orientation.compiler", Subject: p.ID, Result: "compiled",
		Detail: map[string]string{"digest": p.Digest, "profile_version": strconv.Itoa(p.ProfileVersion), "token_used": strconv.Itoa(p.TokenUsed)},
	})
	if err != nil {
		return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: %w", signalID, err)
	}
	if stored, err := c.write(ctx, e, audit); err != nil || stored != nil {
		if err != nil {
			return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: write packet: %w", signalID, err)
		}
		sp, err := Packet([]ora.Entry{*stored})
		if err != nil {
			return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: stored packet: %w", signalID, err)
		}
		return sp, nil
	}
	// Its digest was computed from p and its body is p's encoding: the
	// reasoner's read need neither check nor decode it again.
	keepPacket(sha256.Sum256(e.Body), len(e.Body), &p)
	c.o.Metrics.Observe(MetricPacketTokensUsed, float64(p.TokenUsed))
	if p.Truncated {
		c.o.Metrics.Add(MetricBudgetOverflow, 1)
	}
	for reason, n := range drops {
		c.o.Metrics.Add(MetricFactDrops, float64(n), "reason", reason)
	}
	c.o.log(ctx, "compile", logFields{WaveID: signalID, PacketID: p.ID, ProfileID: p.ProfileID, ProfileVersion: p.ProfileVersion, Actor: "orientation.compiler", Result: "compiled", Start: start})
	return p, nil
}

// write stores the packet entry and its orientation.packet.compiled audit
// entry. Where the store writes batches at once (both ledgers), the two are
// one write, so a crash never leaves a packet without its audit record; a
// packet already stored (an earlier run's, or a racing one's: compiling the
// same facts under the same pin gives the same packet) is returned, and this
// run's is not written. Otherwise the packet is appended, then the audit.
func (c *Compiler) write(ctx context.Context, packet, audit ora.Entry) (stored *ora.Entry, err error) {
	if b, ok := c.store.(batchAppender); ok {
		n, err := b.AppendNew(ctx, []ora.Entry{packet, audit})
		if err != nil || n == 2 {
			return nil, err
		}
		entries, err := c.store.Entries(ctx, packet.SignalID)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Kind == ora.KindOrientationPacket {
				return &e, nil
			}
		}
		return nil, ora.Errorf(ora.EINTERNAL, "the packet of %s was neither written nor found", packet.SignalID)
	}
	if _, err := c.store.Append(ctx, packet); err != nil {
		prev, ok := ora.Existing[ora.Entry](err)
		if !ok {
			return nil, err
		}
		return &prev, nil
	}
	if _, err := c.store.Append(ctx, audit); err != nil {
		if _, ok := ora.Existing[ora.Entry](err); !ok {
			return nil, fmt.Errorf("audit %s: %w", ora.AuditPacketCompiled, err)
		}
	}
	return nil, nil
}

// Verification is the outcome of a replay verification (seed 002 §13.6).
type Verification struct {
	WaveID         string `json:"wave_id"`
	PacketID       string `json:"packet_id"`
	ProfileID      string `json:"profile_id"`
	ProfileVersion int    `json:"profile_version"`
	StoredDigest   string `json:"stored_digest"`
	ReplayDigest   string `json:"replay_digest"`
	DecisionDigest string `json:"decision_digest,omitempty"`
	// DecisionViewDigest is the digest of the packet's view the decision's
	// model read (its trace's packet_view_digest); ReplayViewDigest is the
	// digest of the replayed packet rendered again within the same tokens
	// (for a batch, merged with the batch's other stored packets, in the
	// batch's order). Both are empty for a decision without a model.
	DecisionViewDigest string `json:"decision_view_digest,omitempty"`
	ReplayViewDigest   string `json:"replay_view_digest,omitempty"`
	Match              bool   `json:"match"`
}

// replayView renders again the view a decision's model read: the replayed
// packet alone, or, for a batch, merged in the batch's order with the other
// waves' stored packets (whose digests Packet checks).
func (c *Compiler) replayView(ctx context.Context, signalID string, replay ora.OrientationPacket, m *ora.ModelTrace) (View, error) {
	if m.BatchSize <= 1 || len(m.BatchSignals) == 0 {
		return Render(replay, m.PacketViewTokens), nil
	}
	packets := make([]ora.OrientationPacket, len(m.BatchSignals))
	for i, id := range m.BatchSignals {
		if id == signalID {
			packets[i] = replay
			continue
		}
		entries, err := c.store.Entries(ctx, id)
		if err != nil {
			return View{}, fmt.Errorf("batch wave %s: %w", id, err)
		}
		if packets[i], err = Packet(entries); err != nil {
			return View{}, fmt.Errorf("batch wave %s: %w", id, err)
		}
	}
	return Render(Merge(packets), m.PacketViewTokens), nil
}

// expiredPacket returns the ENOTFOUND error Verify answers for a wave whose
// packet has expired: when the ledger recorded the expiry (ora.ExpiryReader),
// with the packet's digest and the time it expired; when only the wave's
// decision cites the packet (DynamoDB's TTL removes an item without a
// trace), with that digest. It returns nil when the wave never had a packet.
func (c *Compiler) expiredPacket(ctx context.Context, signalID string, entries []ora.Entry) error {
	if er, ok := c.store.(ora.ExpiryReader); ok {
		xs, err := er.ExpiredEntries(ctx, signalID)
		if err != nil {
			return err
		}
		for _, x := range xs {
			if x.Kind == ora.KindOrientationPacket {
				return ora.Errorf(ora.ENOTFOUND, "the orientation packet of wave %s (digest %s) expired at %s: "+
					"its body and facts are past their retention, so it cannot be replayed", signalID, x.Digest, x.ExpiredAt.Format(time.RFC3339))
			}
		}
	}
	for _, e := range entries {
		var d ora.ReasonerDecision
		if e.Kind == ora.KindReasonerDecision && json.Unmarshal(e.Body, &d) == nil && d.PacketDigest != "" {
			return ora.Errorf(ora.ENOTFOUND, "the orientation packet of wave %s (digest %s, cited by its decision of %s) has expired: "+
				"its body and facts are past their retention, so it cannot be replayed", signalID, d.PacketDigest, e.CreatedAt.Format(time.RFC3339))
		}
	}
	return nil
}

// Verify recompiles a wave's packet from its stored facts and pinned
// profile version and compares the digest with the stored packet's and with
// the one its decision cites, then records an
// orientation.packet.replay_verified audit entry with the result. Errors:
// ENOTFOUND (no such wave or no packet; for a packet past its retention, a
// message saying when it expired), EINVALID, ETRANSIENT.
func (c *Compiler) Verify(ctx context.Context, signalID string) (Verification, error) {
	start := time.Now()
	sig, entries, err := loadSignal(ctx, c.store, signalID)
	if err != nil {
		return Verification{}, fmt.Errorf("orient: verify %s: %w", signalID, err)
	}
	stored, err := Packet(entries)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		if xerr := c.expiredPacket(ctx, signalID, entries); xerr != nil {
			err = xerr
		}
	}
	if err != nil {
		return Verification{}, fmt.Errorf("orient: verify %s: %w", signalID, err)
	}
	replay, _, err := c.recompile(ctx, sig, entries, nil, replayPatch(stored, entries))
	if err != nil {
		return Verification{}, fmt.Errorf("orient: verify %s: %w", signalID, err)
	}
	v := Verification{WaveID: signalID, PacketID: stored.ID, ProfileID: stored.ProfileID, ProfileVersion: stored.ProfileVersion,
		StoredDigest: stored.Digest, ReplayDigest: replay.Digest}
	for _, e := range entries {
		if e.Kind == ora.KindReasonerDecision {
			var d ora.ReasonerDecision
			if json.Unmarshal(e.Body, &d) == nil && d.PacketDigest != "" {
				v.DecisionDigest = d.PacketDigest
			}
			if m := d.Model; m != nil && m.PacketViewDigest != "" {
				v.DecisionViewDigest = m.PacketViewDigest
				view, err := c.replayView(ctx, signalID, replay, m)
				if err != nil {
					return Verification{}, fmt.Errorf("orient: verify %s: %w", signalID, err)
				}
				v.ReplayViewDigest = view.Digest
			}
		}
	}
	v.Match = v.StoredDigest == v.ReplayDigest && (v.DecisionDigest == "" || v.DecisionDigest == v.ReplayDigest) &&
		v.DecisionViewDigest == v.ReplayViewDigest
	result := "match"
	if !v.Match {
		result = "mismatch"
	}
	at := c.o.Now().UTC()
	if err := c.profiles.audit(ctx, signalID, ora.AuditPacketReplayVerified+"/"+at.Format("20060102T150405.000000000Z"), ora.AuditRecord{
		Action: ora.AuditPacketReplayVerified, Actor: "orientation.verify", Subject: stored.ID, Result: result, At: at,
		Detail: map[string]string{"stored_digest": v.StoredDigest, "replay_digest": v.ReplayDigest, "decision_digest": v.DecisionDigest,
			"decision_view_digest": v.DecisionViewDigest, "replay_view_digest": v.ReplayViewDigest},
	}); err != nil {
		return Verification{}, err
	}
	code := ""
	if !v.Match {
		code = "digest_mismatch"
	}
	c.o.log(ctx, "verify", logFields{WaveID: signalID, PacketID: stored.ID, ProfileID: stored.ProfileID, ProfileVersion: stored.ProfileVersion, Actor: "orientation.verify", Result: result, ErrorCode: code, Start: start})
	return v, nil
}
