package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/stepfn"
)

// keepHistories bounds how many Express children's histories stay in
// memory for the console (like an Express execution's log on AWS, for
// looking at recent waves, not a record).
const keepHistories = 128

// recentHistories keeps the newest children's histories by execution ARN.
type recentHistories struct {
	mu    sync.Mutex
	byArn map[string]*stepfn.TakenHistory
	order []string // oldest first
}

func (k *recentHistories) keep(arn string, hist *stepfn.TakenHistory) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.byArn == nil {
		k.byArn = map[string]*stepfn.TakenHistory{}
	}
	if _, ok := k.byArn[arn]; !ok {
		k.order = append(k.order, arn)
		if len(k.order) > keepHistories {
			delete(k.byArn, k.order[0])
			k.order = k.order[1:]
		}
	}
	k.byArn[arn] = hist
}

func (k *recentHistories) get(arn string) ([]stepfn.HistoryEvent, bool) {
	k.mu.Lock()
	h, ok := k.byArn[arn]
	k.mu.Unlock()
	if !ok {
		return nil, false
	}
	return h.Events(), true
}

// ExecutionHistory returns an execution's history: a recent Express child
// from memory, else the engine's (the console draws the wave's children
// with it). Errors: ENOTFOUND, and the engine's.
func (w waves) ExecutionHistory(ctx context.Context, arn string) ([]byte, error) {
	var hist []stepfn.HistoryEvent
	var ok bool
	if w.r.children != nil {
		hist, ok = w.r.children.kept.get(arn)
	}
	if !ok {
		var err error
		hist, err = w.r.engine.GetExecutionHistory(ctx, arn)
		if stepfn.ErrorCode(err) == stepfn.CodeExecutionDoesNotExist || stepfn.ErrorCode(err) == stepfn.CodeInvalidArn {
			return nil, ora.Errorf(ora.ENOTFOUND, "no execution %q", arn)
		}
		if err != nil {
			return nil, fmt.Errorf("execution %s: history: %w", arn, err)
		}
	}
	b, err := json.Marshal(hist)
	if err != nil {
		return nil, fmt.Errorf("execution %s: history: %w", arn, err)
	}
	return b, nil
}
