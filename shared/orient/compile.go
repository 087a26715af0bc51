package orient

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

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
// created_at ascending, then fact_id ascending.
func before(a, b ora.Fact) int {
	if c := cmp.Compare(b.Utility, a.Utility); c != 0 {
		return c
	}
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
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

// Compile builds the orientation packet of sig's wave from its facts and the
// signal's own identity fact (SignalFact). It is a pure function of its
// inputs and the options, and never exceeds the budget:
//
//  1. Facts are sorted by the stable order (utility desc, created_at asc,
//     fact_id asc); a fact whose id or dedupe key an earlier one has is
//     dropped; each goes to its band by BandFor.
//  2. Floors: every band's min_tokens is reserved, and each band takes its
//     facts in order while they fit within its floor (a fact that does not
//     fit is skipped, later smaller ones may still fit).
//  3. Targets: each band, in the order given, takes more of its facts while
//     it stays within target_tokens.
//  4. Utility: the remaining facts of all bands, in the stable order, are
//     taken while their band stays within max_tokens.
//
// Steps 3 and 4 admit a fact only when the sum over all bands of max(used,
// min_tokens) stays within the budget, so unfilled floors stay reserved (the
// reserve band's floor is the reasoner's headroom) and token_used <= budget.
// Truncated is set when some fact was left out. Errors: EINVALID for a bad
// budget or bands.
func Compile(sig ora.NormalizedSignal, facts []ora.Fact, opts ...func(*Options)) (ora.OrientationPacket, error) {
	o := options(opts)
	if err := CheckBands(o.TokenBudget, o.Bands); err != nil {
		return ora.OrientationPacket{}, err
	}
	all := append([]ora.Fact{SignalFact(sig)}, facts...)
	slices.SortStableFunc(all, before)

	type band struct {
		ora.BandBudget
		used  int
		queue []ora.Fact // candidates in order, not yet admitted
		taken []ora.Fact
	}
	bands := make([]*band, len(o.Bands))
	index := map[ora.Band]*band{}
	for i, b := range o.Bands {
		bands[i] = &band{BandBudget: b}
		index[b.Band] = bands[i]
	}
	truncated := false
	ids, keys := map[string]bool{}, map[string]bool{}
	for _, f := range all {
		if ids[f.ID] || (f.DedupeKey != "" && keys[f.DedupeKey]) {
			continue
		}
		ids[f.ID] = true
		if f.DedupeKey != "" {
			keys[f.DedupeKey] = true
		}
		b := index[BandFor(f.SourceType)]
		if b == nil {
			truncated = true // the profile has no band for it
			continue
		}
		b.queue = append(b.queue, f)
	}
	reserved := func() int {
		n := 0
		for _, b := range bands {
			n += max(b.used, b.MinTokens)
		}
		return n
	}
	// admit takes from b's queue, in order, every fact that keeps b within
	// limit and, when checkBudget, the reserved total within the budget.
	admit := func(b *band, limit int, checkBudget bool) {
		rest := b.queue[:0]
		for _, f := range b.queue {
			t := tokens(f)
			grow := max(b.used+t, b.MinTokens) - max(b.used, b.MinTokens)
			if b.used+t > limit || (checkBudget && reserved()+grow > o.TokenBudget) {
				rest = append(rest, f)
				continue
			}
			b.used += t
			b.taken = append(b.taken, f)
		}
		b.queue = rest
	}
	for _, b := range bands {
		admit(b, b.MinTokens, false)
	}
	for _, b := range bands {
		admit(b, b.TargetTokens, true)
	}
	var rest []ora.Fact
	for _, b := range bands {
		rest = append(rest, b.queue...)
	}
	slices.SortStableFunc(rest, before)
	for _, f := range rest {
		b := index[BandFor(f.SourceType)]
		b.queue = []ora.Fact{f}
		admit(b, b.MaxTokens, true)
		if len(b.queue) > 0 {
			truncated = true
		}
		b.queue = nil
	}

	p := ora.OrientationPacket{
		ID:             PacketID(sig.ID),
		WaveID:         sig.ID,
		ProfileID:      o.ProfileID,
		ProfileVersion: o.ProfileVersion,
		TokenBudget:    o.TokenBudget,
		Truncated:      truncated,
		Bands:          make([]ora.PacketBand, len(bands)),
	}
	for i, b := range bands {
		slices.SortStableFunc(b.taken, before)
		if b.taken == nil {
			b.taken = []ora.Fact{}
		}
		p.Bands[i] = ora.PacketBand{BandBudget: b.BandBudget, UsedTokens: b.used, Facts: b.taken}
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
	store Store
	opts  []func(*Options)
}

// NewCompiler returns a compiler over store; the options set the budget, the
// bands and the profile.
func NewCompiler(store Store, opts ...func(*Options)) *Compiler {
	return &Compiler{store: store, opts: opts}
}

// Compile reads the wave's signal and observed facts, compiles its packet and
// writes it as the wave's one orientation-packet entry. When the wave already
// has a packet (a retry after a crash), the stored packet is returned: it is
// the one the reasoner reads, and with the same facts it has the same digest.
// Errors: EINVALID, ENOTFOUND (no such signal), ETRANSIENT.
func (c *Compiler) Compile(ctx context.Context, signalID string) (ora.OrientationPacket, error) {
	sig, entries, err := loadSignal(ctx, c.store, signalID)
	if err != nil {
		return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: %w", signalID, err)
	}
	var facts []ora.Fact
	for _, e := range entries {
		if e.Kind != ora.KindObservedFact {
			continue
		}
		var f ora.Fact
		if err := json.Unmarshal(e.Body, &f); err != nil {
			return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: %w", signalID,
				ora.Invalid("fact", "stored fact %q is malformed: %v", e.Qualifier, err))
		}
		facts = append(facts, f)
	}
	p, err := Compile(sig, facts, c.opts...)
	if err != nil {
		return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: %w", signalID, err)
	}
	e, err := ora.NewEntry(signalID, ora.KindOrientationPacket, "", p)
	if err != nil {
		return ora.OrientationPacket{}, fmt.Errorf("orient: compile %s: %w", signalID, err)
	}
	e.Meta = map[string]string{"packet_id": p.ID, "digest": p.Digest}
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
	return p, nil
}
