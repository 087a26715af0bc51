package dynamo

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	orareason "github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/reason/reasontest"
)

var (
	_ orareason.PatternCache = (*Patterns)(nil)
	_ orareason.SpendMeter   = (*Spend)(nil)
)

// patternsLedger creates a fresh ledger table and returns a Ledger on it.
func patternsLedger(t *testing.T, clock *reasontest.Clock) *Ledger {
	t.Helper()
	c := dynamotest.Client(t)
	name := dynamotest.TableName("patterns")
	if err := CreateLedgerTable(context.Background(), c, name); err != nil {
		t.Fatalf("CreateLedgerTable: %v", err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return New(c, name, func(o *Options) {
		if clock != nil {
			o.Now = clock.Now
		}
	})
}

func TestPatternCacheContract(t *testing.T) {
	reasontest.RunPatternCache(t, func(t *testing.T, clock *reasontest.Clock) orareason.PatternCache {
		return patternsLedger(t, clock).Patterns()
	})
}

func TestSpendMeterContract(t *testing.T) {
	reasontest.RunSpendMeter(t, func(t *testing.T) orareason.SpendMeter {
		return patternsLedger(t, nil).Spend()
	})
}

func TestPatternItemLayout(t *testing.T) {
	l := patternsLedger(t, nil)
	ctx := context.Background()
	if err := l.Patterns().Put(ctx, "fp", "m", []byte(`{}`), 3600e9); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Spend().Add(ctx, "2026-11-22", 0.5); err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct{ pk, sk, typ string }{{"PAT#fp", "PATTERN", "pattern"}, {"SPEND#2026-11-22", "SPEND", "spend"}} {
		out, err := l.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(l.table), Key: key(k.pk, k.sk), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if getS(out.Item, "type") != k.typ {
			t.Errorf("%s: type = %q, want %q", k.pk, getS(out.Item, "type"), k.typ)
		}
		if ttl, _ := getN(out.Item, AttrTTL); ttl == 0 {
			t.Errorf("%s: no ttl attribute", k.pk)
		}
	}
}
