package stepfn

import "context"

// TaskInfo names the task a handler is invoked for: its execution's ARN and
// its state's name. Lambda has no such thing; the local engine hands it to
// handlers so that a wrapper (fault injection in `ora dev`, say) can act per
// state.
type TaskInfo struct {
	Execution string
	State     string
}

type taskInfoKey struct{}

// TaskInfoFrom returns the task a handler's ctx was invoked for, and whether
// the engine set one.
func TaskInfoFrom(ctx context.Context) (TaskInfo, bool) {
	ti, ok := ctx.Value(taskInfoKey{}).(TaskInfo)
	return ti, ok
}

// withTaskInfo returns ctx carrying the task c.
func withTaskInfo(ctx context.Context, c call) context.Context {
	return context.WithValue(ctx, taskInfoKey{}, TaskInfo{Execution: c.exec, State: c.state})
}
