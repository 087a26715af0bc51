package orient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ora-runtime/ora/shared/ora"
)

// An operator's input patch in the packet. A wave resumed with an input
// patch (a new value for one field of the signal's payload) runs Compile
// under it when Compile runs again: the packet's identity fact (SignalFact)
// then records the patch (kind, target, sha256) and the sha256 of the
// payload as patched, the one Reason reads, so the packet's digest covers
// the signal the model saw. Verify compiles the packet again under the patch
// the operator recorded with that sha256 in the wave's ledger, so a patch
// changed after the fact (its value, or its record) fails Verify. Plan and
// Fetch read the signal's id and times, never its payload: an input patch
// changes nothing there.

// patchedFact is what the identity fact says of the patch it was compiled
// under; its fields are in the order of their JSON names.
type patchedFact struct {
	Digest string `json:"digest"`
	Kind   string `json:"kind"`
	Target string `json:"target"`
}

// checkInputPatch checks a patch handed to Compile: an input patch whose
// Digest is its sha256, and that applies to the payload. It returns the
// payload as patched. Errors: EINVALID naming the patch's field.
func checkInputPatch(sig ora.NormalizedSignal, p *ora.AppPatch) (json.RawMessage, error) {
	if sum := p.Sum(); p.Digest != sum {
		return nil, ora.Invalid("app_patch.digest", "%q is not the patch's sha256 %s", p.Digest, sum)
	}
	out, err := p.ApplyInput(sig.Payload)
	if err != nil {
		return nil, fmt.Errorf("app patch %s: %w", p.Digest, err)
	}
	return out, nil
}

// signalFactUnder is SignalFact for a wave compiled under the input patch p
// (nil: SignalFact itself, byte for byte): the identity fact also records
// the patch, by its sha256 computed again (not the digest it claims: a
// patch changed after it was recorded then changes the packet), and the
// sha256 of the payload as patched. Errors: EINVALID for a patch that names
// no field of the payload.
func signalFactUnder(sig ora.NormalizedSignal, p *ora.AppPatch) (ora.Fact, error) {
	if p == nil {
		return SignalFact(sig), nil
	}
	payload, err := p.ApplyInput(sig.Payload)
	if err != nil {
		return ora.Fact{}, fmt.Errorf("app patch %s: %w", p.Digest, err)
	}
	sum := p.Sum()
	n, err := json.Marshal(map[string]any{
		"signal_id":      sig.ID,
		"source":         sig.Source,
		"timestamp":      sig.Timestamp.UTC(),
		"dedup_key":      sig.DedupKey,
		"raw_digest":     sig.RawDigest,
		"app_patch":      patchedFact{Digest: sum, Kind: p.Kind, Target: p.Target},
		"payload_digest": ora.Digest(payload),
	})
	if err != nil {
		return ora.Fact{}, ora.Errorf(ora.EINTERNAL, "encode the identity fact: %v", err)
	}
	f := SignalFact(sig)
	f.Normalized = n
	f.Provenance["app_patch"] = sum
	f.EstimatedTokens = 0
	b, _ := json.Marshal(f)
	f.EstimatedTokens = EstimateTokens(b)
	return f, nil
}

// PatchOf returns the sha256 of the input patch a packet was compiled under
// (its identity fact's app_patch), or "" for a packet compiled without one.
func PatchOf(p ora.OrientationPacket) string {
	for _, b := range p.Bands {
		for _, f := range b.Facts {
			if f.SourceType == SourceSignal {
				return f.Provenance["app_patch"]
			}
		}
	}
	return ""
}

// recordedPatch finds, among a wave's operator-decision entries, the app
// patch a resume recorded with the sha256 digest (the PATCHING and resumed
// steps carry it as "patch"). ok is false when none did.
func recordedPatch(entries []ora.Entry, digest string) (p ora.AppPatch, ok bool) {
	for _, e := range entries {
		if e.Kind != ora.KindOperatorDecision {
			continue
		}
		var b struct {
			Patch *ora.AppPatch `json:"patch"`
		}
		if json.Unmarshal(e.Body, &b) == nil && b.Patch != nil && b.Patch.Digest == digest {
			return *b.Patch, true
		}
	}
	return ora.AppPatch{}, false
}

// CompileUnder is Compile for a wave that runs under an operator's app
// patch (nil: none, as Compile): the packet it compiles records an input
// patch in its identity fact; a patch of another kind is not applied. A
// packet the wave already has is returned as it is. Errors: as Compile, and
// EINVALID for an input patch whose digest is not its sha256 or that names
// no field of the payload.
func (c *Compiler) CompileUnder(ctx context.Context, signalID string, patch *ora.AppPatch) (ora.OrientationPacket, error) {
	if patch != nil && patch.Kind != ora.PatchInput {
		// A resume refuses a mapping or spec patch; one handed over by an
		// earlier version, which recorded them without applying them, is
		// not applied here either (nor by Reason).
		patch = nil
	}
	return c.compileUnder(ctx, signalID, patch)
}

// replayPatch returns the patch to compile a stored packet again under:
// the operator's record of the patch it names, or nil when it names none.
// A packet naming a patch nobody recorded is compiled again without one,
// so its digests differ.
func replayPatch(stored ora.OrientationPacket, entries []ora.Entry) *ora.AppPatch {
	d := PatchOf(stored)
	if d == "" {
		return nil
	}
	if p, ok := recordedPatch(entries, d); ok {
		return &p
	}
	return nil
}
