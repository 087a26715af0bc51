package ledgertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/bodystore"
	"github.com/ora-runtime/ora/shared/ora"
)

// RunBodies runs the item-size contract: entries over ora.MaxItemBytes whose
// kind is offloadable keep their body in the body store by reference and read
// back whole; any other entry over the limit is refused with an EINVALID
// error naming its kind, key and size, and nothing of it (or of its batch) is
// written. newLedger returns an empty ledger using bodies as its body store,
// or none when bodies is nil. The store given is a bodystore.Folder in
// t.TempDir().
func RunBodies(t *testing.T, newLedger func(t *testing.T, bodies ora.BodyStore) ora.Ledger) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, func(ora.BodyStore) ora.Ledger)
	}{
		{"LargeSignalRoundTrips", testLargeSignal},
		{"LargeFactsInBatchRoundTrip", testLargeBatch},
		{"EntryAtTheLimitStaysInline", testAtLimit},
		{"OversizedNotOffloadableWritesNothing", testOversizedRefused},
		{"OversizedWithoutBodyStoreWritesNothing", testNoBodyStore},
		{"OversizedDecisionWritesNothing", testOversizedDecision},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, func(b ora.BodyStore) ora.Ledger { return newLedger(t, b) })
		})
	}
}

// padded returns a JSON object of exactly n bytes: {"pad":"xxx..."}.
func padded(n int) string {
	const frame = `{"pad":""}`
	return `{"pad":"` + strings.Repeat("x", n-len(frame)) + `"}`
}

// largeSignal is a valid signal-received entry whose body is about n bytes.
func largeSignal(t *testing.T, id string, n int) ora.Entry {
	t.Helper()
	s := ora.NormalizedSignal{
		ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: "github", Provider: "github"},
		Timestamp: base, NormalizedAt: base, DedupKey: "dedup-" + id, RawDigest: ora.Digest(nil),
		Payload: json.RawMessage(padded(n)),
	}
	body, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return entry(id, ora.KindSignalReceived, "", base, string(body))
}

// sameBody compares bodies without printing a megabyte on failure.
func sameBody(t *testing.T, what string, got, want ora.Entry) {
	t.Helper()
	if !bytes.Equal(got.Body, want.Body) || got.Digest != want.Digest {
		t.Errorf("%s: body of %d bytes (digest %s), want %d bytes (digest %s)", what, len(got.Body), got.Digest, len(want.Body), want.Digest)
	}
}

// stored reports whether bodies holds the body of e by its content address,
// under either prefix (which one depends on the expiry the ledger gives e:
// ora.BodyKeyOf).
func stored(t *testing.T, bodies ora.BodyStore, e ora.Entry) bool {
	t.Helper()
	for _, key := range []string{ora.BodyKey(e.Digest), ora.ExpiringBodyPrefix + e.Digest} {
		b, err := bodies.GetBody(context.Background(), key)
		if ora.ErrorCode(err) == ora.ENOTFOUND {
			continue
		}
		if err != nil {
			t.Fatalf("GetBody: %v", err)
		}
		return bytes.Equal(b, e.Body)
	}
	return false
}

func testLargeSignal(t *testing.T, newLedger func(ora.BodyStore) ora.Ledger) {
	ctx := context.Background()
	bodies := bodystore.Folder{Root: t.TempDir()}
	l := newLedger(bodies)
	in := largeSignal(t, "sig-large", 1<<20)
	if ora.EntrySize(in) <= ora.MaxItemBytes {
		t.Fatalf("test entry of %d bytes fits an item", ora.EntrySize(in))
	}
	got := mustAppend(t, l, in)
	sameBody(t, "Append's entry", got, in)
	if !stored(t, bodies, in) {
		t.Errorf("the body store holds no %s", ora.BodyKey(in.Digest))
	}
	all, err := l.Entries(ctx, "sig-large")
	if err != nil || len(all) != 1 {
		t.Fatalf("Entries: %d, %v; want 1", len(all), err)
	}
	sameBody(t, "Entries", all[0], in)
	recent, err := l.Recent(ctx, ora.KindSignalReceived, base.Add(-time.Minute), base.Add(time.Minute), 0)
	if err != nil || len(recent) != 1 {
		t.Fatalf("Recent: %d, %v; want 1", len(recent), err)
	}
	sameBody(t, "Recent", recent[0], in)
	_, err = l.Append(ctx, in)
	wantCode(t, "second Append", err, ora.ECONFLICT)
	if prev, ok := ora.Existing[ora.Entry](err); !ok {
		t.Errorf("the conflict carries no entry: %v", err)
	} else {
		sameBody(t, "the conflict's stored entry", prev, in)
	}
}

func testLargeBatch(t *testing.T, newLedger func(ora.BodyStore) ora.Ledger) {
	ctx := context.Background()
	bodies := bodystore.Folder{Root: t.TempDir()}
	l := newLedger(bodies)
	b, ok := l.(batchAppender)
	if !ok {
		t.Fatalf("%T has no AppendNew", l)
	}
	var batch []ora.Entry
	for i := range 30 { // more than one BatchWriteItem, every third fact large
		n := 100
		if i%3 == 0 {
			n = 500*1024 + i
		}
		batch = append(batch, entry("sig-large-batch", ora.KindObservedFact, fmt.Sprintf("j/%02d", i), base, padded(n)))
	}
	if n, err := b.AppendNew(ctx, batch); err != nil || n != len(batch) {
		t.Fatalf("AppendNew = %d, %v; want %d", n, err, len(batch))
	}
	got, err := l.Entries(ctx, "sig-large-batch")
	if err != nil || len(got) != len(batch) {
		t.Fatalf("Entries: %d, %v; want %d", len(got), err, len(batch))
	}
	for i, e := range got {
		sameBody(t, e.Qualifier, e, batch[i])
		if large := len(batch[i].Body) > ora.MaxItemBytes; stored(t, bodies, batch[i]) != large {
			t.Errorf("%s: in the body store %v, want %v", e.Qualifier, !large, large)
		}
	}
}

func testAtLimit(t *testing.T, newLedger func(ora.BodyStore) ora.Ledger) {
	ctx := context.Background()
	bodies := bodystore.Folder{Root: t.TempDir()}
	l := newLedger(bodies)
	e := entry("sig-at-limit", ora.KindFinalVerdict, "", base, `{}`)
	e.Meta = map[string]string{"job": "j-1"}
	// The body that makes EntrySize exactly the limit: stored inline (a
	// final verdict is never stored by reference), so the store must take
	// an item of this size.
	e.Body = json.RawMessage(padded(ora.MaxItemBytes - ora.EntrySize(e) + len(e.Body)))
	e.Digest = ora.Digest(e.Body)
	if got := ora.EntrySize(e); got != ora.MaxItemBytes {
		t.Fatalf("EntrySize = %d, want %d", got, ora.MaxItemBytes)
	}
	mustAppend(t, l, e)
	all, err := l.Entries(ctx, "sig-at-limit")
	if err != nil || len(all) != 1 {
		t.Fatalf("Entries: %d, %v; want 1", len(all), err)
	}
	sameBody(t, "Entries", all[0], e)
	if stored(t, bodies, e) {
		t.Errorf("an entry within the limit went to the body store")
	}
	over := entry("sig-over-limit", ora.KindFinalVerdict, "", base, padded(len(e.Body)+1))
	over.Meta = e.Meta
	_, err = l.Append(ctx, over)
	wantCode(t, "Append one byte over", err, ora.EINVALID)
}

// wantTooLarge checks err is the item-size error naming kind, key and size.
func wantTooLarge(t *testing.T, what string, err error, e ora.Entry) {
	t.Helper()
	wantCode(t, what, err, ora.EINVALID)
	if !errors.Is(err, ora.ErrEntryTooLarge) || ora.ErrorField(err) != "body" {
		t.Errorf("%s: %v is not ErrEntryTooLarge on field body", what, err)
	}
	for _, want := range []string{string(e.Kind), e.SignalID + "/" + string(e.Kind) + "/" + e.Qualifier, fmt.Sprint(ora.EntrySize(e))} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not name %q", what, err, want)
		}
	}
}

func testOversizedRefused(t *testing.T, newLedger func(ora.BodyStore) ora.Ledger) {
	ctx := context.Background()
	bodies := bodystore.Folder{Root: t.TempDir()}
	l := newLedger(bodies)
	big := entry("sig-refused", ora.KindOperatorDecision, "op-1", base, padded(ora.MaxItemBytes))
	_, err := l.Append(ctx, big)
	wantTooLarge(t, "Append", err, big)
	if _, err := l.Entries(ctx, "sig-refused"); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("a refused entry was written: %v", err)
	}
	if stored(t, bodies, big) {
		t.Errorf("a refused entry's body went to the body store")
	}
	// A batch with one refused entry writes none of the others.
	b, ok := l.(batchAppender)
	if !ok {
		t.Fatalf("%T has no AppendNew", l)
	}
	batch := []ora.Entry{
		entry("sig-refused-batch", ora.KindObservedFact, "small", base, `{"ok":1}`),
		entry("sig-refused-batch", ora.KindObservedFact, "large", base, padded(600*1024)),
		entry("sig-refused-batch", ora.KindOperatorDecision, "op-1", base, padded(ora.MaxItemBytes)),
	}
	_, err = b.AppendNew(ctx, batch)
	wantTooLarge(t, "AppendNew", err, batch[2])
	if _, err := l.Entries(ctx, "sig-refused-batch"); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("a refused batch wrote entries: %v", err)
	}
}

func testNoBodyStore(t *testing.T, newLedger func(ora.BodyStore) ora.Ledger) {
	ctx := context.Background()
	l := newLedger(nil)
	big := entry("sig-no-store", ora.KindObservedFact, "j-1", base, padded(ora.MaxItemBytes))
	_, err := l.Append(ctx, big)
	wantTooLarge(t, "Append", err, big)
	if !strings.Contains(err.Error(), "no body store") {
		t.Errorf("error %q does not say no body store is configured", err)
	}
	if _, err := l.Entries(ctx, "sig-no-store"); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("a refused entry was written: %v", err)
	}
}

// A reasoner decision is never stored by reference: one over the limit is
// refused, and neither its entry nor its status record is written.
func testOversizedDecision(t *testing.T, newLedger func(ora.BodyStore) ora.Ledger) {
	ctx := context.Background()
	l := newLedger(bodystore.Folder{Root: t.TempDir()})
	d := decision("dec-huge", "sig-huge-decision")
	d.Reasoning = strings.Repeat("r", ora.MaxItemBytes)
	_, err := l.RecordDecision(ctx, d)
	wantCode(t, "RecordDecision", err, ora.EINVALID)
	if !errors.Is(err, ora.ErrEntryTooLarge) || !strings.Contains(err.Error(), "sig-huge-decision/reasoner-decision/dec-huge") {
		t.Errorf("error %v does not name the decision's entry as too large", err)
	}
	if _, err := l.Entries(ctx, "sig-huge-decision"); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("a refused decision wrote its entry: %v", err)
	}
	if _, err := l.Decision(ctx, "dec-huge"); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("a refused decision wrote its status: %v", err)
	}
}
