package ledgertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
)

// FactBodies is what RunFactRefs needs to see of a store's fact bodies
// beyond the ledger interface: how many are stored, and a way to lose one
// (as its retention would).
type FactBodies interface {
	// Count returns how many fact bodies the store holds.
	Count(ctx context.Context) (int, error)
	// Drop deletes the fact body with the given sha256 (hex).
	Drop(ctx context.Context, digest string) error
}

// RunFactRefs runs the facts-by-reference contract: a fact's normalized body
// written by several waves (facts parts and packets, through Append and
// AppendNew) is stored once; every entry reads back byte for byte with its
// digest; a body that is gone makes reading its entries fail with an
// EINTERNAL error naming its digest, never a wrong body. newStore returns
// an empty ledger and its FactBodies.
func RunFactRefs(t *testing.T, newStore func(t *testing.T) (ora.Ledger, FactBodies)) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, ora.Ledger, FactBodies)
	}{
		{"AFactOfTwoWavesIsStoredOnce", testFactStoredOnce},
		{"APacketResolvesToItsBytesAndDigest", testPacketResolves},
		{"AMissingBodyIsNamed", testMissingFactBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, fb := newStore(t)
			tt.fn(t, l, fb)
		})
	}
}

// factNorm are normalized bodies as the ledger source writes them: a recent
// verdict each, long enough to be kept by reference.
func factNorm(i int) string {
	return fmt.Sprintf(`{"author_type":"validator","body":{"outcome":"success","summary":%q},"created_at":"2026-03-14T09:26:53Z","kind":"final-verdict","qualifier":"","signal_id":"sig-%03d"}`,
		strings.Repeat("the action completed and its witness agreed; ", 3), i)
}

// factsPart is a fetch job's facts entry body over the normalized bodies.
func factsPart(wave string, norms ...string) string {
	var fs []string
	for i, n := range norms {
		fs = append(fs, fmt.Sprintf(`{"fact_id":"%s/actor/%05d","wave_id":%q,"source_ref":"ledger:sig-%03d/final-verdict/","provenance":{"store":"ledger"},"normalized":%s,"utility_score":0.6}`,
			wave, i, wave, i, n))
	}
	return `{"job_id":"actor","job_kind":"actor_history","part":0,"facts":[` + strings.Join(fs, ",") + `]}`
}

// packetOf is an orientation packet body carrying the normalized bodies.
func packetOf(wave string, norms ...string) string {
	var fs []string
	for i, n := range norms {
		fs = append(fs, fmt.Sprintf(`{"fact_id":"%s/actor/%05d","source_type":"ledger","normalized":%s,"token_estimate":60}`, wave, i, n))
	}
	return `{"packet_id":"pkt-` + wave + `","bands":[{"band":"actor_history","facts":[` + strings.Join(fs, ",") + `]}],"digest_sha256":""}`
}

func countBodies(t *testing.T, fb FactBodies) int {
	t.Helper()
	n, err := fb.Count(context.Background())
	if err != nil {
		t.Fatalf("count fact bodies: %v", err)
	}
	return n
}

func testFactStoredOnce(t *testing.T, l ora.Ledger, fb FactBodies) {
	ctx := context.Background()
	norms := []string{factNorm(1), factNorm(2), factNorm(3)}
	b, batches := l.(batchAppender)
	var written []ora.Entry
	for i, wave := range []string{"wave-1", "wave-2"} {
		part := ora.NewEntryJSON(wave, ora.KindObservedFact, "actor/part-000", []byte(factsPart(wave, norms[i:]...)))
		if batches {
			if n, err := b.AppendNew(ctx, []ora.Entry{part}); err != nil || n != 1 {
				t.Fatalf("AppendNew %s = %d, %v", wave, n, err)
			}
		} else {
			mustAppend(t, l, part)
		}
		pkt := mustAppend(t, l, ora.NewEntryJSON(wave, ora.KindOrientationPacket, "", []byte(packetOf(wave, norms[i:]...))))
		written = append(written, part, pkt)
	}
	// Wave 1 has bodies 1-3, wave 2 bodies 2-3, each in a part and a packet.
	if got := countBodies(t, fb); got != len(norms) {
		t.Errorf("fact bodies stored: %d, want %d (each normalized body once)", got, len(norms))
	}
	for _, want := range written {
		got, err := l.Entries(ctx, want.SignalID)
		if err != nil {
			t.Fatalf("Entries(%s): %v", want.SignalID, err)
		}
		found := false
		for _, e := range got {
			if e.Kind == want.Kind {
				found = true
				sameBody(t, want.SignalID+"/"+string(want.Kind), e, want)
			}
		}
		if !found {
			t.Errorf("Entries(%s) has no %s", want.SignalID, want.Kind)
		}
	}
}

func testPacketResolves(t *testing.T, l ora.Ledger, _ FactBodies) {
	ctx := context.Background()
	body := packetOf("wave-p", factNorm(7), factNorm(8), `{"short":1}`)
	in := ora.NewEntryJSON("wave-p", ora.KindOrientationPacket, "", []byte(body))
	got := mustAppend(t, l, in)
	if got.Digest != ora.Digest([]byte(body)) {
		t.Errorf("Append's digest %s, want the digest of the body as written %s", got.Digest, ora.Digest([]byte(body)))
	}
	all, err := l.Entries(ctx, "wave-p")
	if err != nil || len(all) != 1 {
		t.Fatalf("Entries: %d, %v; want 1", len(all), err)
	}
	if string(all[0].Body) != body || all[0].Digest != ora.Digest(all[0].Body) || all[0].Digest != got.Digest {
		t.Errorf("the packet read back: %d bytes, digest %s; want %d bytes, digest %s", len(all[0].Body), all[0].Digest, len(body), got.Digest)
	}
	_, err = l.Append(ctx, in)
	if stored, ok := ora.Existing[ora.Entry](err); !ok || string(stored.Body) != body {
		t.Errorf("Append again: %v; want a conflict carrying the packet as written", err)
	}
}

func testMissingFactBody(t *testing.T, l ora.Ledger, fb FactBodies) {
	ctx := context.Background()
	norm := factNorm(9)
	in := ora.NewEntryJSON("wave-m", ora.KindObservedFact, "actor/part-000", []byte(factsPart("wave-m", norm)))
	mustAppend(t, l, in)
	digest := ora.Digest([]byte(norm)) // sha256, hex
	if err := fb.Drop(ctx, digest); err != nil {
		t.Fatalf("drop fact body %s: %v", digest, err)
	}
	got, err := l.Entries(ctx, "wave-m")
	if err == nil {
		t.Fatalf("Entries after its fact body went: %d entries, no error; want an error naming %s", len(got), digest)
	}
	if ora.ErrorCode(err) != ora.EINTERNAL || !strings.Contains(err.Error(), digest) {
		t.Errorf("Entries after its fact body went: %v (code %s); want EINTERNAL naming %s", err, ora.ErrorCode(err), digest)
	}
}
