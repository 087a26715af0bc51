package handler

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/sqlite"
)

func ledgerWithSignal(t *testing.T, id string, at time.Time) *sqlite.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	raw := []byte(`{"confidence":"high"}`)
	sig := ora.NormalizedSignal{
		ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: "test", Provider: "test"},
		Timestamp: at, NormalizedAt: at, Payload: raw, DedupKey: "d-" + id, RawDigest: ora.Digest(raw),
	}
	e, err := ora.NewEntry(id, ora.KindSignalReceived, "", sig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestHandle(t *testing.T) {
	at := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	db := ledgerWithSignal(t, "sig-1", at)
	store := orient.JobFolder{Dir: t.TempDir(), Bucket: "jobs"}
	h := lambda.NewHandler(Handler{Planner: orient.NewPlanner(db, func(o *orient.Options) { o.Jobs = store })}.Handle)

	t.Run("plans the four jobs, writes them to the job store, ignoring other fields", func(t *testing.T) {
		out, err := h.Invoke(context.Background(), []byte(`{"signal_id":"sig-1","escalation_timeout_seconds":86400}`))
		if err != nil {
			t.Fatal(err)
		}
		var got Output
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		// 10 s job timeout (the default profile): 5 fit in the 50 s budget.
		if got.JobsBucket != "jobs" || got.JobsKey != "waves/sig-1/jobs.json" || got.JobCount != 4 || got.BatchSize != 5 {
			t.Errorf("got %s, want the jobs at jobs/waves/sig-1/jobs.json, 4 of them, in batches of 5", out)
		}
		body, err := store.GetObject(context.Background(), got.JobsBucket, got.JobsKey)
		if err != nil {
			t.Fatal(err)
		}
		var jobs []orient.Job
		if err := json.Unmarshal(body, &jobs); err != nil {
			t.Fatal(err)
		}
		want := []string{"open-commitments", "recent-actions", "workspace-state", "actor-history"}
		if len(jobs) != len(want) {
			t.Fatalf("got %d jobs, want %d: %s", len(jobs), len(want), body)
		}
		for i, j := range jobs {
			if j.ID != want[i] || string(j.Kind) != want[i] || !j.Params.AsOf.Equal(at) {
				t.Errorf("job %d: got %+v, want id and kind %s as of %v", i, j, want[i], at)
			}
		}
		again, err := h.Invoke(context.Background(), []byte(`{"signal_id":"sig-1"}`))
		if err != nil || string(again) != string(out) {
			t.Errorf("a second run differs: %s, %v", again, err)
		}
	})

	tests := []struct {
		name    string
		payload string
		want    string
	}{
		{"missing signal id", `{}`, "InvalidInput"},
		{"unknown signal", `{"signal_id":"nope"}`, "NotFound"},
	}
	t.Run("no job store", func(t *testing.T) {
		_, err := lambda.NewHandler(Handler{Planner: orient.NewPlanner(db)}.Handle).Invoke(context.Background(), []byte(`{"signal_id":"sig-1"}`))
		if got := errorType(err); got != "InvalidInput" {
			t.Errorf("got %s (%v), want InvalidInput", got, err)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.Invoke(context.Background(), []byte(tt.payload))
			if got := errorType(err); got != tt.want {
				t.Errorf("got %s (%v), want %s", got, err, tt.want)
			}
		})
	}
}

// errorType is the name Step Functions sees for err (aws-lambda-go reports
// the element type's name for a pointer).
func errorType(err error) string {
	if err == nil {
		return "<nil>"
	}
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
