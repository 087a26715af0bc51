package stepfn

import "context"

// TaskFailure is an error an integration handler returns to fail its task
// with exactly this error name and cause, as a service integration does (a
// Step Functions child that failed: States.TaskFailed with the child's
// DescribeExecution as the cause), rather than with the {"errorMessage",
// "errorType"} cause of a Lambda function error.
type TaskFailure struct {
	Name  string // the error name Retry and Catch match
	Cause string // the cause, as given
}

func (f *TaskFailure) Error() string { return f.Name + ": " + f.Cause }

// Forget drops a finished execution and its history from the store, so a
// store holding short-lived executions (an Express child run in memory) does
// not grow. A running or unknown execution is left alone; it reports whether
// the execution was dropped.
func (s *MemoryStore) Forget(_ context.Context, execArn string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[execArn]
	if !ok || rec.Status == StatusRunning {
		return false
	}
	delete(s.records, execArn)
	delete(s.history, execArn)
	return true
}

// TakeHistory removes a finished execution from the store, as Forget does,
// and returns its history; false when the execution is not there or still
// running. The events are rendered only when Events is called, so a caller
// that keeps recent histories in case someone looks pays for rendering
// only those looked at.
func (s *MemoryStore) TakeHistory(_ context.Context, execArn string) (*TakenHistory, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[execArn]
	h := s.history[execArn]
	if !ok || rec.Status == StatusRunning || h == nil {
		return nil, false
	}
	delete(s.records, execArn)
	delete(s.history, execArn)
	return &TakenHistory{h: h}, true
}

// TakenHistory is a finished execution's history taken out of a MemoryStore
// (TakeHistory).
type TakenHistory struct{ h *memHistory }

// Events returns the events as GetExecutionHistory would have.
func (t *TakenHistory) Events() []HistoryEvent { return t.h.all() }

// StatesEntered returns the names of the states the execution entered, in
// order, without rendering the events.
func (t *TakenHistory) StatesEntered() []string {
	var names []string
	t.h.each(func(ev *storedEvent) {
		switch {
		case ev.kind == evStateEntered:
			names = append(names, ev.st.name)
		case ev.kind == evFull:
			if full, ok := ev.val.(*HistoryEvent); ok && full.StateEnteredEventDetails != nil {
				names = append(names, full.StateEnteredEventDetails.Name)
			}
		}
	})
	return names
}

// WaitFromTask is Wait for a caller that is itself a task handler of an
// engine on the same clock (a Step Functions integration that runs a child
// execution): it counts the caller idle while it waits, so that a
// VirtualClock can advance the child's retries and waits.
func (e *Engine) WaitFromTask(ctx context.Context, execArn string) (Execution, error) {
	e.mu.Lock()
	x := e.live[execArn]
	e.mu.Unlock()
	if x != nil {
		e.clk.idle()
		select {
		case <-x.done:
		case <-ctx.Done():
		}
		e.clk.busy()
		if ctx.Err() != nil {
			return Execution{}, ctx.Err()
		}
	}
	return e.DescribeExecution(ctx, execArn)
}
