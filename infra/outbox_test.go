package main

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/ora-runtime/ora/shared/observe"
)

// The outbox sweep keeps its position in the ledger: it may put items only in
// the position's partition, and no other function's grant changed for it.
func TestOutboxSweepWritesOnlyItsPosition(t *testing.T) {
	synth(t)
	role := *stack.Stack.GetLogicalId(stack.Functions["outbox-sweep"].Role().Node().DefaultChild().(awscdk.CfnElement))
	var puts []map[string]any
	for _, st := range roleStatements(t, role) {
		for _, a := range toStrings(st["Action"]) {
			if st["Effect"] == "Allow" && (a == "dynamodb:PutItem" || a == "dynamodb:*" || a == "dynamodb:BatchWriteItem" || a == "dynamodb:TransactWriteItems" ||
				a == "dynamodb:UpdateItem" || a == "dynamodb:DeleteItem") {
				puts = append(puts, st)
			}
		}
	}
	if len(puts) != 1 {
		b, _ := json.Marshal(puts)
		t.Fatalf("outbox-sweep's write statements: %s, want one PutItem", b)
	}
	if got := toStrings(puts[0]["Action"]); !slices.Equal(got, []string{"dynamodb:PutItem"}) {
		t.Errorf("actions %v, want dynamodb:PutItem alone", got)
	}
	cond, _ := json.Marshal(puts[0]["Condition"])
	want := `{"ForAllValues:StringEquals":{"dynamodb:LeadingKeys":["` + observe.SignalKeyPrefix + observe.SweepPositionID() + `"]}}`
	if string(cond) != want {
		t.Errorf("condition %s, want %s", cond, want)
	}
}
