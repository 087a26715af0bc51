package dynamo

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/idempotency"
	"github.com/ora-runtime/ora/shared/idempotency/idempotencytest"
	"github.com/ora-runtime/ora/shared/ora"
)

// newIdempotencyStore creates a fresh idempotency table in DynamoDB Local.
func newIdempotencyStore(tb testing.TB) (*IdempotencyStore, *dynamodb.Client, string) {
	tb.Helper()
	client := dynamotest.Client(tb)
	name := dynamotest.TableName("idempotency")
	if err := CreateIdempotencyTable(context.Background(), client, name); err != nil {
		tb.Fatalf("CreateIdempotencyTable: %v", err)
	}
	return NewIdempotencyStore(client, name), client, name
}

func TestIdempotencyContract(t *testing.T) {
	idempotencytest.Run(t, func(t *testing.T) ora.IdempotencyStore {
		s, _, _ := newIdempotencyStore(t)
		return s
	})
}

func TestCreateIdempotencyTable(t *testing.T) {
	ctx := context.Background()
	_, client, name := newIdempotencyStore(t)

	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	ks := desc.Table.KeySchema
	if len(ks) != 1 || aws.ToString(ks[0].AttributeName) != "id" || ks[0].KeyType != types.KeyTypeHash {
		t.Fatalf("key schema = %+v, want the partition key id alone", ks)
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if got := ttl.TimeToLiveDescription; got.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(got.AttributeName) != "expiration" {
		t.Fatalf("TTL = %s on %q, want ENABLED on \"expiration\"", got.TimeToLiveStatus, aws.ToString(got.AttributeName))
	}
	err = CreateIdempotencyTable(ctx, client, name)
	if ora.ErrorCode(err) != ora.ECONFLICT {
		t.Fatalf("creating it again: %v, want ECONFLICT", err)
	}
}

// TestIdempotencyItemLayout checks the attributes Powertools' layout names, as
// another reader of the table (or the TTL sweeper) sees them.
func TestIdempotencyItemLayout(t *testing.T) {
	ctx := context.Background()
	s, client, name := newIdempotencyStore(t)
	now := time.Unix(1_800_000_000, 0)
	lock := ora.IdempotencyRecord{Key: "k", PayloadHash: "h", ExpiresAt: now.Add(time.Hour + 300*time.Millisecond),
		InProgressExpiresAt: now.Add(30*time.Second + 1500*time.Microsecond)}
	if err := s.PutInProgress(ctx, lock, now); err != nil {
		t.Fatal(err)
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "k"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"id": "k", "status": "INPROGRESS", "validation": "h",
		"expiration":             "1800003601",    // seconds, rounded up
		"in_progress_expiration": "1800000030002", // milliseconds, rounded up
	}
	for attr, v := range want {
		var got string
		switch av := out.Item[attr].(type) {
		case *types.AttributeValueMemberS:
			got = av.Value
		case *types.AttributeValueMemberN:
			got = av.Value
		}
		if got != v {
			t.Errorf("attribute %s = %q, want %q", attr, got, v)
		}
	}
	if _, ok := out.Item["data"]; ok {
		t.Errorf("a lock has a data attribute: %v", out.Item["data"])
	}
}

// idemFakeClient answers every call with the function set for it.
type idemFakeClient struct {
	Client
	putItem    func(context.Context, *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error)
	getItem    func(context.Context, *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
	deleteItem func(context.Context, *dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error)
}

func (f *idemFakeClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return f.putItem(ctx, in)
}

func (f *idemFakeClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return f.getItem(ctx, in)
}

func (f *idemFakeClient) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return f.deleteItem(ctx, in)
}

func TestIdempotencyErrorTranslation(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	lock := ora.IdempotencyRecord{Key: "k", PayloadHash: "h", ExpiresAt: now.Add(time.Hour), InProgressExpiresAt: now.Add(time.Minute)}
	for _, tc := range []struct {
		name string
		err  error
		code string
	}{
		{"provisioned throughput exceeded", &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}, ora.ETRANSIENT},
		{"request limit exceeded", &types.RequestLimitExceeded{Message: aws.String("slow down")}, ora.ETRANSIENT},
		{"throttling exception", &types.ThrottlingException{Message: aws.String("slow down")}, ora.ETRANSIENT},
		{"throttling by error code", &smithy.GenericAPIError{Code: "ThrottlingException"}, ora.ETRANSIENT},
		{"internal server error", &types.InternalServerError{Message: aws.String("oops")}, ora.ETRANSIENT},
		{"transaction conflict", &types.TransactionConflictException{Message: aws.String("busy")}, ora.ETRANSIENT},
		{"deadline", fmt.Errorf("operation error: %w", context.DeadlineExceeded), ora.ETRANSIENT},
		{"missing table", &types.ResourceNotFoundException{Message: aws.String("no table")}, ora.EINTERNAL},
		{"conditional check failed without the item", &types.ConditionalCheckFailedException{}, ora.ECONFLICT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &idemFakeClient{
				putItem: func(context.Context, *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) { return nil, tc.err },
				getItem: func(context.Context, *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) { return nil, tc.err },
				deleteItem: func(context.Context, *dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error) {
					return nil, tc.err
				},
			}
			s := NewIdempotencyStore(f, "t")
			err := s.PutInProgress(ctx, lock, now)
			if got := ora.ErrorCode(err); got != tc.code {
				t.Fatalf("PutInProgress: %v (code %q), want %q", err, got, tc.code)
			}
			if tc.code == ora.ECONFLICT {
				return
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("PutInProgress: %v does not wrap %v", err, tc.err)
			}
			if _, err := s.Get(ctx, "k"); ora.ErrorCode(err) != tc.code {
				t.Fatalf("Get: %v, want %q", err, tc.code)
			}
			if err := s.Delete(ctx, "k"); ora.ErrorCode(err) != tc.code {
				t.Fatalf("Delete: %v, want %q", err, tc.code)
			}
		})
	}
}

func TestIdempotencyMalformedItem(t *testing.T) {
	f := &idemFakeClient{getItem: func(context.Context, *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
		return &dynamodb.GetItemOutput{Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: "k"}, "status": &types.AttributeValueMemberS{Value: "COMPLETED"},
			"validation": &types.AttributeValueMemberS{Value: "h"}, "expiration": &types.AttributeValueMemberS{Value: "soon"},
		}}, nil
	}}
	_, err := NewIdempotencyStore(f, "t").Get(context.Background(), "k")
	if ora.ErrorCode(err) != ora.EINTERNAL || err == nil {
		t.Fatalf("Get of an item whose expiration is a string: %v, want EINTERNAL", err)
	}
}

func BenchmarkIdempotentCall(b *testing.B) {
	store, _, _ := newIdempotencyStore(b)
	idem := idempotency.New(store)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	fn := func(context.Context) (int, error) { return 42, nil }
	b.Run("first", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := idempotency.Do(ctx, idem, fmt.Sprintf("first-%d", i), i, fn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("duplicate", func(b *testing.B) {
		if _, err := idempotency.Do(ctx, idem, "dup", 0, fn); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := idempotency.Do(ctx, idem, "dup", 0, fn); err != nil {
				b.Fatal(err)
			}
		}
	})
}
