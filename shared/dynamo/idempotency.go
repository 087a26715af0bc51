package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// The attributes of an idempotency item, named as Powertools for AWS Lambda
// names them, in a table of their own keyed by "id":
//
//	id                      S  the key (partition key)
//	status                  S  INPROGRESS | COMPLETED
//	validation              S  sha256 of the payload's canonical JSON
//	data                    B  the JSON response (COMPLETED only)
//	expiration              N  epoch seconds, rounded up: the TTL attribute
//	in_progress_expiration  N  epoch milliseconds, rounded up (INPROGRESS only)
//
// The expiry is checked in code through the put's condition; TTL only cleans
// up. ExpiresAt therefore has second granularity and InProgressExpiresAt
// millisecond granularity, each rounded up.
const (
	idemKeyAttr        = "id"
	idemStatusAttr     = "status"
	idemHashAttr       = "validation"
	idemDataAttr       = "data"
	idemExpiryAttr     = "expiration"
	idemInProgressAttr = "in_progress_expiration"
)

// IdempotencyStore keeps ora.IdempotencyRecords in a DynamoDB table of their
// own (see CreateIdempotencyTable).
type IdempotencyStore struct {
	client Client
	table  string
}

var _ ora.IdempotencyStore = (*IdempotencyStore)(nil)

// NewIdempotencyStore returns a store over the idempotency table named table.
func NewIdempotencyStore(client Client, table string) *IdempotencyStore {
	return &IdempotencyStore{client: client, table: table}
}

// CreateIdempotencyTable creates an idempotency table: partition key "id"
// (string), on-demand billing, TTL on "expiration". It waits for the table to
// be active. ECONFLICT when a table of that name exists; ETRANSIENT when
// throttled.
func CreateIdempotencyTable(ctx context.Context, client Client, name string) error {
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(idemKeyAttr), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(idemKeyAttr), KeyType: types.KeyTypeHash}},
	})
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) {
		return ora.Conflict(nil, "dynamo: create idempotency table %s: it exists", name)
	}
	if err != nil {
		return idemErr("create table", name, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 500 * time.Millisecond
		o.MaxDelay = 5 * time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute); err != nil {
		return idemErr("wait for table", name, err)
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(idemExpiryAttr),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return idemErr("enable TTL on", name, err)
	}
	return nil
}

// PutInProgress writes rec as INPROGRESS with one conditional PutItem:
//
//	attribute_not_exists(id) OR expiration <= :now
//	OR (status = INPROGRESS AND in_progress_expiration <= :now_ms)
//
// When the condition fails, the item found comes back with the failure
// (ReturnValuesOnConditionCheckFailure ALL_OLD) and is returned in an ECONFLICT
// error: a duplicate costs one round trip.
func (s *IdempotencyStore) PutInProgress(ctx context.Context, rec ora.IdempotencyRecord, now time.Time) error {
	if err := checkIdemRecord(rec, ora.IdempotencyInProgress); err != nil {
		return err
	}
	rec.Status = ora.IdempotencyInProgress
	rec.Response = nil
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                idemItem(rec),
		ConditionExpression: aws.String("attribute_not_exists(#id) OR #exp <= :now OR (#status = :inprogress AND #ipexp <= :now_ms)"),
		ExpressionAttributeNames: map[string]string{
			"#id": idemKeyAttr, "#exp": idemExpiryAttr, "#status": idemStatusAttr, "#ipexp": idemInProgressAttr,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":        idemNumber(now.Unix()),
			":now_ms":     idemNumber(now.UnixMilli()),
			":inprogress": &types.AttributeValueMemberS{Value: string(ora.IdempotencyInProgress)},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if len(ccf.Item) == 0 {
			return ora.Conflict(nil, "idempotency record %s exists", rec.Key)
		}
		existing, derr := idemRecord(ccf.Item)
		if derr != nil {
			return fmt.Errorf("dynamo: idempotency lock %s: %w", rec.Key, derr)
		}
		return ora.Conflict(existing, "idempotency record %s exists (%s)", rec.Key, existing.Status)
	}
	if err != nil {
		return idemErr("lock", rec.Key, err)
	}
	return nil
}

// Complete replaces the item with rec as COMPLETED (an unconditional PutItem,
// as Powertools' save_success).
func (s *IdempotencyStore) Complete(ctx context.Context, rec ora.IdempotencyRecord) error {
	if err := checkIdemRecord(rec, ora.IdempotencyCompleted); err != nil {
		return err
	}
	rec.Status = ora.IdempotencyCompleted
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: idemItem(rec)})
	if err != nil {
		return idemErr("complete", rec.Key, err)
	}
	return nil
}

// Delete removes the item for key.
func (s *IdempotencyStore) Delete(ctx context.Context, key string) error {
	if key == "" {
		return ora.Invalid("key", "idempotency key is empty")
	}
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table),
		Key:       map[string]types.AttributeValue{idemKeyAttr: &types.AttributeValueMemberS{Value: key}},
	})
	if err != nil {
		return idemErr("delete", key, err)
	}
	return nil
}

// Get reads the item for key with a strongly consistent read.
func (s *IdempotencyStore) Get(ctx context.Context, key string) (ora.IdempotencyRecord, error) {
	if key == "" {
		return ora.IdempotencyRecord{}, ora.Invalid("key", "idempotency key is empty")
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            map[string]types.AttributeValue{idemKeyAttr: &types.AttributeValueMemberS{Value: key}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return ora.IdempotencyRecord{}, idemErr("get", key, err)
	}
	if len(out.Item) == 0 {
		return ora.IdempotencyRecord{}, ora.Errorf(ora.ENOTFOUND, "idempotency record %s not found", key)
	}
	rec, err := idemRecord(out.Item)
	if err != nil {
		return ora.IdempotencyRecord{}, fmt.Errorf("dynamo: idempotency get %s: %w", key, err)
	}
	return rec, nil
}

// checkIdemRecord validates a record before a write: a key, the status the
// write stores (or none), an expiry, and for a lock its in-progress expiry.
func checkIdemRecord(rec ora.IdempotencyRecord, status ora.IdempotencyStatus) error {
	switch {
	case rec.Key == "":
		return ora.Invalid("key", "idempotency key is empty")
	case rec.Status != "" && rec.Status != status:
		return ora.Invalid("status", "is %q, want %q", rec.Status, status)
	case rec.ExpiresAt.IsZero():
		return ora.Invalid("expires_at", "is not set")
	case status == ora.IdempotencyInProgress && rec.InProgressExpiresAt.IsZero():
		return ora.Invalid("in_progress_expires_at", "is not set")
	}
	return nil
}

func idemItem(rec ora.IdempotencyRecord) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		idemKeyAttr:    &types.AttributeValueMemberS{Value: rec.Key},
		idemStatusAttr: &types.AttributeValueMemberS{Value: string(rec.Status)},
		idemHashAttr:   &types.AttributeValueMemberS{Value: rec.PayloadHash},
		idemExpiryAttr: idemNumber(ceilUnit(rec.ExpiresAt, time.Second)),
	}
	if len(rec.Response) > 0 {
		item[idemDataAttr] = &types.AttributeValueMemberB{Value: rec.Response}
	}
	if !rec.InProgressExpiresAt.IsZero() {
		item[idemInProgressAttr] = idemNumber(ceilUnit(rec.InProgressExpiresAt, time.Millisecond))
	}
	return item
}

func idemRecord(item map[string]types.AttributeValue) (ora.IdempotencyRecord, error) {
	var rec ora.IdempotencyRecord
	str := func(name string) (string, error) {
		v, ok := item[name].(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("item attribute %s: missing or not a string", name)
		}
		return v.Value, nil
	}
	num := func(name string) (int64, bool, error) {
		av, present := item[name]
		if !present {
			return 0, false, nil
		}
		v, ok := av.(*types.AttributeValueMemberN)
		if !ok {
			return 0, false, fmt.Errorf("item attribute %s: not a number", name)
		}
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("item attribute %s: %w", name, err)
		}
		return n, true, nil
	}
	var err error
	if rec.Key, err = str(idemKeyAttr); err != nil {
		return rec, err
	}
	status, err := str(idemStatusAttr)
	if err != nil {
		return rec, err
	}
	rec.Status = ora.IdempotencyStatus(status)
	if rec.PayloadHash, err = str(idemHashAttr); err != nil {
		return rec, err
	}
	if b, ok := item[idemDataAttr].(*types.AttributeValueMemberB); ok {
		rec.Response = b.Value
	}
	exp, ok, err := num(idemExpiryAttr)
	if err != nil {
		return rec, err
	}
	if !ok {
		return rec, fmt.Errorf("item attribute %s: missing", idemExpiryAttr)
	}
	rec.ExpiresAt = time.Unix(exp, 0).UTC()
	ip, ok, err := num(idemInProgressAttr)
	if err != nil {
		return rec, err
	}
	if ok {
		rec.InProgressExpiresAt = time.UnixMilli(ip).UTC()
	}
	return rec, nil
}

func idemNumber(n int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// ceilUnit returns t in whole units since the epoch, rounded up, so a stored
// expiry is never earlier than the one asked for.
func ceilUnit(t time.Time, unit time.Duration) int64 {
	n := t.UnixNano()
	u := int64(unit)
	q := n / u
	if n%u > 0 {
		q++
	}
	return q
}

// idemErr wraps an SDK error with context, as ETRANSIENT when isTransient
// (errors.go) says a retry may get past it: throttling, a server error, a
// timeout.
func idemErr(op, key string, err error) error {
	if isTransient(err) {
		return ora.Transient(err, "dynamo: idempotency %s %s: retry later", op, key)
	}
	return fmt.Errorf("dynamo: idempotency %s %s: %w", op, key, err)
}
