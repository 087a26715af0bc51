package dynamo

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/ledgertest"
	"github.com/ora-runtime/ora/shared/ora"
)

// newTable creates a fresh ledger table on DynamoDB Local and returns a client
// for it and its name.
func newTable(tb testing.TB) (*dynamodb.Client, string) {
	tb.Helper()
	c := dynamotest.Client(tb)
	name := dynamotest.TableName("ledger")
	if err := CreateLedgerTable(context.Background(), c, name); err != nil {
		tb.Fatalf("CreateLedgerTable: %v", err)
	}
	tb.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return c, name
}

func TestLedgerContract(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) ora.Ledger {
		c, name := newTable(t)
		return New(c, name)
	})
}

func TestBodiesContract(t *testing.T) {
	ledgertest.RunBodies(t, func(t *testing.T, bodies ora.BodyStore) ora.Ledger {
		c, name := newTable(t)
		return New(c, name, func(o *Options) { o.Bodies = bodies })
	})
}

func TestDebounceContract(t *testing.T) {
	ledgertest.RunDebounce(t, func(t *testing.T, now func() time.Time) ora.Debouncer {
		c, name := newTable(t)
		return New(c, name, func(o *Options) { o.Now = now })
	})
}

// TestItemsCarryTTL reads the raw items: what should expire carries the TTL
// attribute in epoch seconds, what should not has none, and bodies are
// string attributes holding the bytes as given.
func TestItemsCarryTTL(t *testing.T) {
	ctx := context.Background()
	c, name := newTable(t)
	now := time.Date(2026, 5, 1, 12, 0, 0, 250_000_000, time.UTC)
	l := New(c, name, func(o *Options) { o.Now = func() time.Time { return now } })
	exp := now.Add(24 * time.Hour)
	body := `{"b": 2, "a": 1}`
	if _, err := l.Append(ctx, ora.Entry{SignalID: "sig-ttl", Kind: ora.KindObservedFact, Qualifier: "job-1", Body: []byte(body), ExpiresAt: &exp}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if _, err := l.Append(ctx, ora.Entry{SignalID: "sig-ttl", Kind: ora.KindFinalVerdict, Body: []byte(`{}`)}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if ok, err := l.Debounce(ctx, "dedup-1", ora.DebounceWindow); err != nil || !ok {
		t.Fatalf("Debounce got %v, %v; want true, nil", ok, err)
	}
	get := func(k map[string]types.AttributeValue) map[string]types.AttributeValue {
		t.Helper()
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: k, ConsistentRead: aws.Bool(true)})
		if err != nil || len(out.Item) == 0 {
			t.Fatalf("GetItem %v: %v (item %v)", k, err, out)
		}
		return out.Item
	}
	cases := []struct {
		name    string
		key     map[string]types.AttributeValue
		wantTTL int64 // 0: no TTL attribute
	}{
		{"entry with expires_at", entryKey("sig-ttl", ora.KindObservedFact, "job-1"), exp.Unix() + 1},
		{"entry without expiry", entryKey("sig-ttl", ora.KindFinalVerdict, ""), 0},
		{"debounce record", debounceKey("dedup-1"), now.Add(ora.DebounceWindow).Unix() + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			item := get(tc.key)
			v, ok := item[AttrTTL].(*types.AttributeValueMemberN)
			if tc.wantTTL == 0 {
				if ok || item[AttrTTL] != nil {
					t.Errorf("item has %s = %v, want none", AttrTTL, item[AttrTTL])
				}
				return
			}
			if !ok {
				t.Fatalf("item has no numeric %s attribute: %v", AttrTTL, item)
			}
			if want := strconv.FormatInt(tc.wantTTL, 10); v.Value != want {
				t.Errorf("%s got %s, want %s", AttrTTL, v.Value, want)
			}
		})
	}
	item := get(entryKey("sig-ttl", ora.KindObservedFact, "job-1"))
	if b, ok := item["body"].(*types.AttributeValueMemberS); !ok || b.Value != body {
		t.Errorf("body attribute got %#v, want the string %q", item["body"], body)
	}
	if got := getS(item, "type"); got != typeEntry {
		t.Errorf("type got %q, want %q", got, typeEntry)
	}
}

// TestDebounceExpiryCheckedInCode checks a debounce record whose window has
// ended is taken over even though TTL has not deleted it yet.
func TestDebounceExpiryCheckedInCode(t *testing.T) {
	ctx := context.Background()
	c, name := newTable(t)
	clock := ledgertest.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	l := New(c, name, func(o *Options) { o.Now = clock.Now })
	if ok, err := l.Debounce(ctx, "k", ora.DebounceWindow); err != nil || !ok {
		t.Fatalf("first Debounce got %v, %v; want true, nil", ok, err)
	}
	clock.Advance(ora.DebounceWindow + time.Millisecond)
	if ok, err := l.Debounce(ctx, "k", ora.DebounceWindow); err != nil || !ok {
		t.Fatalf("Debounce after the window got %v, %v; want true, nil", ok, err)
	}
	// The record still exists (DynamoDB Local never ran TTL): the condition on
	// expires_at is what let the second call through.
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: debounceKey("k"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	got, err := getN(out.Item, "expires_at")
	if err != nil {
		t.Fatalf("expires_at: %v", err)
	}
	if want := clock.Now().Add(ora.DebounceWindow).UnixNano(); got != want {
		t.Errorf("expires_at got %d, want %d (the second window)", got, want)
	}
}
