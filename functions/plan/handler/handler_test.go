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
	h := lambda.NewHandler(Handler{Planner: orient.NewPlanner(db)}.Handle)

	t.Run("plans the four jobs, ignoring other fields", func(t *testing.T) {
		out, err := h.Invoke(context.Background(), []byte(`{"signal_id":"sig-1","escalation_timeout_seconds":86400}`))
		if err != nil {
			t.Fatal(err)
		}
		var got Output
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		want := []string{"open-commitments", "recent-actions", "workspace-state", "actor-history"}
		if len(got.Jobs) != len(want) {
			t.Fatalf("got %d jobs, want %d: %s", len(got.Jobs), len(want), out)
		}
		for i, j := range got.Jobs {
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
