package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// Coalescing windows: PK = "COALESCE#" + entity, SK = "WINDOW".
const (
	typeCoalesce   = "coalesce"
	prefixCoalesce = "COALESCE#"
	skCoalesce     = "WINDOW"
)

// Coalesce claims the coalescing window of entity for signalID when none is
// open, and returns the window's leader (signalID when this call claimed it)
// and its end; see observe.Coalescer. It is one conditional put,
// attribute_not_exists(PK) OR expires_at <= now, returning the open window on
// a failed condition, so concurrent observer Lambdas agree on one leader per
// window. The TTL attribute only clears old windows away. Errors: EINVALID,
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
	now := l.now()
	end := now.Add(window)
	item := key(prefixCoalesce+entity, skCoalesce)
	item["type"] = sv(typeCoalesce)
	item["leader"] = sv(signalID)
	item["expires_at"] = nv(end.UnixNano())
	item[AttrTTL] = nv(ttlSeconds(end.Add(time.Hour)))
	_, err := l.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(l.table),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(#pk) OR #exp <= :now"),
		ExpressionAttributeNames:            map[string]string{"#pk": AttrPK, "#exp": "expires_at"},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now": nv(now.UnixNano())},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if _, old, ok := failedCondition(err); ok {
		if old == nil { // a store that does not return the item: read it
			out, gerr := l.client.GetItem(ctx, &dynamodb.GetItemInput{
				TableName: aws.String(l.table), Key: key(prefixCoalesce+entity, skCoalesce), ConsistentRead: aws.Bool(true),
			})
			if gerr != nil {
				return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, translate(gerr))
			}
			old = out.Item
		}
		leader, _ := old["leader"].(*types.AttributeValueMemberS)
		exp, _ := old["expires_at"].(*types.AttributeValueMemberN)
		if leader == nil || exp == nil {
			return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, ora.Errorf(ora.EINTERNAL, "the open window has no leader"))
		}
		ns, perr := strconv.ParseInt(exp.Value, 10, 64)
		if perr != nil {
			return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, ora.Errorf(ora.EINTERNAL, "the open window's end %q is malformed", exp.Value))
		}
		return leader.Value, time.Unix(0, ns).UTC(), nil
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("coalesce %s: %w", entity, translate(err))
	}
	return signalID, end.UTC(), nil
}
