package dynamo

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// Reason batches (see ora.Batch). The open batch of a key is one item,
// PK = "BATCHKEY#" + key, SK = "OPEN" (its id, leader, end and size); each
// batch's members and state live in its own partition, PK = "BATCH#" + id:
// SK = "MEMBER#" + signal id per member, SK = "STATE" once claimed. Every
// item carries a TTL an hour past the window.
const (
	typeBatch        = "reason-batch"
	prefixBatchKey   = "BATCHKEY#"
	prefixBatch      = "BATCH#"
	prefixBatchMbr   = "MEMBER#"
	skBatchOpen      = "OPEN"
	skBatchState     = "STATE"
	batchJoinRetries = 8
	batchItemTTL     = time.Hour
)

// JoinBatch adds signalID to the open batch of key, or opens one (its
// window ends window from now) when none is open: there is none, its window
// ended, or it holds max signals. Joining is a conditional update of the
// open batch's size (closes_at > now AND size < max); opening is a
// conditional put (no open batch, or the last one closed or full), so
// concurrent reason functions agree on one batch per window and its leader.
// The member is then written together with a check that the batch is not
// claimed yet (one transaction): a signal joins a batch whose claimant will
// see it, or not at all. Errors: EINVALID; ECONFLICT when the batch was
// claimed before the member was written (reason alone); ETRANSIENT.
func (l *Ledger) JoinBatch(ctx context.Context, batchKey, signalID string, window time.Duration, max int) (ora.Batch, error) {
	switch {
	case batchKey == "":
		return ora.Batch{}, fmt.Errorf("batch: %w", ora.Invalid("key", "required"))
	case signalID == "":
		return ora.Batch{}, fmt.Errorf("batch %s: %w", batchKey, ora.Invalid("signal_id", "required"))
	case window <= 0 || max < 1:
		return ora.Batch{}, fmt.Errorf("batch %s: %w", batchKey, ora.Invalid("window", "%v and size %d must be positive", window, max))
	}
	for range batchJoinRetries {
		b, err := l.joinOpen(ctx, batchKey, max)
		if err == nil {
			return b, l.addMember(ctx, b, signalID)
		}
		if ora.ErrorCode(err) != ora.ECONFLICT {
			return ora.Batch{}, err
		}
		if b, err = l.openBatch(ctx, batchKey, signalID, window, max); err == nil {
			return b, l.addMember(ctx, b, signalID)
		}
		if ora.ErrorCode(err) != ora.ECONFLICT {
			return ora.Batch{}, err
		}
		// Another function opened one between the two writes: join it.
	}
	return ora.Batch{}, fmt.Errorf("batch %s: %w", batchKey, ora.Errorf(ora.ETRANSIENT, "no batch joined after %d attempts", batchJoinRetries))
}

// joinOpen counts one more member into the open batch of key; ECONFLICT
// when there is none that takes one.
func (l *Ledger) joinOpen(ctx context.Context, batchKey string, max int) (ora.Batch, error) {
	out, err := l.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(l.table),
		Key:                      key(prefixBatchKey+batchKey, skBatchOpen),
		UpdateExpression:         aws.String("SET #size = #size + :one"),
		ConditionExpression:      aws.String("#closes > :now AND #size < :max"),
		ExpressionAttributeNames: map[string]string{"#size": "size", "#closes": "closes_at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": nv(1), ":now": nv(l.now().UnixNano()), ":max": nv(int64(max)),
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return ora.Batch{}, fmt.Errorf("batch %s: join: %w", batchKey, translate(err))
	}
	ns, err := getN(out.Attributes, "closes_at")
	if err != nil {
		return ora.Batch{}, err
	}
	return ora.Batch{ID: getS(out.Attributes, "batch_id"), Key: batchKey, Leader: getS(out.Attributes, "leader"), ClosesAt: time.Unix(0, ns).UTC()}, nil
}

// openBatch opens a batch of key led by signalID; ECONFLICT when an open
// batch that takes members exists.
func (l *Ledger) openBatch(ctx context.Context, batchKey, signalID string, window time.Duration, max int) (ora.Batch, error) {
	now := l.now()
	b := ora.Batch{ID: fmt.Sprintf("%s@%d", signalID, now.UnixNano()), Key: batchKey, Leader: signalID, ClosesAt: now.Add(window).UTC()}
	item := key(prefixBatchKey+batchKey, skBatchOpen)
	item["type"] = sv(typeBatch)
	item["batch_id"] = sv(b.ID)
	item["leader"] = sv(signalID)
	item["closes_at"] = nv(b.ClosesAt.UnixNano())
	item["size"] = nv(1)
	item[AttrTTL] = nv(ttlSeconds(b.ClosesAt.Add(batchItemTTL)))
	_, err := l.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(l.table),
		Item:                      item,
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #closes <= :now OR #size >= :max"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#closes": "closes_at", "#size": "size"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": nv(now.UnixNano()), ":max": nv(int64(max))},
	})
	if err != nil {
		return ora.Batch{}, fmt.Errorf("batch %s: open: %w", batchKey, translate(err))
	}
	return b, nil
}

// addMember writes signalID's member item in b's partition, on condition
// that b is not claimed.
func (l *Ledger) addMember(ctx context.Context, b ora.Batch, signalID string) error {
	now := l.now()
	item := key(prefixBatch+b.ID, prefixBatchMbr+signalID)
	item["type"] = sv(typeBatch)
	item["signal_id"] = sv(signalID)
	item["joined_at"] = sv(formatTime(now))
	item[AttrTTL] = nv(ttlSeconds(b.ClosesAt.Add(batchItemTTL)))
	_, err := l.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{
			TableName:                aws.String(l.table),
			Key:                      key(prefixBatch+b.ID, skBatchState),
			ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
		}},
		{Put: &types.Put{TableName: aws.String(l.table), Item: item}},
	}})
	if err != nil {
		return fmt.Errorf("batch %s: add %s: %w", b.ID, signalID, translate(err))
	}
	return nil
}

// ClaimBatch makes signalID the batch's claimant until lease from now, and
// returns the members (in the order they joined). The claim is a conditional
// put of the batch's state: it succeeds when the batch is unclaimed, or
// claimed by signalID and unfinished (a retried claimant). Errors: ECONFLICT
// (another member holds it, or it is finished), ETRANSIENT.
func (l *Ledger) ClaimBatch(ctx context.Context, batchID, signalID string, lease time.Duration) ([]string, error) {
	now := l.now()
	item := key(prefixBatch+batchID, skBatchState)
	item["type"] = sv(typeBatch)
	item["claimant"] = sv(signalID)
	item["lease_until"] = nv(now.Add(lease).UnixNano())
	item[AttrTTL] = nv(ttlSeconds(now.Add(lease + batchItemTTL)))
	_, err := l.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(l.table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk) OR (#claimant = :me AND attribute_not_exists(#finished))"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK, "#claimant": "claimant", "#finished": "finished"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":me": sv(signalID),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("batch %s: claim: %w", batchID, translate(err))
	}
	type member struct{ id, at string }
	var members []member
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(l.table),
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :m)"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#sk": AttrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": sv(prefixBatch + batchID), ":m": sv(prefixBatchMbr)},
		ConsistentRead:            aws.Bool(true),
	}
	for {
		out, err := l.client.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("batch %s: members: %w", batchID, translate(err))
		}
		for _, it := range out.Items {
			members = append(members, member{getS(it, "signal_id"), getS(it, "joined_at")})
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	sort.SliceStable(members, func(i, j int) bool {
		return members[i].at < members[j].at || members[i].at == members[j].at && strings.Compare(members[i].id, members[j].id) < 0
	})
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.id
	}
	return ids, nil
}

// BatchState reads what became of a batch: unclaimed (zero), claimed, or
// finished. Errors: ETRANSIENT.
func (l *Ledger) BatchState(ctx context.Context, batchID string) (ora.BatchState, error) {
	out, err := l.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(l.table), Key: key(prefixBatch+batchID, skBatchState), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return ora.BatchState{}, fmt.Errorf("batch %s: state: %w", batchID, translate(err))
	}
	if len(out.Item) == 0 {
		return ora.BatchState{}, nil
	}
	ns, err := getN(out.Item, "lease_until")
	if err != nil {
		return ora.BatchState{}, err
	}
	_, finished := out.Item["finished"]
	return ora.BatchState{Claimant: getS(out.Item, "claimant"), LeaseUntil: time.Unix(0, ns).UTC(), Finished: finished, Failed: getS(out.Item, "failed")}, nil
}

// FinishBatch marks the batch finished by its claimant signalID: decided,
// or failed with the reason given (each member then reasons alone).
// Errors: ECONFLICT (signalID is not the claimant), ETRANSIENT.
func (l *Ledger) FinishBatch(ctx context.Context, batchID, signalID, failed string) error {
	update := "SET #finished = :now"
	values := map[string]types.AttributeValue{":me": sv(signalID), ":now": sv(formatTime(l.now()))}
	names := map[string]string{"#finished": "finished", "#claimant": "claimant"}
	if failed != "" {
		update += ", #failed = :failed"
		values[":failed"] = sv(failed)
		names["#failed"] = "failed"
	}
	_, err := l.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.table),
		Key:                       key(prefixBatch+batchID, skBatchState),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("#claimant = :me"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if err != nil {
		return fmt.Errorf("batch %s: finish: %w", batchID, translate(err))
	}
	return nil
}
