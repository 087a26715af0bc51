package dynamo

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// BatchWriteItem's UnprocessedItems and BatchGetItem's UnprocessedKeys are
// sent again (with backoff) until none is left; a batch that stays
// unprocessed ends as a transient error.
func TestAppendNewRetriesUnprocessed(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	var entries []ora.Entry
	for i := range 30 {
		entries = append(entries, ora.Entry{SignalID: "sig-1", Kind: ora.KindObservedFact, Qualifier: fmt.Sprintf("j/%05d", i), Body: []byte(`{}`), CreatedAt: at})
	}
	cases := []struct {
		name         string
		unprocessed  int // calls that hand back one unprocessed item / key
		wantCode     string
		wantWritten  int
		wantWrites   int
		wantGets     int
		neverProcess bool
	}{
		{name: "all processed at once", wantWritten: 30, wantWrites: 2, wantGets: 1},
		{name: "unprocessed twice", unprocessed: 2, wantWritten: 30, wantWrites: 4, wantGets: 3},
		{name: "never processed", neverProcess: true, wantCode: ora.ETRANSIENT, wantGets: batchAttempts},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var writes, gets, put int
			leftGet, leftWrite := tc.unprocessed, tc.unprocessed
			f := &fakeClient{
				batchGetItem: func(in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
					gets++
					keys := in.RequestItems["t"].Keys
					if tc.neverProcess || leftGet > 0 {
						leftGet--
						return &dynamodb.BatchGetItemOutput{UnprocessedKeys: map[string]types.KeysAndAttributes{"t": {Keys: keys[:1]}}}, nil
					}
					return &dynamodb.BatchGetItemOutput{}, nil
				},
				batchWriteItem: func(in *dynamodb.BatchWriteItemInput) (*dynamodb.BatchWriteItemOutput, error) {
					writes++
					req := in.RequestItems["t"]
					if len(req) > batchWriteMax {
						t.Fatalf("a BatchWriteItem of %d items", len(req))
					}
					for _, w := range req {
						if _, ok := w.PutRequest.Item[AttrGSI1PK]; ok {
							t.Errorf("a fact carries index keys")
						}
					}
					if leftWrite > 0 {
						leftWrite--
						put += len(req) - 1
						return &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{"t": req[:1]}}, nil
					}
					put += len(req)
					return &dynamodb.BatchWriteItemOutput{}, nil
				},
			}
			n, err := New(f, "t").AppendNew(context.Background(), entries)
			if ora.ErrorCode(err) != tc.wantCode {
				t.Fatalf("AppendNew: %v, want code %q", err, tc.wantCode)
			}
			if err == nil && (n != tc.wantWritten || put != tc.wantWritten) {
				t.Errorf("written %d (put %d), want %d", n, put, tc.wantWritten)
			}
			if writes != tc.wantWrites || gets != tc.wantGets {
				t.Errorf("BatchWriteItem calls %d, BatchGetItem calls %d; want %d, %d", writes, gets, tc.wantWrites, tc.wantGets)
			}
		})
	}
}

// Only the kinds queried by kind carry index keys, spread over the shards.
func TestIndexKeysOnlyOnRecentKinds(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	shards := map[string]bool{}
	for _, k := range ora.EntryKinds {
		for i := range 64 {
			item := entryItemSharded(ora.Entry{SignalID: fmt.Sprintf("sig-%d", i), Kind: k, Body: []byte(`{}`), CreatedAt: at}, DefaultRecentShards)
			pk, has := item[AttrGSI1PK]
			if has != k.Indexed() {
				t.Fatalf("%s: index keys %v, want %v", k, has, k.Indexed())
			}
			if has {
				shards[pk.(*types.AttributeValueMemberS).Value] = true
			}
		}
	}
	if want := len(ora.RecentKinds) * DefaultRecentShards; len(shards) != want {
		t.Errorf("index partitions used: %d, want %d (every kind on every shard)", len(shards), want)
	}
}
