package embedded

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/stepfn"
)

// ExecutionHistory returns a child execution's history (the console draws
// the wave's children with it). Errors: ENOTFOUND, and the engine's.
func (w waves) ExecutionHistory(ctx context.Context, arn string) ([]byte, error) {
	hist, err := w.r.engine.GetExecutionHistory(ctx, arn)
	if stepfn.ErrorCode(err) == stepfn.CodeExecutionDoesNotExist || stepfn.ErrorCode(err) == stepfn.CodeInvalidArn {
		return nil, ora.Errorf(ora.ENOTFOUND, "no execution %q", arn)
	}
	if err != nil {
		return nil, fmt.Errorf("execution %s: history: %w", arn, err)
	}
	b, err := json.Marshal(hist)
	if err != nil {
		return nil, fmt.Errorf("execution %s: history: %w", arn, err)
	}
	return b, nil
}
