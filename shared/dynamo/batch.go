package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// DynamoDB's batch limits.
const (
	batchGetMax   = 100
	batchWriteMax = 25
)

// batchAttempts is how many times a batch call is made while DynamoDB hands
// back unprocessed keys or items; batchBackoff is the first wait, doubled
// each try, with full jitter.
const (
	batchAttempts = 8
	batchBackoff  = 25 * time.Millisecond
)

// AppendNew writes each of entries whose identity is not stored yet and
// leaves the stored ones as they are; it returns how many it wrote. It is
// for entries whose content follows from their identity (a fetch job's
// facts). One entry is one PutItem conditional on attribute_not_exists; up
// to transactMax entries of at most transactBytes in all (a fetch batch's
// fact parts, their large bodies already in the body store) are one
// TransactWriteItems, each put conditional on attribute_not_exists: the
// first write of an identity wins, and the puts a cancelled transaction
// names as ConditionalCheckFailed are dropped and the rest tried again. More
// or larger entries take two calls per chunk instead: one BatchGetItem per
// 100 entries (strongly consistent, keys only) finds the stored ones, then
// one BatchWriteItem per 25 writes the rest, with unprocessed keys and items
// retried with jittered backoff; those writes are not conditional, so two
// runs racing on the same identity both write it, the later one last.
// Errors: EINVALID naming the entry (nothing is written), ETRANSIENT (some
// entries may be written: run it again).
func (l *Ledger) AppendNew(ctx context.Context, entries []ora.Entry) (int, error) {
	now := l.now()
	type ident struct {
		kind            ora.EntryKind
		signal, qualify string
	}
	seen := map[ident]bool{}
	var prepared []ora.Entry
	for i, in := range entries {
		e, err := l.prepare(in, now)
		if err != nil {
			return 0, fmt.Errorf("ledger: append entries: [%d] %s %q: %w", i, in.Kind, in.Qualifier, err)
		}
		id := ident{e.Kind, e.SignalID, e.Qualifier}
		if !seen[id] {
			seen[id] = true
			prepared = append(prepared, e)
		}
	}
	// Every size is checked before anything is written, so an entry over
	// the limit leaves the whole batch unwritten.
	prepared, off, zs, facts, err := l.forms(prepared)
	if err != nil {
		return 0, fmt.Errorf("ledger: append entries: %w", err)
	}
	if err := l.putFacts(ctx, facts); err != nil {
		return 0, fmt.Errorf("ledger: append entries: %w", err)
	}
	if n, ok, err := l.appendTransact(ctx, prepared, off, zs); ok || err != nil {
		if err != nil {
			return 0, fmt.Errorf("ledger: append entries: %w", err)
		}
		return n, nil
	}
	stored := map[string]bool{}
	for start := 0; start < len(prepared); start += batchGetMax {
		chunk := prepared[start:min(start+batchGetMax, len(prepared))]
		keys := make([]map[string]types.AttributeValue, len(chunk))
		for i, e := range chunk {
			keys[i] = entryKey(e.SignalID, e.Kind, e.Qualifier)
		}
		if err := l.batchGet(ctx, keys, func(item map[string]types.AttributeValue) {
			stored[getS(item, AttrPK)+"\x00"+getS(item, AttrSK)] = true
		}); err != nil {
			return 0, fmt.Errorf("ledger: append entries: %w", err)
		}
	}
	var writes []types.WriteRequest
	for i, e := range prepared {
		k := entryKey(e.SignalID, e.Kind, e.Qualifier)
		if stored[getS(k, AttrPK)+"\x00"+getS(k, AttrSK)] {
			continue
		}
		if off[i] {
			ref, err := l.offload(ctx, e)
			if err != nil {
				return 0, fmt.Errorf("ledger: append entries: [%d] %s %q: %w", i, e.Kind, e.Qualifier, err)
			}
			e = ref
		}
		writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{Item: entryItemZ(e, l.shards, zs[i])}})
	}
	for start := 0; start < len(writes); start += batchWriteMax {
		if err := l.batchWrite(ctx, writes[start:min(start+batchWriteMax, len(writes))]); err != nil {
			return 0, fmt.Errorf("ledger: append entries: %w", err)
		}
	}
	return len(writes), nil
}

// TransactWriteItems' limits: 100 actions, 4 MB in all (transactBytes
// leaves room for the request's own bytes).
const (
	transactMax   = 100
	transactBytes = 3 << 20
)

// appendTransact writes prepared (off: which bodies go to the body store;
// zs: their deflated bodies, from forms)
// as conditional puts in one transaction, dropping the puts whose identity
// is stored and trying the rest again. ok is false, with nothing done, when
// the entries exceed one transaction's limits.
func (l *Ledger) appendTransact(ctx context.Context, prepared []ora.Entry, off []bool, zs [][]byte) (n int, ok bool, err error) {
	if len(prepared) == 0 || len(prepared) > transactMax {
		return 0, len(prepared) == 0, nil
	}
	items := make([]map[string]types.AttributeValue, 0, len(prepared))
	size := 0
	for i, e := range prepared {
		if off[i] {
			e.Body = nil
		}
		size += ora.EntrySize(e)
		if size > transactBytes {
			return 0, false, nil
		}
	}
	for i, e := range prepared {
		if off[i] {
			ref, err := l.offload(ctx, e)
			if err != nil {
				return 0, true, fmt.Errorf("[%d] %s %q: %w", i, e.Kind, e.Qualifier, err)
			}
			e = ref
		}
		items = append(items, entryItemZ(e, l.shards, zs[i]))
	}
	if len(items) == 1 {
		return l.putNew(ctx, items[0])
	}
	for attempt := 1; ; attempt++ {
		puts := make([]types.TransactWriteItem, len(items))
		for i, item := range items {
			puts[i] = types.TransactWriteItem{Put: &types.Put{
				TableName:                aws.String(l.table),
				Item:                     item,
				ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
			}}
		}
		_, err := l.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: puts})
		if err == nil {
			return len(items), true, nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) || len(tce.CancellationReasons) != len(items) {
			return 0, true, translate(err)
		}
		var left []map[string]types.AttributeValue
		retry := false
		for i, r := range tce.CancellationReasons {
			switch code := aws.ToString(r.Code); {
			case code == reasonConditionalCheckFailed: // stored already: leave it
			case code == reasonNone || code == "":
				left = append(left, items[i])
			case transientReasons[code]:
				left = append(left, items[i])
				retry = true
			default:
				return 0, true, translate(err)
			}
		}
		if len(left) == 0 {
			return 0, true, nil
		}
		if attempt == batchAttempts {
			return 0, true, ora.Transient(err, "%d entries still unwritten after %d TransactWriteItems calls", len(left), attempt)
		}
		if retry {
			if err := backoff(ctx, attempt); err != nil {
				return 0, true, ora.Transient(err, "append entries")
			}
		}
		items = left
	}
}

// putNew writes one item conditional on its being new (a lone entry of
// AppendNew: the same condition as a transaction's put, billed one write
// unit per KB where a transaction bills two). A stored identity is left as
// it is.
func (l *Ledger) putNew(ctx context.Context, item map[string]types.AttributeValue) (int, bool, error) {
	_, err := l.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(l.table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
	})
	if _, _, ok := failedCondition(err); ok {
		return 0, true, nil
	}
	if err != nil {
		return 0, true, translate(err)
	}
	return 1, true, nil
}

// backoff waits before retry attempt (1-based), or returns ctx's error.
func backoff(ctx context.Context, attempt int) error {
	d := batchBackoff << (attempt - 1)
	t := time.NewTimer(time.Duration(rand.Int64N(int64(d)) + 1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// batchGet reads keys (at most 100) by key only, strongly consistent,
// retrying unprocessed keys.
func (l *Ledger) batchGet(ctx context.Context, keys []map[string]types.AttributeValue, found func(map[string]types.AttributeValue)) error {
	return l.batchGetAttrs(ctx, keys, true, []string{AttrPK, AttrSK}, found)
}

// batchGetAttrs reads the attributes attrs of keys (at most 100), retrying
// unprocessed keys.
func (l *Ledger) batchGetAttrs(ctx context.Context, keys []map[string]types.AttributeValue, consistent bool, attrs []string, found func(map[string]types.AttributeValue)) error {
	names := make(map[string]string, len(attrs))
	proj := make([]string, len(attrs))
	for i, a := range attrs {
		proj[i] = "#a" + strconv.Itoa(i)
		names[proj[i]] = a
	}
	req := map[string]types.KeysAndAttributes{l.table: {
		Keys: keys, ConsistentRead: aws.Bool(consistent),
		ProjectionExpression: aws.String(strings.Join(proj, ", ")), ExpressionAttributeNames: names,
	}}
	for attempt := 1; ; attempt++ {
		out, err := l.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return translate(err)
		}
		for _, item := range out.Responses[l.table] {
			found(item)
		}
		if len(out.UnprocessedKeys[l.table].Keys) == 0 {
			return nil
		}
		if attempt == batchAttempts {
			return ora.Transient(nil, "%d keys still unprocessed after %d BatchGetItem calls", len(out.UnprocessedKeys[l.table].Keys), attempt)
		}
		if err := backoff(ctx, attempt); err != nil {
			return ora.Transient(err, "batch get")
		}
		req = out.UnprocessedKeys
	}
}

// batchWrite puts writes (at most 25), retrying unprocessed items.
func (l *Ledger) batchWrite(ctx context.Context, writes []types.WriteRequest) error {
	req := map[string][]types.WriteRequest{l.table: writes}
	for attempt := 1; ; attempt++ {
		out, err := l.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: req})
		if err != nil {
			return translate(err)
		}
		if len(out.UnprocessedItems) == 0 || len(out.UnprocessedItems[l.table]) == 0 {
			return nil
		}
		if attempt == batchAttempts {
			return ora.Transient(nil, "%d items still unprocessed after %d BatchWriteItem calls", len(out.UnprocessedItems[l.table]), attempt)
		}
		if err := backoff(ctx, attempt); err != nil {
			return ora.Transient(err, "batch write")
		}
		req = out.UnprocessedItems
	}
}
