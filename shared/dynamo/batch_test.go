package dynamo

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// BatchWriteItem's UnprocessedItems and BatchGetItem's UnprocessedKeys are
// sent again (with backoff) until none is left; a batch that stays
// unprocessed ends as a transient error. (130 entries: more than one
// transaction takes, so AppendNew batches.)
func TestAppendNewRetriesUnprocessed(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	var entries []ora.Entry
	for i := range 130 {
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
		{name: "all processed at once", wantWritten: 130, wantWrites: 6, wantGets: 2},
		{name: "unprocessed twice", unprocessed: 2, wantWritten: 130, wantWrites: 8, wantGets: 4},
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

// A batch that fits one transaction is one TransactWriteItems of conditional
// puts: puts cancelled as ConditionalCheckFailed (stored already) are
// dropped and the rest sent again; throttled ones are sent again after a
// backoff; one that never goes through is a transient error; any other
// reason is not retried.
func TestAppendNewTransaction(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	var entries []ora.Entry
	for i := range 4 {
		entries = append(entries, ora.Entry{SignalID: "sig-1", Kind: ora.KindObservedFact, Qualifier: fmt.Sprintf("j/facts-%03d", i), Body: []byte(`{}`), CreatedAt: at})
	}
	reasons := func(codes ...string) error {
		var rs []types.CancellationReason
		for _, c := range codes {
			rs = append(rs, types.CancellationReason{Code: aws.String(c)})
		}
		return &types.TransactionCanceledException{CancellationReasons: rs}
	}
	cases := []struct {
		name      string
		answers   []error // one per call; nil: the transaction succeeds
		wantCode  string
		wantN     int
		wantSizes []int // puts per call
	}{
		{"written at once", []error{nil}, "", 4, []int{4}},
		{"two stored already", []error{reasons("None", "ConditionalCheckFailed", "None", "ConditionalCheckFailed"), nil}, "", 2, []int{4, 2}},
		{"all stored already", []error{reasons("ConditionalCheckFailed", "ConditionalCheckFailed", "ConditionalCheckFailed", "ConditionalCheckFailed")}, "", 0, []int{4}},
		{"a conflict, then through", []error{reasons("None", "TransactionConflict", "None", "None"), nil}, "", 4, []int{4, 4}},
		{"a validation error", []error{reasons("None", "ValidationError", "None", "None")}, ora.EINTERNAL, 0, []int{4}},
	}
	always := make([]error, batchAttempts)
	for i := range always {
		always[i] = reasons("ThrottlingError", "None", "None", "None")
	}
	sizes := make([]int, batchAttempts)
	for i := range sizes {
		sizes[i] = 4
	}
	cases = append(cases, struct {
		name      string
		answers   []error
		wantCode  string
		wantN     int
		wantSizes []int
	}{"throttled every time", always, ora.ETRANSIENT, 0, sizes})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			f := &fakeClient{transactWriteItems: func(in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
				got = append(got, len(in.TransactItems))
				for _, ti := range in.TransactItems {
					if ti.Put == nil || aws.ToString(ti.Put.ConditionExpression) != "attribute_not_exists(#pk)" {
						t.Fatalf("an unconditional put: %+v", ti)
					}
				}
				if len(got) > len(tc.answers) {
					t.Fatalf("call %d, want %d calls", len(got), len(tc.answers))
				}
				if err := tc.answers[len(got)-1]; err != nil {
					return nil, err
				}
				return &dynamodb.TransactWriteItemsOutput{}, nil
			}}
			n, err := New(f, "t").AppendNew(context.Background(), entries)
			if ora.ErrorCode(err) != tc.wantCode {
				t.Fatalf("AppendNew: %v, want code %q", err, tc.wantCode)
			}
			if err == nil && n != tc.wantN {
				t.Errorf("written %d, want %d", n, tc.wantN)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantSizes) {
				t.Errorf("puts per call %v, want %v", got, tc.wantSizes)
			}
		})
	}
}
