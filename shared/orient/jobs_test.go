package orient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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
	// Staged: the expired wave's jobs are gone, the recent ones are there.
	for id, want := range map[string]bool{"sig-1": false, "sig-2": true} {
		if got, err := f.Staged(ctx, id); err != nil || got != want {
			t.Errorf("Staged(%s): %v %v, want %v", id, got, err, want)
		}
	}
}

// S3Staged heads the jobs object through the real SDK: 200 is staged, 404
// (NotFound) is not, anything else is a transient error.
func TestS3Staged(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method != http.MethodHead:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case r.URL.Path == "/jobs/"+JobsKey("here"):
			w.Header().Set("Content-Length", "2")
			w.WriteHeader(http.StatusOK)
		case r.URL.Path == "/jobs/"+JobsKey("broken"):
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials:      credentials.NewStaticCredentialsProvider("k", "s", ""),
		RetryMaxAttempts: 1,
	})
	st := S3Staged{Client: client, Bucket: "jobs"}
	cases := []struct {
		id   string
		want bool
		code string
	}{
		{"here", true, ""},
		{"expired", false, ""},
		{"broken", false, ora.ETRANSIENT},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			got, err := st.Staged(context.Background(), tc.id)
			if got != tc.want || ora.ErrorCode(err) != tc.code {
				t.Errorf("got %v, %v; want %v, code %q", got, err, tc.want, tc.code)
			}
		})
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
