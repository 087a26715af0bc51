package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The ledger table's key attributes, indexes and TTL attribute. The CDK app
// builds the same table from these names; CreateLedgerTable builds it for
// DynamoDB Local and tests.
const (
	AttrPK     = "PK"     // partition key (S)
	AttrSK     = "SK"     // sort key (S)
	AttrGSI1PK = "GSI1PK" // IndexRecent partition key (S): KIND#<kind>
	AttrGSI1SK = "GSI1SK" // IndexRecent sort key (S): <created_at>#<signal>#<qualifier>
	AttrGSI2PK = "GSI2PK" // IndexOpen partition key (S): OPEN or OPEN#<shard>, only on open commitments
	AttrGSI2SK = "GSI2SK" // IndexOpen sort key (S): <opened_at>#<commitment id>
	AttrTTL    = "ttl"    // TTL attribute (N, epoch seconds)

	IndexRecent = "GSI1" // recent entries of one kind in a time range
	IndexOpen   = "GSI2" // sparse: open commitments, oldest first
)

// LedgerTableInput returns the CreateTable request for the ledger table:
// string PK/SK, IndexRecent and the sparse IndexOpen (all attributes
// projected), on-demand billing and a stream of new and old images. TTL is set
// apart (UpdateTimeToLive), as the API requires.
func LedgerTableInput(name string) *dynamodb.CreateTableInput {
	str := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	keys := func(pk, sk string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange},
		}
	}
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{str(AttrPK), str(AttrSK), str(AttrGSI1PK), str(AttrGSI1SK), str(AttrGSI2PK), str(AttrGSI2SK)},
		KeySchema:            keys(AttrPK, AttrSK),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{IndexName: aws.String(IndexRecent), KeySchema: keys(AttrGSI1PK, AttrGSI1SK), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}},
			{IndexName: aws.String(IndexOpen), KeySchema: keys(AttrGSI2PK, AttrGSI2SK), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}},
		},
		BillingMode: types.BillingModePayPerRequest,
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewTypeNewAndOldImages,
		},
	}
}

// CreateLedgerTable creates the ledger table (LedgerTableInput), waits until
// it is active and turns on TTL on AttrTTL. A table that already exists is
// waited for and left as it is.
func CreateLedgerTable(ctx context.Context, c Client, name string) error {
	_, err := c.CreateTable(ctx, LedgerTableInput(name))
	var inUse *types.ResourceInUseException
	existed := errors.As(err, &inUse)
	if err != nil && !existed {
		return fmt.Errorf("dynamo: create table %s: %w", name, translate(err))
	}
	waiter := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 5*time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute); err != nil {
		return fmt.Errorf("dynamo: wait for table %s: %w", name, translate(err))
	}
	if existed {
		return nil
	}
	_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(AttrTTL), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("dynamo: enable TTL on %s: %w", name, translate(err))
	}
	return nil
}
