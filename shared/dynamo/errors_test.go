package dynamo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/ora-runtime/ora/shared/ora"
)

// fakeClient is a Client whose calls run the function fields; a call with no
// function set fails.
type fakeClient struct {
	getItem            func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
	putItem            func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error)
	updateItem         func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error)
	query              func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error)
	transactWriteItems func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error)
	batchGetItem       func(*dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error)
	batchWriteItem     func(*dynamodb.BatchWriteItemInput) (*dynamodb.BatchWriteItemOutput, error)
}

func (f *fakeClient) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	if f.batchGetItem == nil {
		return nil, errUnexpectedCall
	}
	return f.batchGetItem(in)
}

func (f *fakeClient) BatchWriteItem(_ context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	if f.batchWriteItem == nil {
		return nil, errUnexpectedCall
	}
	return f.batchWriteItem(in)
}

var errUnexpectedCall = errors.New("fake: unexpected call")

func (f *fakeClient) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if f.getItem == nil {
		return nil, errUnexpectedCall
	}
	return f.getItem(in)
}

func (f *fakeClient) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if f.putItem == nil {
		return nil, errUnexpectedCall
	}
	return f.putItem(in)
}

func (f *fakeClient) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.updateItem == nil {
		return nil, errUnexpectedCall
	}
	return f.updateItem(in)
}

func (f *fakeClient) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, errUnexpectedCall
}

func (f *fakeClient) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if f.query == nil {
		return nil, errUnexpectedCall
	}
	return f.query(in)
}

func (f *fakeClient) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if f.transactWriteItems == nil {
		return nil, errUnexpectedCall
	}
	return f.transactWriteItems(in)
}

func (f *fakeClient) CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	return nil, errUnexpectedCall
}

func (f *fakeClient) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return nil, errUnexpectedCall
}

func (f *fakeClient) UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	return nil, errUnexpectedCall
}

// timeoutError is a net.Error that timed out, as a dial or read deadline gives.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func reason(code string) types.CancellationReason {
	return types.CancellationReason{Code: aws.String(code)}
}

func TestTranslate(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"throttling exception", &types.ThrottlingException{Message: aws.String("slow down")}, ora.ETRANSIENT},
		{"provisioned throughput exceeded", &types.ProvisionedThroughputExceededException{}, ora.ETRANSIENT},
		{"request limit exceeded", &types.RequestLimitExceeded{}, ora.ETRANSIENT},
		{"internal server error", &types.InternalServerError{}, ora.ETRANSIENT},
		{"throttle after the SDK's retries", &retry.MaxAttemptsError{Attempt: 3, Err: &types.ThrottlingException{}}, ora.ETRANSIENT},
		{"generic throttling code", &smithy.GenericAPIError{Code: "ThrottlingException"}, ora.ETRANSIENT},
		{"server fault", &smithy.GenericAPIError{Code: "ServiceUnavailable", Fault: smithy.FaultServer}, ora.ETRANSIENT},
		{"HTTP 503", &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 503}}, Err: errors.New("unavailable")}, ora.ETRANSIENT},
		{"context deadline", fmt.Errorf("operation error DynamoDB: PutItem: %w", context.DeadlineExceeded), ora.ETRANSIENT},
		{"network timeout", fmt.Errorf("send request: %w", timeoutError{}), ora.ETRANSIENT},
		{"transaction conflict", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{reason("None"), reason("TransactionConflict")}}, ora.ETRANSIENT},
		{"transaction throttled", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{reason("ThrottlingError"), reason("None")}}, ora.ETRANSIENT},
		{"conditional check failed", &types.ConditionalCheckFailedException{}, ora.ECONFLICT},
		{"transaction condition failed", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{reason("None"), reason("ConditionalCheckFailed")}}, ora.ECONFLICT},
		{"transaction validation error", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{reason("ValidationError")}}, ora.EINTERNAL},
		{"HTTP 400", &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 400}}, Err: errors.New("bad")}, ora.EINTERNAL},
		{"missing table", &types.ResourceNotFoundException{}, ora.EINTERNAL},
		{"context canceled", context.Canceled, ora.EINTERNAL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := translate(tc.err)
			if got := ora.ErrorCode(err); got != tc.want {
				t.Errorf("code got %q (%v), want %q", got, err, tc.want)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("translated error %v does not wrap the SDK error", err)
			}
		})
	}
}

// TestLedgerErrorsFromTheSDK drives each operation through a fake client that
// answers with the SDK's typed errors.
func TestLedgerErrorsFromTheSDK(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	stored := ora.Entry{SignalID: "sig-1", Kind: ora.KindObservedFact, Qualifier: "job-1", Body: []byte(`{"first":true}`), Digest: ora.Digest([]byte(`{"first":true}`)), CreatedAt: at}
	entryConflict := &types.ConditionalCheckFailedException{Item: entryItem(stored)}
	throttle := &types.ThrottlingException{Message: aws.String("Throughput exceeds the current capacity")}
	storedState := ora.DecisionState{DecisionID: "dec-1", SignalID: "sig-1", Status: ora.StatusExecuting, Digest: "abc", Version: 2, UpdatedAt: at}
	dec := ora.ReasonerDecision{ID: "dec-1", SignalID: "sig-1", ActionType: "comment", Confidence: 0.9, AuthorType: ora.AuthorArchitect,
		Scope: ora.Scope{AllowedOperations: []string{"comment"}}, Tier: 1, Timestamp: at}
	newEntry := ora.Entry{SignalID: "sig-1", Kind: ora.KindObservedFact, Qualifier: "job-1", Body: []byte(`{"second":true}`), CreatedAt: at}

	cases := []struct {
		name  string
		fake  fakeClient
		call  func(*Ledger) error
		code  string
		check func(t *testing.T, err error)
	}{
		{
			name: "append throttled",
			fake: fakeClient{putItem: func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) { return nil, throttle }},
			call: func(l *Ledger) error { _, err := l.Append(ctx, newEntry); return err },
			code: ora.ETRANSIENT,
		},
		{
			name: "append timed out",
			fake: fakeClient{putItem: func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
				return nil, fmt.Errorf("operation error: %w", context.DeadlineExceeded)
			}},
			call: func(l *Ledger) error { _, err := l.Append(ctx, newEntry); return err },
			code: ora.ETRANSIENT,
		},
		{
			name: "append conditional check failed",
			fake: fakeClient{putItem: func(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
				if in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
					return nil, errors.New("ReturnValuesOnConditionCheckFailure is not ALL_OLD")
				}
				return nil, entryConflict
			}},
			call: func(l *Ledger) error { _, err := l.Append(ctx, newEntry); return err },
			code: ora.ECONFLICT,
			check: func(t *testing.T, err error) {
				got, ok := ora.Existing[ora.Entry](err)
				if !ok || string(got.Body) != string(stored.Body) || !got.CreatedAt.Equal(at) {
					t.Errorf("carried entry got %+v (ok %v), want %+v", got, ok, stored)
				}
			},
		},
		{
			name: "record decision: entry exists",
			fake: fakeClient{transactWriteItems: func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
				return nil, &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
					{Code: aws.String("ConditionalCheckFailed"), Item: entryItem(stored)}, reason("None"),
				}}
			}},
			call: func(l *Ledger) error { _, err := l.RecordDecision(ctx, dec); return err },
			code: ora.ECONFLICT,
			check: func(t *testing.T, err error) {
				if got, ok := ora.Existing[ora.Entry](err); !ok || got.Digest != stored.Digest {
					t.Errorf("carried entry got %+v (ok %v), want %+v", got, ok, stored)
				}
			},
		},
		{
			name: "record decision: status record exists",
			fake: fakeClient{transactWriteItems: func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
				return nil, &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
					reason("None"), {Code: aws.String("ConditionalCheckFailed"), Item: decisionItem(storedState)},
				}}
			}},
			call: func(l *Ledger) error { _, err := l.RecordDecision(ctx, dec); return err },
			code: ora.ECONFLICT,
			check: func(t *testing.T, err error) {
				if got, ok := ora.Existing[ora.DecisionState](err); !ok || got != storedState {
					t.Errorf("carried state got %+v (ok %v), want %+v", got, ok, storedState)
				}
			},
		},
		{
			name: "record decision: transaction conflict",
			fake: fakeClient{transactWriteItems: func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
				return nil, &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{reason("TransactionConflict"), reason("None")}}
			}},
			call: func(l *Ledger) error { _, err := l.RecordDecision(ctx, dec); return err },
			code: ora.ETRANSIENT,
		},
		{
			name: "transition throttled",
			fake: fakeClient{updateItem: func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
				return nil, &types.ProvisionedThroughputExceededException{}
			}},
			call: func(l *Ledger) error {
				_, err := l.TransitionDecision(ctx, "dec-1", ora.StatusDecided, ora.StatusExecuting, "")
				return err
			},
			code: ora.ETRANSIENT,
		},
		{
			name: "transition lost the race",
			fake: fakeClient{updateItem: func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
				return nil, &types.ConditionalCheckFailedException{Item: decisionItem(storedState)}
			}},
			call: func(l *Ledger) error {
				_, err := l.TransitionDecision(ctx, "dec-1", ora.StatusDecided, ora.StatusExecuting, "")
				return err
			},
			code: ora.ECONFLICT,
			check: func(t *testing.T, err error) {
				if got, ok := ora.Existing[ora.DecisionState](err); !ok || got != storedState {
					t.Errorf("carried state got %+v (ok %v), want %+v", got, ok, storedState)
				}
			},
		},
		{
			name: "transition of a missing decision",
			fake: fakeClient{updateItem: func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
				return nil, &types.ConditionalCheckFailedException{}
			}},
			call: func(l *Ledger) error {
				_, err := l.TransitionDecision(ctx, "dec-1", ora.StatusDecided, ora.StatusExecuting, "")
				return err
			},
			code: ora.ENOTFOUND,
		},
		{
			name: "entries: server error",
			fake: fakeClient{query: func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error) { return nil, &types.InternalServerError{} }},
			call: func(l *Ledger) error { _, err := l.Entries(ctx, "sig-1"); return err },
			code: ora.ETRANSIENT,
		},
		{
			name: "recent: request limit",
			fake: fakeClient{query: func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error) { return nil, &types.RequestLimitExceeded{} }},
			call: func(l *Ledger) error {
				_, err := l.Recent(ctx, ora.KindExecutionEvidence, at, at.Add(time.Hour), 0)
				return err
			},
			code: ora.ETRANSIENT,
		},
		{
			name: "decision: throttled",
			fake: fakeClient{getItem: func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) { return nil, throttle }},
			call: func(l *Ledger) error { _, err := l.Decision(ctx, "dec-1"); return err },
			code: ora.ETRANSIENT,
		},
		{
			name: "debounce throttled",
			fake: fakeClient{putItem: func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) { return nil, throttle }},
			call: func(l *Ledger) error { _, err := l.Debounce(ctx, "k", ora.DebounceWindow); return err },
			code: ora.ETRANSIENT,
		},
		{
			name: "close commitment throttled",
			fake: fakeClient{updateItem: func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, throttle }},
			call: func(l *Ledger) error { _, err := l.CloseCommitment(ctx, "com-1", "actor"); return err },
			code: ora.ETRANSIENT,
		},
		{
			name: "entry that is not UTF-8 never reaches the client",
			fake: fakeClient{},
			call: func(l *Ledger) error {
				_, err := l.Append(ctx, ora.Entry{SignalID: "sig-1", Kind: ora.KindObservedFact, Body: []byte("{\"s\":\"\xff\"}"), CreatedAt: at})
				return err
			},
			code: ora.EINVALID,
			check: func(t *testing.T, err error) {
				if got := ora.ErrorField(err); got != "body" || !strings.Contains(err.Error(), "UTF-8") {
					t.Errorf("got field %q (%v), want body, must be UTF-8", got, err)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := tc.fake
			err := tc.call(New(&fake, "ledger", func(o *Options) { o.Now = func() time.Time { return at } }))
			if got := ora.ErrorCode(err); got != tc.code {
				t.Fatalf("code got %q (%v), want %q", got, err, tc.code)
			}
			if tc.check != nil {
				tc.check(t, err)
			}
		})
	}
}

// TestDebounceLoserIsNotAnError checks a failed debounce condition is a
// repeat (false), not an error.
func TestDebounceLoserIsNotAnError(t *testing.T) {
	var cond string
	fake := &fakeClient{putItem: func(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
		cond = aws.ToString(in.ConditionExpression)
		return nil, &types.ConditionalCheckFailedException{}
	}}
	ok, err := New(fake, "ledger").Debounce(context.Background(), "k", ora.DebounceWindow)
	if err != nil || ok {
		t.Errorf("Debounce got %v, %v; want false, nil", ok, err)
	}
	if want := "attribute_not_exists(#pk) OR #exp < :now"; cond != want {
		t.Errorf("condition got %q, want %q", cond, want)
	}
}
