package dynamo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// Coalescing windows live in the entity's own partition: PK = "COALESCE#" +
// entity, SK = "WINDOW" for the window (leader, expires_at, and sealed once
// its leader closed it), SK = "MEMBER#" + signal id for each signal that
// joined a window (its leader and the window's end). A member is an item of
// its own, not an entry of a list in the window item, so a large burst never
// nears the 400 KB item limit and a join writes a small item. Both expire by
// TTL an hour after their window, which keeps a member findable by a retried
// delivery meanwhile.
const (
	typeCoalesce       = "coalesce"
	typeCoalesceMember = "coalesce-member"
	prefixCoalesce     = "COALESCE#"
	skCoalesce         = "WINDOW"
	skCoalesceMember   = "MEMBER#"
	// coalesceKeep is how long the items outlive their window.
	coalesceKeep = time.Hour
	// joinAttempts bounds the claim-or-join rounds of one Coalesce: a round
	// is lost only to a window that changed between its two writes.
	joinAttempts = 4
)

// Coalesce claims the coalescing window of entity for signalID when none is
// open (none yet, the last one ended or was sealed), or joins the open one
// as a member, and returns the window's leader (signalID when this call
// claimed it) and its end; a signal that joined a window before (a retried
// delivery) gets that window back, sealed or not. See observe.Coalescer.
//
// A member's item is read first (a consistent GetItem). The claim is one
// conditional put (attribute_not_exists(PK) OR expires_at <= now OR
// attribute_exists(sealed)); when it fails on an open window, the join is
// one transaction: a condition check that the window is still that
// leader's, unsealed and open, and a put of the member's item. A window that
// changed between the two (sealed, taken over) sends the call round again.
// The TTL attribute only clears old items away. Errors: EINVALID,
// ETRANSIENT.
func (l *Ledger) Coalesce(ctx context.Context, entity, signalID string, window time.Duration) (string, time.Time, error) {
	switch {
	case entity == "":
		return "", time.Time{}, fmt.Errorf("coalesce: %w", ora.Invalid("entity", "required"))
	case signalID == "":
		return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, ora.Invalid("signal_id", "required"))
	case window <= 0:
		return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, ora.Invalid("window", "%v is not positive", window))
	}
	pk := prefixCoalesce + entity
	if leader, until, ok, err := l.member(ctx, pk, signalID); err != nil || ok {
		return leader, until, err
	}
	for attempt := 1; ; attempt++ {
		now := l.now()
		end := now.Add(window)
		item := key(pk, skCoalesce)
		item["type"] = sv(typeCoalesce)
		item["leader"] = sv(signalID)
		item["expires_at"] = nv(end.UnixNano())
		item[AttrTTL] = nv(ttlSeconds(end.Add(coalesceKeep)))
		_, err := l.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           aws.String(l.table),
			Item:                                item,
			ConditionExpression:                 aws.String("attribute_not_exists(#pk) OR #exp <= :now OR attribute_exists(#sealed)"),
			ExpressionAttributeNames:            map[string]string{"#pk": AttrPK, "#exp": "expires_at", "#sealed": "sealed"},
			ExpressionAttributeValues:           map[string]types.AttributeValue{":now": nv(now.UnixNano())},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return signalID, end.UTC(), nil
		}
		_, old, ok := failedCondition(err)
		if !ok {
			return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, translate(err))
		}
		if old == nil { // a store that does not return the item: read it
			out, gerr := l.client.GetItem(ctx, &dynamodb.GetItemInput{
				TableName: aws.String(l.table), Key: key(pk, skCoalesce), ConsistentRead: aws.Bool(true),
			})
			if gerr != nil {
				return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, translate(gerr))
			}
			old = out.Item
		}
		leader, until, err := windowOf(old)
		if err != nil {
			return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, err)
		}
		if leader == signalID { // the leader's retried delivery
			return leader, until, nil
		}
		joined, err := l.join(ctx, pk, signalID, leader, until, now)
		switch {
		case err != nil:
			return "", time.Time{}, fmt.Errorf("coalesce %s: join %s: %w", entity, leader, err)
		case joined:
			return leader, until, nil
		}
		// The member's item exists (a concurrent delivery of this signal
		// joined), or the window changed: look again.
		if leader, until, ok, err := l.member(ctx, pk, signalID); err != nil || ok {
			return leader, until, err
		}
		if attempt == joinAttempts {
			return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, ora.Errorf(ora.ETRANSIENT, "the window changed under %d attempts to join it", attempt))
		}
	}
}

// member returns the window signalID joined, if it joined one.
func (l *Ledger) member(ctx context.Context, pk, signalID string) (string, time.Time, bool, error) {
	out, err := l.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(l.table), Key: key(pk, skCoalesceMember+signalID), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return "", time.Time{}, false, fmt.Errorf("coalesce: read member %s: %w", signalID, translate(err))
	}
	if out.Item == nil {
		return "", time.Time{}, false, nil
	}
	leader, until, err := windowOf(out.Item)
	if err != nil {
		return "", time.Time{}, false, fmt.Errorf("coalesce: member %s: %w", signalID, err)
	}
	return leader, until, true, nil
}

// join records signalID as a member of leader's window, which must still be
// leader's, unsealed and open at now; false when it is not (or the member's
// item exists).
func (l *Ledger) join(ctx context.Context, pk, signalID, leader string, until, now time.Time) (bool, error) {
	m := key(pk, skCoalesceMember+signalID)
	m["type"] = sv(typeCoalesceMember)
	m["leader"] = sv(leader)
	m["expires_at"] = nv(until.UnixNano())
	m[AttrTTL] = nv(ttlSeconds(until.Add(coalesceKeep)))
	_, err := l.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{
			TableName:                aws.String(l.table),
			Key:                      key(pk, skCoalesce),
			ConditionExpression:      aws.String("#leader = :leader AND #exp > :now AND attribute_not_exists(#sealed)"),
			ExpressionAttributeNames: map[string]string{"#leader": "leader", "#exp": "expires_at", "#sealed": "sealed"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":leader": sv(leader), ":now": nv(now.UnixNano()),
			},
		}},
		{Put: &types.Put{
			TableName:                aws.String(l.table),
			Item:                     m,
			ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
		}},
	}})
	if err == nil {
		return true, nil
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if code := aws.ToString(r.Code); code != "" && code != reasonNone && code != reasonConditionalCheckFailed && !transientReasons[code] {
				return false, translate(err)
			}
		}
		return false, nil // a failed condition or a conflict: the caller looks again
	}
	return false, translate(err)
}

// Seal closes leader's window of entity to new members and returns its
// members, sorted; see observe.Coalescer. It is one conditional update
// (the window is still leader's) and one consistent query of the entity's
// member items; a window taken over by a later leader is left as it is, no
// signal joining leader's window any more either way. Errors: EINVALID,
// ETRANSIENT.
func (l *Ledger) Seal(ctx context.Context, entity, leader string) ([]string, error) {
	if entity == "" || leader == "" {
		return nil, fmt.Errorf("seal: %w", ora.Invalid("entity", "an entity and a leader are required"))
	}
	pk := prefixCoalesce + entity
	_, err := l.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.table),
		Key:                       key(pk, skCoalesce),
		UpdateExpression:          aws.String("SET #sealed = :true"),
		ConditionExpression:       aws.String("#leader = :leader"),
		ExpressionAttributeNames:  map[string]string{"#sealed": "sealed", "#leader": "leader"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":true": &types.AttributeValueMemberBOOL{Value: true}, ":leader": sv(leader)},
	})
	if _, _, taken := failedCondition(err); err != nil && !taken {
		return nil, fmt.Errorf("seal %s: %w", entity, translate(err))
	}
	return l.Members(ctx, entity, leader)
}

// Members returns the signals that joined leader's window of entity,
// sorted: one consistent query of the entity's member items, writing
// nothing; see observe.Coalescer. Errors: EINVALID, ETRANSIENT.
func (l *Ledger) Members(ctx context.Context, entity, leader string) ([]string, error) {
	if entity == "" || leader == "" {
		return nil, fmt.Errorf("coalescing members: %w", ora.Invalid("entity", "an entity and a leader are required"))
	}
	pk := prefixCoalesce + entity
	var members []string
	in := &dynamodb.QueryInput{
		TableName:                aws.String(l.table),
		KeyConditionExpression:   aws.String("#pk = :pk AND begins_with(#sk, :member)"),
		FilterExpression:         aws.String("#leader = :leader"),
		ProjectionExpression:     aws.String("#sk"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK, "#sk": AttrSK, "#leader": "leader"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": sv(pk), ":member": sv(skCoalesceMember), ":leader": sv(leader),
		},
		ConsistentRead: aws.Bool(true),
	}
	for {
		out, err := l.client.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("coalescing members of %s: %w", entity, translate(err))
		}
		for _, it := range out.Items {
			if sk, ok := it[AttrSK].(*types.AttributeValueMemberS); ok {
				members = append(members, sk.Value[len(skCoalesceMember):])
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	sort.Strings(members)
	return members, nil
}

// windowOf reads the leader and end of a window or member item.
func windowOf(item map[string]types.AttributeValue) (string, time.Time, error) {
	leader, _ := item["leader"].(*types.AttributeValueMemberS)
	exp, _ := item["expires_at"].(*types.AttributeValueMemberN)
	if leader == nil || exp == nil {
		return "", time.Time{}, ora.Errorf(ora.EINTERNAL, "the coalescing item has no leader")
	}
	ns, err := strconv.ParseInt(exp.Value, 10, 64)
	if err != nil {
		return "", time.Time{}, ora.Errorf(ora.EINTERNAL, "the coalescing item's end %q is malformed", exp.Value)
	}
	return leader.Value, time.Unix(0, ns).UTC(), nil
}
