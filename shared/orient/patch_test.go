package orient_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// planAndFetch plans a stored signal's wave and fetches its jobs.
func planAndFetch(t *testing.T, l ora.Ledger, id string) {
	t.Helper()
	ctx := context.Background()
	wp, err := orient.NewPlanner(l).PlanWave(ctx, id)
	if err != nil {
		t.Fatalf("plan %s: %v", id, err)
	}
	for _, j := range wp.Jobs {
		if _, err := orient.NewFetcher(l).Fetch(ctx, id, j); err != nil {
			t.Fatalf("fetch %s/%s: %v", id, j.ID, err)
		}
	}
}

// checked returns p with its digest, as a resume records it.
func checked(p ora.AppPatch) *ora.AppPatch {
	p.Digest = p.Sum()
	return &p
}

// recordPatch writes the operator's record of a resume with patch, as the
// operator's resumed step carries it.
func recordPatch(t *testing.T, l ora.Ledger, wave string, patch *ora.AppPatch) {
	t.Helper()
	appendEntry(t, l, wave, ora.KindOperatorDecision, "resumed/op-1", map[string]any{"state": "RUNNING", "patch": patch}, t0)
}

// Compile under an operator's input patch records the patch and the
// patched payload's sha256 in the packet's identity fact; Verify compiles it
// again under the patch the operator recorded and matches; a patch changed
// after the fact, or one nobody recorded, fails Verify; an input patch
// Compile cannot apply is refused with nothing written, and a patch of
// another kind is not applied. On SQLite and DynamoDB Local.
func TestCompileUnderAnInputPatch(t *testing.T) {
	patch := checked(ora.AppPatch{Kind: ora.PatchInput, Target: "confidence", Value: json.RawMessage(`"medium"`)})
	tampered := *patch
	tampered.Value = json.RawMessage(`"low"`) // the digest it claims is the original's
	rows := []struct {
		name     string
		handed   *ora.AppPatch // what the state machine hands Compile
		recorded *ora.AppPatch // what the operator's record holds (nil: nothing)
		errHas   string        // Compile refuses it
		match    bool          // Verify's answer
	}{
		{name: "no patch", match: true},
		{name: "an input patch", handed: patch, recorded: patch, match: true},
		{name: "a recorded patch changed after the fact", handed: patch, recorded: &tampered},
		{name: "a patch nobody recorded", handed: patch},
		{name: "a patch whose digest is not its sha256", handed: &tampered, errHas: "app_patch.digest"},
		{name: "a mapping patch handed over by an earlier version: not applied", handed: checked(ora.AppPatch{Kind: "mapping", Target: "test", Value: json.RawMessage(`{"confidence":"$.c"}`)}), match: true},
		{name: "a field the payload lacks", handed: checked(ora.AppPatch{Kind: ora.PatchInput, Target: "severity", Value: json.RawMessage(`"high"`)}), errHas: "patch.target"},
	}
	for _, st := range acttest.Stores {
		t.Run(st.Name, func(t *testing.T) {
			for _, tc := range rows {
				t.Run(tc.name, func(t *testing.T) {
					ctx := context.Background()
					l := st.Open(t).Ledger
					sig := testSignal("w1")
					storeSignal(t, l, sig)
					planAndFetch(t, l, "w1")
					if tc.recorded != nil {
						recordPatch(t, l, "w1", tc.recorded)
					}
					c := orient.NewCompiler(l)
					p, err := c.CompileUnder(ctx, "w1", tc.handed)
					if tc.errHas != "" {
						if ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), tc.errHas) {
							t.Fatalf("compile: %v, want EINVALID naming %s", err, tc.errHas)
						}
						if _, err := orient.NewService(l).Packet(ctx, "w1"); ora.ErrorCode(err) != ora.ENOTFOUND {
							t.Errorf("a refused patch left a packet: %v", err)
						}
						return
					}
					if err != nil {
						t.Fatalf("compile: %v", err)
					}
					var identity ora.Fact
					for _, b := range p.Bands {
						for _, f := range b.Facts {
							if f.SourceType == orient.SourceSignal {
								identity = f
							}
						}
					}
					var n struct {
						AppPatch *struct {
							Digest, Kind, Target string
						} `json:"app_patch"`
						PayloadDigest string `json:"payload_digest"`
					}
					if err := json.Unmarshal(identity.Normalized, &n); err != nil {
						t.Fatal(err)
					}
					if tc.handed == nil || tc.handed.Kind != ora.PatchInput {
						if orient.PatchOf(p) != "" || n.AppPatch != nil || string(identity.Normalized) != string(orient.SignalFact(sig).Normalized) {
							t.Errorf("without a patch the identity fact is %s, want SignalFact's %s", identity.Normalized, orient.SignalFact(sig).Normalized)
						}
					} else {
						patched, _ := tc.handed.ApplyInput(sig.Payload)
						if orient.PatchOf(p) != tc.handed.Digest || n.AppPatch == nil || n.AppPatch.Digest != tc.handed.Digest || n.AppPatch.Target != "confidence" ||
							n.PayloadDigest != ora.Digest(patched) {
							t.Errorf("identity fact %s: want the patch %s and the patched payload's sha256 %s", identity.Normalized, tc.handed.Digest, ora.Digest(patched))
						}
					}
					v, err := c.Verify(ctx, "w1")
					if err != nil {
						t.Fatalf("verify: %v", err)
					}
					if v.Match != tc.match || v.StoredDigest != p.Digest {
						t.Errorf("verify: %+v, want match %v for stored %s", v, tc.match, p.Digest)
					}
				})
			}
		})
	}
}
