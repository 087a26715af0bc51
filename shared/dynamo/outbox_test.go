package dynamo

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
)

// observe-table's stream filter (the outbox of wave starts) matches
// signal-received entries by the keys this adapter writes; if they change,
// the filter must change with them.
func TestSignalReceivedKeysMatchTheOutboxFilter(t *testing.T) {
	k := entryKey("sig_1", ora.KindSignalReceived, "")
	pk := k[AttrPK].(*types.AttributeValueMemberS).Value
	sk := k[AttrSK].(*types.AttributeValueMemberS).Value
	if pk != observe.SignalKeyPrefix+"sig_1" || sk != observe.SignalReceivedSortKey {
		t.Errorf("signal-received keys %q %q, want %q %q", pk, sk, observe.SignalKeyPrefix+"sig_1", observe.SignalReceivedSortKey)
	}
}
