package stepfn

import (
	"context"
	"testing"
)

// A handler sees the state it is invoked for.
func TestTaskInfo(t *testing.T) {
	if _, ok := TaskInfoFrom(context.Background()); ok {
		t.Error("a bare context carries task info")
	}
	got, ok := TaskInfoFrom(withTaskInfo(context.Background(), call{exec: "arn:x", state: "Act"}))
	if !ok || got.State != "Act" || got.Execution != "arn:x" {
		t.Errorf("got %+v %v, want Act of arn:x", got, ok)
	}
}

type otherKey struct{}

// The task's context still carries what its parent did, and a value added
// over it does not hide the task.
func TestTaskInfoKeepsParentValues(t *testing.T) {
	parent := context.WithValue(context.Background(), otherKey{}, "kept")
	ctx := context.WithValue(withTaskInfo(parent, call{exec: "arn:y", state: "Plan"}), otherKey{}, "over")
	if got, _ := ctx.Value(otherKey{}).(string); got != "over" {
		t.Errorf("value = %q, want over", got)
	}
	if got, ok := TaskInfoFrom(ctx); !ok || got.State != "Plan" {
		t.Errorf("task info = %+v %v, want Plan", got, ok)
	}
	if got, _ := withTaskInfo(parent, call{}).Value(otherKey{}).(string); got != "kept" {
		t.Errorf("parent value = %q, want kept", got)
	}
}
