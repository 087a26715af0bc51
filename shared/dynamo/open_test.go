package dynamo

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// Open commitments are spread over IndexOpen's partitions as the kind index
// spreads entries (one partition would take every open commitment's writes),
// and OpenCommitments merges the shards, oldest first, within its limit.
func TestOpenCommitmentsSharded(t *testing.T) {
	ctx := context.Background()
	l := patternsLedger(t, nil)
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	const n = 12
	for i := 0; i < n; i++ {
		// Opened newest first, so the answer's order is the merge's doing.
		c := ora.Commitment{ID: fmt.Sprintf("c-%02d", i), SignalID: "s", Title: "promise", Status: ora.CommitmentOpen, OpenedAt: t0.Add(time.Duration(n-i) * time.Minute)}
		if _, err := l.OpenCommitment(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	partitions := map[string]int{}
	for shard := 0; shard < DefaultRecentShards+1; shard++ {
		out, err := l.client.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(l.table), IndexName: aws.String(IndexOpen),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": AttrGSI2PK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": sv(openPK(shard))},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Items) > 0 {
			partitions[openPK(shard)] = len(out.Items)
		}
	}
	if len(partitions) != DefaultRecentShards || partitions[openMarker] == 0 {
		t.Errorf("IndexOpen partitions %v, want %d, the first keeping %q", partitions, DefaultRecentShards, openMarker)
	}
	tests := []struct {
		name  string
		limit int
		want  int
	}{
		{"all", 0, n},
		{"the oldest five", 5, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := l.OpenCommitments(ctx, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Fatalf("got %d commitments, want %d", len(got), tt.want)
			}
			for i, c := range got {
				if want := fmt.Sprintf("c-%02d", n-1-i); c.ID != want {
					t.Errorf("commitment %d is %s, want %s (oldest first)", i, c.ID, want)
				}
			}
		})
	}
}
