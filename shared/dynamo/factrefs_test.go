package dynamo

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ledgertest"
	"github.com/ora-runtime/ora/shared/ora"
)

// factBodiesProbe counts and deletes the table's fact-body items (and
// forgets the ledger's cached bodies, as another process would not have
// them).
type factBodiesProbe struct {
	c     *dynamodb.Client
	table string
	l     *Ledger
}

func (p factBodiesProbe) Count(ctx context.Context) (int, error) {
	out, err := p.c.Scan(ctx, &dynamodb.ScanInput{
		TableName:                 aws.String(p.table),
		FilterExpression:          aws.String("#t = :t"),
		ExpressionAttributeNames:  map[string]string{"#t": "type"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": sv(typeFactBody)},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return 0, err
	}
	return len(out.Items), nil
}

func (p factBodiesProbe) Drop(ctx context.Context, digest string) error {
	_, err := p.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(p.table), Key: factKey(digest)})
	p.l.cache = newBodyCache(p.l.cache.max)
	return err
}

func TestFactRefsContract(t *testing.T) {
	ledgertest.RunFactRefs(t, func(t *testing.T) (ora.Ledger, ledgertest.FactBodies) {
		c, name := newTable(t)
		l := New(c, name)
		return l, factBodiesProbe{c, name, l}
	})
}
