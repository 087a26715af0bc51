package dynamo

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/ora"
)

// itemSize is an item's size by DynamoDB's rules.
func itemSize(item map[string]types.AttributeValue) int { return dynamotest.ItemSize(item) }

// TestEntrySizeBoundsTheItem checks ora.EntrySize is an upper bound of the
// item the ledger writes, for every kind (indexed or not), long ids, meta,
// an expiry and a body stored by reference.
func TestEntrySizeBoundsTheItem(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 1, time.UTC)
	exp := at.Add(time.Hour)
	long := strings.Repeat("é", 300)
	for _, kind := range ora.EntryKinds {
		for _, e := range []ora.Entry{
			{SignalID: "s", Kind: kind, Body: []byte(`{}`), CreatedAt: at},
			{SignalID: long, Kind: kind, Qualifier: long, AuthorType: ora.AuthorObserver, Body: []byte(`{"a":"` + long + `"}`),
				Meta: map[string]string{"job": long, "kind": "x"}, CreatedAt: at, ExpiresAt: &exp},
			{SignalID: long, Kind: kind, Qualifier: "q", Digest: ora.Digest([]byte("{}")), CreatedAt: at, ExpiresAt: &exp}, // by reference
		} {
			if e.Digest == "" {
				e.Digest = ora.Digest(e.Body)
			}
			item := entryItemSharded(e, DefaultRecentShards)
			if got, bound := itemSize(item), ora.EntrySize(e); got > bound {
				t.Errorf("%s (id %d bytes, body %d): item is %d bytes, EntrySize says %d", kind, len(e.SignalID), len(e.Body), got, bound)
			}
		}
	}
}

// TestItemOverTheLimitIsRefused shows the limit is DynamoDB Local's too: an
// item one byte over 400 KB is refused by the store, one at it is taken.
func TestItemOverTheLimitIsRefused(t *testing.T) {
	ctx := context.Background()
	c, name := newTable(t)
	for _, tc := range []struct {
		size int
		ok   bool
	}{{ora.MaxItemBytes, true}, {ora.MaxItemBytes + 1, false}} {
		item := key("P", "S")
		fixed := itemSize(item) + len("body")
		item["body"] = sv(strings.Repeat("x", tc.size-fixed))
		if itemSize(item) != tc.size {
			t.Fatalf("item of %d bytes, want %d", itemSize(item), tc.size)
		}
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: item})
		if (err == nil) != tc.ok {
			t.Errorf("PutItem of %d bytes: %v, want ok %v", tc.size, err, tc.ok)
		}
	}
}

// countingBodies is a body store in memory that counts reads.
type countingBodies struct {
	mu   sync.Mutex
	m    map[string][]byte
	gets int
	puts int
}

func (c *countingBodies) PutBody(_ context.Context, k string, b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.puts++
	c.m[k] = b
	return nil
}

func (c *countingBodies) GetBody(_ context.Context, k string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gets++
	b, ok := c.m[k]
	if !ok {
		return nil, ora.Errorf(ora.ENOTFOUND, "no %s", k)
	}
	return b, nil
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestOffloadAboveThreshold: on DynamoDB Local, an offloadable body over
// OffloadAbove (deflated, as its item would store it: the bodies deflate
// poorly) goes to the body store (the item keeps a body_ref, a few
// hundred bytes) and reads back whole; a smaller one and a decision stay in
// their items; a second read of the wave takes the body from the cache, not
// the store.
func TestOffloadAboveThreshold(t *testing.T) {
	ctx := context.Background()
	c, name := newTable(t)
	bodies := &countingBodies{m: map[string][]byte{}}
	l := New(c, name, func(o *Options) { o.Bodies = bodies })
	at := time.Now().UTC()
	mk := func(kind ora.EntryKind, q string, n int) ora.Entry {
		e := ora.Entry{SignalID: "sig-above", Kind: kind, Qualifier: q, CreatedAt: at, Body: noise(n)}
		e.Digest = ora.Digest(e.Body)
		return e
	}
	packet := mk(ora.KindOrientationPacket, "", 28*1024)
	small := mk(ora.KindObservedFact, "small", 2*1024)
	verdict := mk(ora.KindFinalVerdict, "", 20*1024)
	for _, e := range []ora.Entry{packet, small, verdict} {
		if _, err := l.Append(ctx, e); err != nil {
			t.Fatalf("Append %s: %v", e.Kind, err)
		}
	}
	// The packet expires (ora.DefaultRetention), so its body goes under
	// the prefix the bucket expires.
	if bodies.puts != 1 || bodies.m[ora.ExpiringBodyPrefix+packet.Digest] == nil {
		t.Fatalf("%d bodies stored (%v), want only the packet's, under %s", bodies.puts, keys(bodies.m), ora.ExpiringBodyPrefix)
	}
	for _, tc := range []struct {
		e   ora.Entry
		ref bool
	}{{packet, true}, {small, false}, {verdict, false}} {
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: entryKey(tc.e.SignalID, tc.e.Kind, tc.e.Qualifier)})
		if err != nil {
			t.Fatal(err)
		}
		_, hasRef := out.Item[attrBodyRef]
		if hasRef != tc.ref || (tc.ref && itemSize(out.Item) > 1024) {
			t.Errorf("%s: body_ref %v (item %d bytes), want %v", tc.e.Kind, hasRef, itemSize(out.Item), tc.ref)
		}
	}
	for i := range 2 {
		es, err := l.Entries(ctx, "sig-above")
		if err != nil || len(es) != 3 {
			t.Fatalf("Entries: %d, %v", len(es), err)
		}
		for _, e := range es {
			if e.Kind == ora.KindOrientationPacket && string(e.Body) != string(packet.Body) {
				t.Errorf("read %d: the packet's body did not read back whole", i)
			}
		}
	}
	if bodies.gets != 1 {
		t.Errorf("the body store was read %d times over two reads of the wave, want once (then cached)", bodies.gets)
	}
}

// TestEntriesOfKindsReadsOnlyTheirBodies: EntriesOfKinds is one query of the
// partition that reads back only the bodies of the kinds asked; with the
// cache off (BodyCacheBytes < 0) every read of a body is a store read.
func TestEntriesOfKindsReadsOnlyTheirBodies(t *testing.T) {
	ctx := context.Background()
	c, name := newTable(t)
	bodies := &countingBodies{m: map[string][]byte{}}
	l := New(c, name, func(o *Options) { o.Bodies = bodies; o.BodyCacheBytes = -1 })
	at := time.Now().UTC()
	for _, e := range []ora.Entry{
		{SignalID: "sig-kinds", Kind: ora.KindOrientationPacket, CreatedAt: at, Body: noise(20 * 1024)},
		{SignalID: "sig-kinds", Kind: ora.KindObservedFact, Qualifier: "j/facts-000", CreatedAt: at, Body: noise(21 * 1024)},
		{SignalID: "sig-kinds", Kind: ora.KindFinalVerdict, CreatedAt: at, Body: []byte(`{"outcome":"completed"}`)},
	} {
		e.Digest = ora.Digest(e.Body)
		if _, err := l.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		kinds []ora.EntryKind
		n     int
		gets  int
	}{
		{[]ora.EntryKind{ora.KindFinalVerdict}, 1, 0},
		{[]ora.EntryKind{ora.KindOrientationPacket, ora.KindFinalVerdict}, 2, 1},
		{[]ora.EntryKind{ora.KindObservedFact, ora.KindOrientationPacket}, 2, 2},
	} {
		before := bodies.gets
		es, err := l.EntriesOfKinds(ctx, "sig-kinds", tc.kinds...)
		if err != nil || len(es) != tc.n {
			t.Fatalf("EntriesOfKinds(%v): %d, %v; want %d", tc.kinds, len(es), err, tc.n)
		}
		for _, e := range es {
			if !slices.Contains(tc.kinds, e.Kind) || ora.Digest(e.Body) != e.Digest {
				t.Errorf("EntriesOfKinds(%v): %s, body %d bytes", tc.kinds, e.Kind, len(e.Body))
			}
		}
		if got := bodies.gets - before; got != tc.gets {
			t.Errorf("EntriesOfKinds(%v) read %d bodies, want %d", tc.kinds, got, tc.gets)
		}
	}
	if _, err := l.EntriesOfKinds(ctx, "sig-kinds", ora.KindHumanVerdict); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("no entry of the kind: %v, want ENOTFOUND", err)
	}
	before := bodies.gets
	if es, err := l.Entries(ctx, "sig-kinds"); err != nil || len(es) != 3 || bodies.gets-before != 2 {
		t.Errorf("Entries: %d entries, %v, %d bodies read; want 3 and 2 (no cache)", len(es), err, bodies.gets-before)
	}
}
