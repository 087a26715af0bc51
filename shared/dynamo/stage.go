package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// Commit writes a stage's entries and transitions in one TransactWriteItems;
// see ora.Ledger. Each entry is a put conditional on attribute_not_exists,
// each transition an update conditional on the expected old status, so
// DynamoDB applies all of them or none. A stage over 100 writes or
// ora.MaxStageBytes is refused (EINVALID), never split. Bodies that go to
// the body store are written first: a stage that then fails leaves only
// content-addressed bodies no entry refers to, which their lifecycle
// removes.
func (l *Ledger) Commit(ctx context.Context, s ora.Stage) (ora.Committed, error) {
	wrap := func(err error) error { return fmt.Errorf("ledger: commit %s: %w", s.Name, err) }
	if err := s.Validate(); err != nil {
		return ora.Committed{}, wrap(err)
	}
	now := l.now()
	entries := make([]ora.Entry, len(s.Entries))
	for i, in := range s.Entries {
		e, err := l.prepare(in, now)
		if err != nil {
			return ora.Committed{}, wrap(fmt.Errorf("[%d] %s %q: %w", i, in.Kind, in.Qualifier, err))
		}
		entries[i] = e
	}
	// Facts' bodies are stored by reference (factrefs.go): rows are the
	// items as written, entries the entries as returned.
	rows, off, zs, facts, err := l.forms(entries)
	if err != nil {
		return ora.Committed{}, wrap(err)
	}
	size := 0
	for i, e := range rows {
		if off[i] {
			e.Body = nil
		}
		size += ora.EntrySize(e)
	}
	if size > ora.MaxStageBytes {
		return ora.Committed{}, wrap(ora.Invalid("stage", "%d bytes: a stage commits at most %d at once", size, ora.MaxStageBytes))
	}
	if err := l.putFacts(ctx, facts); err != nil {
		return ora.Committed{}, wrap(err)
	}
	items := make([]types.TransactWriteItem, 0, len(entries)+len(s.Transitions))
	for i, e := range rows {
		if off[i] {
			if e, err = l.offload(ctx, e); err != nil {
				return ora.Committed{}, wrap(fmt.Errorf("[%d] %s %q: %w", i, e.Kind, e.Qualifier, err))
			}
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName:                           aws.String(l.table),
			Item:                                entryItemZ(e, l.shards, zs[i]),
			ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames:            map[string]string{"#pk": AttrPK},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}})
	}
	for _, t := range s.Transitions {
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:                aws.String(l.table),
			Key:                      key(prefixDecision+t.DecisionID, skDecision),
			UpdateExpression:         aws.String("SET #status = :to, #reason = :reason, #version = #version + :one, #updated = :now"),
			ConditionExpression:      aws.String("#status = :from"),
			ExpressionAttributeNames: map[string]string{"#status": "status", "#reason": "reason", "#version": "version", "#updated": "updated_at"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":to": sv(string(t.To)), ":from": sv(string(t.From)), ":reason": sv(t.Reason), ":one": nv(1), ":now": sv(formatTime(now)),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}})
	}
	if len(items) == 1 {
		// One write is atomic alone, and a transaction bills twice for it.
		out, err := l.commitOne(ctx, s, entries, items[0])
		if err != nil {
			return ora.Committed{}, wrap(err)
		}
		return out, nil
	}
	_, err = l.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return ora.Committed{Entries: entries}, nil
	}
	var tce *types.TransactionCanceledException
	if _, _, failed := failedCondition(err); !failed || !errors.As(err, &tce) || len(tce.CancellationReasons) != len(items) {
		return ora.Committed{}, wrap(translate(err))
	}
	out, err := l.settleStage(ctx, s, entries, tce.CancellationReasons)
	if err != nil {
		return ora.Committed{}, wrap(err)
	}
	return out, nil
}

// settleStage answers a stage whose transaction was cancelled on a failed
// condition: a replay (every entry stored, every decision at its To) with
// the stored entries, or ECONFLICT carrying the first failed write's
// record. A write whose reason is not ConditionalCheckFailed (DynamoDB may
// stop checking at the first failure) is read, strongly consistent.
func (l *Ledger) settleStage(ctx context.Context, s ora.Stage, entries []ora.Entry, reasons []types.CancellationReason) (ora.Committed, error) {
	failed := func(i int) bool { return aws.ToString(reasons[i].Code) == reasonConditionalCheckFailed }
	stored := make([]ora.Entry, len(entries))
	replay := true
	var conflict error
	for i, e := range entries {
		item := reasons[i].Item
		if !failed(i) || len(item) == 0 {
			out, err := l.client.GetItem(ctx, &dynamodb.GetItemInput{
				TableName: aws.String(l.table), Key: entryKey(e.SignalID, e.Kind, e.Qualifier), ConsistentRead: aws.Bool(true),
			})
			if err != nil {
				return ora.Committed{}, translate(err)
			}
			item = out.Item
		}
		if len(item) == 0 {
			replay = false
			continue
		}
		prev, err := l.decodeEntryWithBody(ctx)(item)
		if err != nil {
			return ora.Committed{}, fmt.Errorf("decode the stored entry %s/%s/%q: %w", e.SignalID, e.Kind, e.Qualifier, err)
		}
		stored[i] = prev
		if failed(i) && conflict == nil {
			conflict = ora.Conflict(prev, "entry %d, %s/%s/%q, exists: nothing written", i, e.SignalID, e.Kind, e.Qualifier)
		}
	}
	for j, t := range s.Transitions {
		i := len(entries) + j
		var cur ora.DecisionState
		var err error
		if item := reasons[i].Item; failed(i) && len(item) > 0 {
			if cur, err = decodeDecision(item); err != nil {
				return ora.Committed{}, fmt.Errorf("decode the decision %s: %w", t.DecisionID, err)
			}
		} else if cur, err = l.Decision(ctx, t.DecisionID); ora.ErrorCode(err) == ora.ENOTFOUND {
			return ora.Committed{}, ora.Errorf(ora.ENOTFOUND, "decision %q not found", t.DecisionID)
		} else if err != nil {
			return ora.Committed{}, err
		}
		if cur.Status != t.To {
			replay = false
		}
		if failed(i) && conflict == nil {
			conflict = ora.Conflict(cur, "decision %s is %s, not %s: nothing written", t.DecisionID, cur.Status, t.From)
		}
	}
	if replay {
		return ora.Committed{Entries: stored, Replayed: true}, nil
	}
	return ora.Committed{}, conflict
}

// commitOne commits a stage of one write as a conditional PutItem or
// UpdateItem (the same condition and answers as in a transaction, at half
// its write units).
func (l *Ledger) commitOne(ctx context.Context, s ora.Stage, entries []ora.Entry, w types.TransactWriteItem) (ora.Committed, error) {
	var err error
	if p := w.Put; p != nil {
		_, err = l.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: p.TableName, Item: p.Item, ConditionExpression: p.ConditionExpression,
			ExpressionAttributeNames: p.ExpressionAttributeNames, ReturnValuesOnConditionCheckFailure: p.ReturnValuesOnConditionCheckFailure,
		})
	} else {
		u := w.Update
		_, err = l.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
			ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: u.ReturnValuesOnConditionCheckFailure,
		})
	}
	if err == nil {
		return ora.Committed{Entries: entries}, nil
	}
	_, item, failed := failedCondition(err)
	if !failed {
		return ora.Committed{}, translate(err)
	}
	return l.settleStage(ctx, s, entries, []types.CancellationReason{{Code: aws.String(reasonConditionalCheckFailed), Item: item}})
}
