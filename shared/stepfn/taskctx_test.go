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
