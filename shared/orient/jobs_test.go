package orient

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

func TestJobFolder(t *testing.T) {
	ctx := context.Background()
	f := JobFolder{Dir: t.TempDir(), Bucket: "jobs"}
	bucket, err := f.PutJobs(ctx, JobsKey("sig-1"), []byte(`[{"id":"a"}]`))
	if err != nil || bucket != "jobs" {
		t.Fatalf("PutJobs: %q %v", bucket, err)
	}
	got, err := f.GetObject(ctx, "jobs", "waves/sig-1/jobs.json")
	if err != nil || string(got) != `[{"id":"a"}]` {
		t.Errorf("GetObject: %s %v", got, err)
	}
	if _, err := f.GetObject(ctx, "jobs", "waves/nope/jobs.json"); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("a missing object: %v, want ENOTFOUND", err)
	}
	for _, tt := range []struct{ bucket, key string }{
		{"jobs", "../../etc/passwd"}, {"jobs", "/abs"}, {"jobs", ""}, {"..", "x"}, {"a/b", "x"},
	} {
		if _, err := f.GetObject(ctx, tt.bucket, tt.key); ora.ErrorCode(err) != ora.EINVALID {
			t.Errorf("GetObject(%q, %q): %v, want EINVALID", tt.bucket, tt.key, err)
		}
	}
	if _, err := f.PutJobs(ctx, "../escape.json", []byte(`[]`)); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("PutJobs outside the bucket: %v, want EINVALID", err)
	}
	// Expire removes what is older than the retention, nothing else.
	old := filepath.Join(f.Dir, "jobs", "waves", "sig-1", "jobs.json")
	past := time.Now().Add(-10 * 24 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	if _, err := f.PutJobs(ctx, JobsKey("sig-2"), []byte(`[]`)); err != nil {
		t.Fatal(err)
	}
	n, err := f.Expire(7*24*time.Hour, time.Now())
	if err != nil || n != 1 {
		t.Errorf("Expire: %d %v, want 1 removed", n, err)
	}
	if _, err := f.GetObject(ctx, "jobs", JobsKey("sig-2")); err != nil {
		t.Errorf("the recent jobs were removed: %v", err)
	}
}

func TestBatchSize(t *testing.T) {
	tests := []struct {
		budget    time.Duration
		timeoutMS int
		want      int
	}{
		{50 * time.Second, 10000, 5},
		{50 * time.Second, 1000, 50},
		{50 * time.Second, 100, MaxBatchSize},
		{50 * time.Second, 60000, 1},
		{50 * time.Second, 0, 5}, // the default job timeout
	}
	for _, tt := range tests {
		if got := batchSize(tt.budget, tt.timeoutMS); got != tt.want {
			t.Errorf("batchSize(%v, %d) = %d, want %d", tt.budget, tt.timeoutMS, got, tt.want)
		}
	}
}
