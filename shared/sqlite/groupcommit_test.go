package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// TestGroupCommit saves from many goroutines at once, some of them for an
// execution that does not exist: those fail with ErrNotFound, and every other
// save (record, part and event) is stored.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	s := NewExecutionStore(openDB(t))
	const execs, saves = 8, 25
	def := []byte(`{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}`)
	rec := func(i int) stepfn.ExecutionRecord {
		return stepfn.ExecutionRecord{
			Execution: stepfn.Execution{ExecutionArn: fmt.Sprintf("arn:g:%d", i), StateMachineArn: "arn:sm", Name: fmt.Sprint(i),
				Status: stepfn.StatusRunning, Input: json.RawMessage(`{}`), StartDate: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
			Definition: def, Checkpoint: []byte(`{"state":"A"}`),
		}
	}
	for i := range execs {
		if err := s.CreateExecution(ctx, rec(i), []stepfn.HistoryEvent{{ID: 1, Type: "ExecutionStarted"}}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, execs+1)
	for i := range execs + 1 { // execution `execs` was never created
		wg.Go(func() {
			for n := range saves {
				ev := stepfn.HistoryEvent{ID: int64(n + 2), Type: "PassStateEntered"}
				part := stepfn.CheckpointPart{Key: fmt.Sprint(n % 3), Data: fmt.Appendf(nil, `{"n":%d}`, n)}
				if err := s.SaveExecutionParts(ctx, rec(i), []stepfn.CheckpointPart{part}, []stepfn.HistoryEvent{ev}); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for i := range execs {
		if errs[i] != nil {
			t.Errorf("execution %d: %v", i, errs[i])
			continue
		}
		h, err := s.History(ctx, rec(i).ExecutionArn)
		if err != nil || len(h) != saves+1 {
			t.Errorf("execution %d: %d events (%v), want %d", i, len(h), err, saves+1)
		}
		parts, err := s.CheckpointParts(ctx, rec(i).ExecutionArn)
		if err != nil || len(parts) != 3 || string(parts["0"]) != fmt.Sprintf(`{"n":%d}`, (saves-1)/3*3) {
			t.Errorf("execution %d: parts %q (%v)", i, parts, err)
		}
	}
	if !errors.Is(errs[execs], stepfn.ErrNotFound) {
		t.Errorf("save of an unknown execution: %v, want ErrNotFound", errs[execs])
	}
}
