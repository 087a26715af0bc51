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

	"github.com/ora-runtime/ora/shared/ora"
)

// itemSize is an item's size by DynamoDB's rules: each attribute's name
// plus its value; a string is its UTF-8 bytes, a number at most 21 bytes,
// a map 3 bytes plus, per element, its name, its value and 1 byte.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return 21
	case *types.AttributeValueMemberM:
		n := 3
		for name, x := range v.Value {
			n += len(name) + valueSize(x) + 1
		}
		return n
	}
	panic(fmt.Sprintf("itemSize: %T", v))
}

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
