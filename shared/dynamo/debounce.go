package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// Debounce reports whether this is the first call for key within window; see
// ora.Debouncer. It is one conditional put, attribute_not_exists(PK) OR
// expires_at < now, so concurrent Lambdas agree on a single winner. The
// window's end is checked in the condition (expires_at, Unix nanoseconds);
// the TTL attribute only clears old records away.
func (l *Ledger) Debounce(ctx context.Context, key string, window time.Duration) (bool, error) {
	switch {
	case key == "":
		return false, fmt.Errorf("debounce: %w", ora.Invalid("key", "required"))
	case window <= 0:
		return false, fmt.Errorf("debounce %s: %w", key, ora.Invalid("window", "%v is not positive", window))
	}
	now := l.now()
	end := now.Add(window)
	item := debounceKey(key)
	item["type"] = sv(typeDebounce)
	item["expires_at"] = nv(end.UnixNano())
	item[AttrTTL] = nv(ttlSeconds(end))
	_, err := l.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(l.table),
		Item:                      item,
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #exp < :now"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#exp": "expires_at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": nv(now.UnixNano())},
	})
	if _, _, ok := failedCondition(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("debounce %s: %w", key, translate(err))
	}
	return true, nil
}

func debounceKey(k string) map[string]types.AttributeValue {
	return key(prefixDebounce+k, skDebounce)
}
