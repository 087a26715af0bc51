package stepfn

import (
	"context"
	"encoding/json"
	"time"
)

// submitter emits the TaskSubmitted event of one states:startExecution.sync
// (or .sync:2) task while its handler runs: Step Functions records the
// child's StartExecution answer there, and its ExecutionArn is what links
// the parent's history (and the console) to the child's execution. It is
// open until the task's call returns; both sides take the execution's lock.
type submitter struct {
	f                  *frame
	resourceType, name string
	open               bool
}

// submit emits TaskSubmitted with output, once, while the task still waits
// on its call.
func (s *submitter) submit(output []byte) {
	if s == nil || !json.Valid(output) {
		return
	}
	v, _ := parseJSON(output)
	x := s.f.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if !s.open {
		return
	}
	s.open = false
	x.markDirty(s.f.part)
	s.f.last = x.emitLocked(s.f.last, fullEvent(HistoryEvent{Type: "TaskSubmitted",
		TaskSubmittedEventDetails: &TaskOutputDetails{ResourceType: s.resourceType, Resource: s.name, Output: compactJSON(v)}}))
}

// close ends the window in which submit emits: the task's call returned.
func (s *submitter) close() {
	if s == nil {
		return
	}
	s.f.x.mu.Lock()
	s.open = false
	s.f.x.mu.Unlock()
}

// TaskSubmitted records in the parent's history that the child execution a
// states:startExecution.sync or .sync:2 task started is running: the handler
// of such a task calls it with the ctx it was given and the child's
// StartExecution answer ({"ExecutionArn": ..., "StartDate": ...}), and the
// engine emits the TaskSubmitted event Step Functions emits there. It does
// nothing for a ctx of any other task, or after the first call.
func TaskSubmitted(ctx context.Context, output []byte) {
	if s, ok := ctx.Value(submitterKey{}).(*submitter); ok {
		s.submit(output)
	}
}

type submitterKey struct{}

// SubmittedOutput is the TaskSubmitted output of a states:startExecution.sync
// task that started the execution execArn at start: StartExecution's answer
// as Step Functions records it (the start date in epoch milliseconds).
func SubmittedOutput(execArn string, start time.Time) []byte {
	return marshal(map[string]any{"ExecutionArn": execArn, "StartDate": start.UnixMilli()})
}
