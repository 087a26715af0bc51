package dynamo

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/shared/ora"
)

// transactFault fails TransactWriteItems once: before the request reaches
// DynamoDB (nothing written), or after DynamoDB applied it (the answer
// lost on the way back, as a timed-out connection loses it). It counts the
// calls.
type transactFault struct {
	Client
	after bool
	fired atomic.Bool
	calls atomic.Int32
}

func (f *transactFault) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.calls.Add(1)
	if f.fired.CompareAndSwap(false, true) {
		if f.after {
			if _, err := f.Client.TransactWriteItems(ctx, in, o...); err != nil {
				return nil, err
			}
		}
		return nil, timeoutError{}
	}
	return f.Client.TransactWriteItems(ctx, in, o...)
}

// TestCommitCrashAroundTheTransaction fails a stage's one TransactWriteItems
// before and after DynamoDB applies it: the stage is absent or whole, never
// part; the retried stage is written once (or replayed), and each Commit is
// one call.
func TestCommitCrashAroundTheTransaction(t *testing.T) {
	for _, after := range []bool{false, true} {
		name := map[bool]string{false: "before", true: "after"}[after]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c, table := newTable(t)
			fault := &transactFault{Client: c, after: after}
			l := New(fault, table)
			d := ora.ReasonerDecision{ID: "d1", SignalID: "s1", ActionType: "notify", Parameters: json.RawMessage(`{}`),
				Confidence: 0.9, Reasoning: "r", AuthorType: ora.AuthorArchitect, Scope: ora.Scope{AllowedOperations: []string{"notify"}},
				Tier: 1, Timestamp: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)}
			if _, err := New(c, table).RecordDecision(ctx, d); err != nil {
				t.Fatal(err)
			}
			stage := ora.Stage{Name: "act", Transitions: []ora.Transition{{DecisionID: "d1", From: ora.StatusDecided, To: ora.StatusExecuting}}}
			for _, q := range []string{"0", "1", "2"} {
				stage.Entries = append(stage.Entries, ora.NewEntryJSON("s1", ora.KindExecutionEvidence, q, []byte(`{"index":`+q+`}`)))
			}
			if _, err := l.Commit(ctx, stage); ora.ErrorCode(err) != ora.ETRANSIENT {
				t.Fatalf("Commit with a fault: got %v, want ETRANSIENT", err)
			}
			count := func() (int, ora.DecisionStatus) {
				es, err := l.EntriesOfKinds(ctx, "s1", ora.KindExecutionEvidence)
				if err != nil && ora.ErrorCode(err) != ora.ENOTFOUND {
					t.Fatal(err)
				}
				st, err := l.Decision(ctx, "d1")
				if err != nil {
					t.Fatal(err)
				}
				return len(es), st.Status
			}
			wantN, wantSt := 0, ora.StatusDecided
			if after {
				wantN, wantSt = 3, ora.StatusExecuting
			}
			if n, st := count(); n != wantN || st != wantSt {
				t.Fatalf("after the fault: %d evidence entries, decision %s; want %d and %s", n, st, wantN, wantSt)
			}
			got, err := l.Commit(ctx, stage)
			if err != nil {
				t.Fatalf("retried Commit: %v", err)
			}
			if got.Replayed != after {
				t.Errorf("retried Commit: replayed %v, want %v", got.Replayed, after)
			}
			if n, st := count(); n != 3 || st != ora.StatusExecuting {
				t.Fatalf("after the retry: %d evidence entries, decision %s; want 3 and executing", n, st)
			}
			if n := fault.calls.Load(); n != 2 {
				t.Errorf("TransactWriteItems calls: %d, want 2 (one per Commit)", n)
			}
		})
	}
}
