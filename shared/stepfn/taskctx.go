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
	if ti, ok := ctx.Value(taskInfoKey{}).(*TaskInfo); ok {
		return *ti, true
	}
	return TaskInfo{}, false
}

// taskCtx is a context carrying a TaskInfo: one allocation, where
// context.WithValue takes two (the value boxed, and the context).
type taskCtx struct {
	context.Context
	info TaskInfo
	sub  *submitter // a .sync startExecution task's, else nil
}

func (c *taskCtx) Value(key any) any {
	switch key {
	case taskInfoKey{}:
		return &c.info
	case submitterKey{}:
		return c.sub // nil for any other task: a parent task's never shows through
	}
	return c.Context.Value(key)
}

// withTaskInfo returns ctx carrying the task c.
func withTaskInfo(ctx context.Context, c call) context.Context {
	return &taskCtx{Context: ctx, info: TaskInfo{Execution: c.exec, State: c.state}, sub: c.sub}
}
