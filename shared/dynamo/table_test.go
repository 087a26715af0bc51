package dynamo

import (
	"context"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestCreateLedgerTable(t *testing.T) {
	ctx := context.Background()
	c, name := newTable(t)
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatalf("DescribeTable: %v", err)
	}
	tbl := out.Table
	keyString := func(ks []types.KeySchemaElement) string {
		s := ""
		for _, k := range ks {
			s += aws.ToString(k.AttributeName) + ":" + string(k.KeyType) + " "
		}
		return s
	}
	if got, want := keyString(tbl.KeySchema), "PK:HASH SK:RANGE "; got != want {
		t.Errorf("key schema got %q, want %q", got, want)
	}
	gsis := map[string]string{}
	for _, g := range tbl.GlobalSecondaryIndexes {
		gsis[aws.ToString(g.IndexName)] = keyString(g.KeySchema) + string(g.Projection.ProjectionType)
	}
	want := map[string]string{
		IndexRecent: "GSI1PK:HASH GSI1SK:RANGE ALL",
		IndexOpen:   "GSI2PK:HASH GSI2SK:RANGE ALL",
	}
	for n, w := range want {
		if gsis[n] != w {
			t.Errorf("index %s got %q, want %q", n, gsis[n], w)
		}
	}
	if len(gsis) != len(want) {
		t.Errorf("indexes got %v, want %v", gsis, want)
	}
	var attrs []string
	for _, a := range tbl.AttributeDefinitions {
		if a.AttributeType != types.ScalarAttributeTypeS {
			t.Errorf("attribute %s has type %s, want S", aws.ToString(a.AttributeName), a.AttributeType)
		}
		attrs = append(attrs, aws.ToString(a.AttributeName))
	}
	sort.Strings(attrs)
	if got, want := len(attrs), 6; got != want {
		t.Errorf("attribute definitions got %v, want %d", attrs, want)
	}
	if tbl.StreamSpecification == nil || !aws.ToBool(tbl.StreamSpecification.StreamEnabled) ||
		tbl.StreamSpecification.StreamViewType != types.StreamViewTypeNewAndOldImages {
		t.Errorf("stream got %+v, want enabled with NEW_AND_OLD_IMAGES", tbl.StreamSpecification)
	}
	if tbl.BillingModeSummary == nil || tbl.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing mode got %+v, want PAY_PER_REQUEST", tbl.BillingModeSummary)
	}
	ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatalf("DescribeTimeToLive: %v", err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != AttrTTL || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Errorf("TTL got %+v, want %s enabled", d, AttrTTL)
	}
	// Creating it again is harmless.
	if err := CreateLedgerTable(ctx, c, name); err != nil {
		t.Errorf("second CreateLedgerTable: %v", err)
	}
}
