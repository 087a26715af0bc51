package dynamo

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/factref"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// TestCompiledPacketsKeepFactsByReference runs real waves through
// orientation (plan, fetch, compile) on DynamoDB Local after a history of
// signals, evidence and verdicts: the recent entries both waves read are
// stored once as fact bodies, the items of the facts and packets hold
// references, and Verify (a recompile from the stored facts) matches the
// stored digest, also from a ledger with nothing cached.
func TestCompiledPacketsKeepFactsByReference(t *testing.T) {
	ctx := context.Background()
	c, name := newTable(t)
	l := New(c, name)
	now := time.Now().UTC().Truncate(time.Millisecond)
	signal := func(id string, at time.Time) {
		t.Helper()
		raw := []byte(`{"confidence":"high","title":"deploy ` + id + ` finished"}`)
		s := ora.NormalizedSignal{ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: "ci", Provider: "github"},
			Timestamp: at, NormalizedAt: at, DedupKey: "ci:" + id, RawDigest: ora.Digest(raw), Payload: raw, Raw: raw}
		e, err := ora.NewEntry(id, ora.KindSignalReceived, "", s)
		if err != nil {
			t.Fatal(err)
		}
		e.CreatedAt = at
		if _, err := l.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(id string, kind ora.EntryKind, q string, body any, at time.Time) {
		t.Helper()
		e, err := ora.NewEntry(id, kind, q, body)
		if err != nil {
			t.Fatal(err)
		}
		e.CreatedAt = at
		if _, err := l.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		id := fmt.Sprintf("past-%d", i)
		at := now.Add(time.Duration(i-40) * time.Minute)
		signal(id, at)
		entry(id, ora.KindExecutionEvidence, "0", map[string]any{"action": "notify", "ok": true, "channel": "#deploys"}, at.Add(time.Second))
		entry(id, ora.KindFinalVerdict, "", map[string]any{"final": "completed", "summary": "notified #deploys"}, at.Add(2*time.Second))
	}
	waves := []string{"wave-a", "wave-b"}
	refs := 0
	for i, w := range waves {
		signal(w, now.Add(time.Duration(i)*time.Second))
		wp, err := orient.NewPlanner(l).PlanWave(ctx, w)
		if err != nil {
			t.Fatalf("plan %s: %v", w, err)
		}
		f := orient.NewFetcher(l)
		for _, j := range wp.Jobs {
			if _, err := f.Fetch(ctx, w, j); err != nil {
				t.Fatalf("fetch %s/%s: %v", w, j.ID, err)
			}
		}
		if _, err := orient.NewCompiler(l).Compile(ctx, w); err != nil {
			t.Fatalf("compile %s: %v", w, err)
		}
		// The items of its facts and packet refer to fact bodies.
		out, err := c.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(name), KeyConditionExpression: aws.String("PK = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": sv(prefixSignal + w)}, ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, item := range out.Items {
			if b := getS(item, "body"); factref.HasRefs([]byte(b)) {
				kinds[getS(item, "kind")]++
				refs += len(factref.Digests([]byte(b)))
			}
		}
		if kinds[string(ora.KindObservedFact)] == 0 || kinds[string(ora.KindOrientationPacket)] != 1 {
			t.Errorf("%s: items holding references by kind %v; want facts parts and the packet", w, kinds)
		}
	}
	n, err := factBodiesProbe{c, name, l}.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d fact bodies for %d references", n, refs)
	if n == 0 || n >= refs {
		t.Errorf("%d fact bodies for %d references; want each body once (fewer bodies than references)", n, refs)
	}
	for _, led := range []*Ledger{l, New(c, name, func(o *Options) { o.BodyCacheBytes = -1 })} {
		for _, w := range waves {
			v, err := orient.NewCompiler(led).Verify(ctx, w)
			if err != nil || !v.Match {
				t.Errorf("Verify %s: %+v, %v; want a match", w, v, err)
			}
			es, err := led.EntriesOfKinds(ctx, w, ora.KindOrientationPacket)
			if err != nil || len(es) != 1 || bytes.IndexByte(es[0].Body, factref.Mark) >= 0 || ora.Digest(es[0].Body) != es[0].Digest {
				t.Errorf("%s: the packet read back does not match its digest: %v", w, err)
			}
		}
	}
}
