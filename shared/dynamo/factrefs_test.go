package dynamo

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ledgertest"
	"github.com/ora-runtime/ora/shared/ora"
)

// factBodiesProbe counts and deletes the table's fact-body items (and
// forgets the ledger's cached bodies, as another process would not have
// them).
type factBodiesProbe struct {
	c     *dynamodb.Client
	table string
	l     *Ledger
}

func (p factBodiesProbe) Count(ctx context.Context) (int, error) {
	out, err := p.c.Scan(ctx, &dynamodb.ScanInput{
		TableName:                 aws.String(p.table),
		FilterExpression:          aws.String("#t = :t"),
		ExpressionAttributeNames:  map[string]string{"#t": "type"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": sv(typeFactBody)},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return 0, err
	}
	return len(out.Items), nil
}

func (p factBodiesProbe) Drop(ctx context.Context, digest string) error {
	_, err := p.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(p.table), Key: factKey(digest)})
	p.l.cache = newBodyCache(p.l.cache.max)
	return err
}

// TestCompiledFacts runs real waves through orientation on DynamoDB Local
// (ledgertest.RunCompiledFacts); the cold ledger caches nothing.
func TestCompiledFacts(t *testing.T) {
	ledgertest.RunCompiledFacts(t, func(t *testing.T) (ora.Ledger, ledgertest.FactBodies, func() ora.Ledger) {
		c, name := newTable(t)
		l := New(c, name)
		return l, factBodiesProbe{c, name, l}, func() ora.Ledger {
			return New(c, name, func(o *Options) { o.BodyCacheBytes = -1 })
		}
	})
}

func TestFactRefsContract(t *testing.T) {
	ledgertest.RunFactRefs(t, func(t *testing.T) (ora.Ledger, ledgertest.FactBodies) {
		c, name := newTable(t)
		l := New(c, name)
		return l, factBodiesProbe{c, name, l}
	})
}

// TestFactBodyTTL reads a fact-body item's TTL as entries that share it
// come: the first entry's expiry rounded up to the day, moved later by a
// later one, never earlier by an earlier one, and dropped (kept) by an entry
// that is kept; a second process that finds it stored does not write it.
func TestFactBodyTTL(t *testing.T) {
	ctx := context.Background()
	c, name := newTable(t)
	l := New(c, name, func(o *Options) { o.Retention = ora.Retention{} })
	norm := `{"kind":"final-verdict","signal_id":"sig-1","body":"` + strings.Repeat("a verdict worth keeping once; ", 6) + `"}`
	digest := ora.Digest([]byte(norm))
	day := int64(24 * 60 * 60)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ttlOf := func() (int64, bool) {
		t.Helper()
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: factKey(digest), ConsistentRead: aws.Bool(true)})
		if err != nil || len(out.Item) == 0 {
			t.Fatalf("GetItem fact body: %v, %d attributes", err, len(out.Item))
		}
		_, has := out.Item[AttrTTL]
		n, _ := getN(out.Item, AttrTTL)
		return n, has
	}
	write := func(l *Ledger, sig string, expires *time.Time) {
		t.Helper()
		e := ora.NewEntryJSON(sig, ora.KindObservedFact, "actor/facts-000", []byte(`{"facts":[{"fact_id":"actor/00000","normalized":`+norm+`}]}`))
		e.CreatedAt, e.ExpiresAt = at, expires
		if _, err := l.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	in := func(d time.Duration) *time.Time { x := at.Add(d); return &x }
	steps := []struct {
		name    string
		ledger  *Ledger
		expires *time.Time
		want    int64 // 0: no ttl
	}{
		{"the first entry's expiry, rounded up to the day", l, in(30 * 24 * time.Hour), (at.Add(30*24*time.Hour).Unix()/day + 1) * day},
		{"a later entry moves it later", l, in(40 * 24 * time.Hour), (at.Add(40*24*time.Hour).Unix()/day + 1) * day},
		{"an earlier one leaves it", New(c, name), in(35 * 24 * time.Hour), (at.Add(40*24*time.Hour).Unix()/day + 1) * day},
		{"a kept entry keeps it", l, nil, 0},
		{"an expiring one after that leaves it kept", New(c, name), in(50 * 24 * time.Hour), 0},
	}
	for i, s := range steps {
		write(s.ledger, fmt.Sprintf("sig-%d", i), s.expires)
		got, has := ttlOf()
		if has != (s.want != 0) || got != s.want {
			t.Errorf("%s: ttl %d (present %v), want %d", s.name, got, has, s.want)
		}
	}
}
