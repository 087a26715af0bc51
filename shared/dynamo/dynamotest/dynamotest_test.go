package dynamotest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func TestEmulatorAnswers(t *testing.T) {
	c := Client(t)
	out, err := c.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	if out.TableNames == nil && out.LastEvaluatedTableName != nil {
		t.Fatalf("unexpected pagination from an empty emulator")
	}
}
