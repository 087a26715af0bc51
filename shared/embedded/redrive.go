package embedded

import (
	"context"
	"fmt"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/stepfn"
)

// redriver redrives waves on the local engine, as Step Functions'
// RedriveExecution does on AWS (operate.Redriver).
type redriver struct{ r *Runtime }

// Redrive restarts the wave's FAILED, TIMED_OUT or ABORTED execution at the
// state that did not finish. Errors: ENOTFOUND, ECONFLICT (RUNNING or
// SUCCEEDED, named), EINTERNAL.
func (d redriver) Redrive(ctx context.Context, waveID string) error {
	arn := d.r.executionArn(waveID)
	err := d.r.engine.RedriveExecution(ctx, arn)
	switch stepfn.ErrorCode(err) {
	case "":
		return nil
	case stepfn.CodeExecutionDoesNotExist:
		return ora.Errorf(ora.ENOTFOUND, "wave %s has no execution", waveID)
	case stepfn.CodeExecutionNotRedrivable:
		status := "not redrivable"
		if x, derr := d.r.engine.DescribeExecution(ctx, arn); derr == nil {
			status = x.Status
		}
		return ora.Conflict(nil, "wave %s cannot be redriven: its execution is %s (only a FAILED, TIMED_OUT or ABORTED wave can be)", waveID, status)
	}
	return fmt.Errorf("embedded: redrive %s: %w", waveID, err)
}
