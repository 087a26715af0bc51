package orient

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
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

// PacketDigest returns the sha256 of the packet's canonical JSON (its
// encoding/json encoding, which is deterministic) with Digest empty.
func PacketDigest(p ora.OrientationPacket) (string, error) {
	p.Digest = ""
	b, err := json.Marshal(p)
	if err != nil {
		return "", ora.Errorf(ora.EINTERNAL, "encode packet: %v", err)
	}
	return ora.Digest(b), nil
}

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
	return compile(sig, facts, spec{o.ProfileID, o.ProfileVersion, o.TokenBudget, o.Bands, 1, ora.DefaultMaxFacts}, nil)
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
// when not nil, counts the facts left out by reason. It sorts once and
// otherwise does constant work per fact: O(n log n). Errors: EINVALID for a
// bad profile.
func CompileProfile(sig ora.NormalizedSignal, facts []ora.Fact, p ora.Profile, drops Drops) (ora.OrientationPacket, error) {
	if err := p.Validate(); err != nil {
		return ora.OrientationPacket{}, err
	}
	return compile(sig, facts, spec{p.ID, p.Version, p.TokenBudget, p.Bands, p.MaxSourceShare, p.Limits.MaxFacts}, drops)
}

type spec struct {
	profileID string
	version   int
	budget    int
	bands     []ora.BandBudget
	share     float64
	maxFacts  int
}

// sortKey is what the stable order compares first, packed small so that
// sorting 50,000 facts stays in cache; ties fall back to before.
type sortKey struct {
	utility float64
	sec     int64
	nsec    int32
	i       int32
}

func compile(sig ora.NormalizedSignal, facts []ora.Fact, sp spec, drops Drops) (ora.OrientationPacket, error) {
	w := Wave{Drops: drops}
	sigFact := SignalFact(sig)
	fact := func(i int32) *ora.Fact {
		if int(i) == len(facts) {
			return &sigFact
		}
		return &facts[i]
	}
	keys := make([]sortKey, len(facts)+1)
	for i := range keys {
		f := fact(int32(i))
		keys[i] = sortKey{f.Utility, f.CreatedAt.Unix(), int32(f.CreatedAt.Nanosecond()), int32(i)}
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
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

// factsOf decodes a wave's observed facts.
func factsOf(signalID string, entries []ora.Entry) ([]ora.Fact, error) {
	var facts []ora.Fact
	for _, e := range entries {
		if e.Kind != ora.KindObservedFact {
			continue
		}
		var f ora.Fact
		if err := json.Unmarshal(e.Body, &f); err != nil {
			return nil, ora.Invalid("fact", "stored fact %q of %s is malformed: %v", e.Qualifier, signalID, err)
		}
		facts = append(facts, f)
	}
	return facts, nil
}

// recompile compiles a wave's packet from its entries: under its pinned
// profile version, or the options for a wave planned without a pin.
func (c *Compiler) recompile(ctx context.Context, sig ora.NormalizedSignal, entries []ora.Entry, drops Drops) (ora.OrientationPacket, error) {
	facts, err := factsOf(sig.ID, entries)
	if err != nil {
		return ora.OrientationPacket{}, err
	}
	pin, err := pinOf(entries)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return Compile(sig, facts, c.opts...)
	}
	if err != nil {
		return ora.OrientationPacket{}, err
	}
	prof, err := c.profiles.Version(ctx, pin.ProfileID, pin.ProfileVersion)
	if err != nil {
		return ora.OrientationPacket{}, err
	}
	return CompileProfile(sig, facts, prof, drops)
}

// Compile reads the wave's signal, pinned profile and observed facts,
// compiles its packet and writes it as the wave's one orientation-packet
// entry, with an orientation.packet.compiled audit record. When the wave
// already has a packet (a retry after a crash), the stored packet is returned
// without recompiling: it is the one the reasoner reads. Errors: EINVALID,
// ENOTFOUND (no such signal), ETRANSIENT.
func (c *Compiler) Compile(ctx context.Context, signalID string) (ora.OrientationPacket, error) {
	start := time.Now()
	sig, entries, err := loadSignal(ctx, c.store, signalID)
	if err != nil {
		return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: %w", signalID, err)
	}
	if p, err := Packet(entries); err == nil {
		return p, nil
	}
	drops := Drops{}
	p, err := c.recompile(ctx, sig, entries, drops)
	if err != nil {
		return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: %w", signalID, err)
	}
	e, err := ora.NewEntry(signalID, ora.KindOrientationPacket, "", p)
	if err != nil {
		return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: %w", signalID, err)
	}
	e.Meta = map[string]string{"packet_id": p.ID, "digest": p.Digest, "profile_id": p.ProfileID, "profile_version": strconv.Itoa(p.ProfileVersion)}
	if _, err := c.store.Append(ctx, e); err != nil {
		stored, ok := ora.Existing[ora.Entry](err)
		if !ok {
			return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: write packet: %w", signalID, err)
		}
		sp, err := Packet([]ora.Entry{stored})
		if err != nil {
			return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: stored packet: %w", signalID, err)
		}
		return sp, nil
	}
	c.o.Metrics.Observe(MetricPacketTokensUsed, float64(p.TokenUsed))
	if p.Truncated {
		c.o.Metrics.Add(MetricBudgetOverflow, 1)
	}
	for reason, n := range drops {
		c.o.Metrics.Add(MetricFactDrops, float64(n), "reason", reason)
	}
	if err := c.profiles.audit(ctx, signalID, ora.AuditPacketCompiled, ora.AuditRecord{
		Action: ora.AuditPacketCompiled, Actor: "orientation.compiler", Subject: p.ID, Result: "compiled",
		Detail: map[string]string{"digest": p.Digest, "profile_version": strconv.Itoa(p.ProfileVersion), "token_used": strconv.Itoa(p.TokenUsed)},
	}); err != nil {
		return ora.OrientationPacket{}, err
	}
	c.o.log(ctx, "compile", logFields{WaveID: signalID, PacketID: p.ID, ProfileID: p.ProfileID, ProfileVersion: p.ProfileVersion, Actor: "orientation.compiler", Result: "compiled", Start: start})
	return p, nil
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
	Match          bool   `json:"match"`
}

// Verify recompiles a wave's packet from its stored facts and pinned
// profile version and compares the digest with the stored packet's and with
// the one its decision cites, then records an
// orientation.packet.replay_verified audit entry with the result. Errors:
// ENOTFOUND (no such wave or no packet), EINVALID, ETRANSIENT.
func (c *Compiler) Verify(ctx context.Context, signalID string) (Verification, error) {
	start := time.Now()
	sig, entries, err := loadSignal(ctx, c.store, signalID)
	if err != nil {
		return Verification{}, fmt.Errorf("orient: verify %s: %w", signalID, err)
	}
	stored, err := Packet(entries)
	if err != nil {
		return Verification{}, fmt.Errorf("orient: verify %s: %w", signalID, err)
	}
	replay, err := c.recompile(ctx, sig, entries, nil)
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
		}
	}
	v.Match = v.StoredDigest == v.ReplayDigest && (v.DecisionDigest == "" || v.DecisionDigest == v.ReplayDigest)
	result := "match"
	if !v.Match {
		result = "mismatch"
	}
	at := c.o.Now().UTC()
	if err := c.profiles.audit(ctx, signalID, ora.AuditPacketReplayVerified+"/"+at.Format("20060102T150405.000000000Z"), ora.AuditRecord{
		Action: ora.AuditPacketReplayVerified, Actor: "orientation.verify", Subject: stored.ID, Result: result, At: at,
		Detail: map[string]string{"stored_digest": v.StoredDigest, "replay_digest": v.ReplayDigest, "decision_digest": v.DecisionDigest},
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
