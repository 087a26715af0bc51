package handler

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/sqlite"
)

var at = time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)

func appendEntry(t *testing.T, db *sqlite.DB, id string, kind ora.EntryKind, body any, created time.Time) {
	t.Helper()
	e, err := ora.NewEntry(id, kind, "", body)
	if err != nil {
		t.Fatal(err)
	}
	e.CreatedAt = created
	if _, err := db.Append(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

func signal(id string, at time.Time) ora.NormalizedSignal {
	raw := []byte(`{"confidence":"high"}`)
	return ora.NormalizedSignal{
		ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: "test", Provider: "test"},
		Timestamp: at, NormalizedAt: at, Payload: raw, DedupKey: "d-" + id, RawDigest: ora.Digest(raw),
	}
}

func TestHandle(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	for i, id := range []string{"earlier-1", "earlier-2"} {
		created := at.Add(-time.Duration(i+1) * time.Minute)
		appendEntry(t, db, id, ora.KindSignalReceived, signal(id, created), created)
		appendEntry(t, db, id, ora.KindFinalVerdict, map[string]string{"final": "completed"}, created.Add(time.Second))
	}
	appendEntry(t, db, "sig-1", ora.KindSignalReceived, signal("sig-1", at), at)
	jobs := map[orient.JobKind]orient.Job{}
	for _, j := range orient.Plan(signal("sig-1", at)) {
		jobs[j.Kind] = j
	}
	h := lambda.NewHandler(Handler{Fetcher: orient.NewFetcher(db)}.Handle)
	payload := func(t *testing.T, job any) []byte {
		t.Helper()
		b, err := json.Marshal(map[string]any{"signal_id": "sig-1", "job": job, "plan": map[string]any{"jobs": []any{}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	tests := []struct {
		name string
		job  orient.Job
		want Output
	}{
		{"workspace state", jobs[orient.JobWorkspaceState], Output{JobID: "workspace-state", Jobs: 1, Facts: 2}},
		{"actor history", jobs[orient.JobActorHistory], Output{JobID: "actor-history", Jobs: 1, Facts: 2}},
		{"recent actions, none", jobs[orient.JobRecentActions], Output{JobID: "recent-actions", Jobs: 1, Facts: 0}},
		{"open commitments, none", jobs[orient.JobOpenCommitments], Output{JobID: "open-commitments", Jobs: 1, Facts: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for run := range 2 { // the second run is a retry and must be harmless
				out, err := h.Invoke(ctx, payload(t, tt.job))
				if err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				var got Output
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatal(err)
				}
				if got != tt.want {
					t.Errorf("run %d: got %+v, want %+v", run, got, tt.want)
				}
			}
		})
	}
	entries, err := db.Entries(ctx, "sig-1")
	if err != nil {
		t.Fatal(err)
	}
	facts, err := orient.FactsOf(entries)
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 4 {
		t.Errorf("the wave holds %d observed facts, want 4", len(facts))
	}

	t.Run("a batch of the Distributed Map's ItemBatcher runs every job", func(t *testing.T) {
		items := []map[string]any{}
		for _, k := range orient.JobKinds {
			items = append(items, map[string]any{"job": jobs[k]})
		}
		b, _ := json.Marshal(map[string]any{"BatchInput": map[string]any{"signal_id": "sig-1"}, "Items": items})
		out, err := h.Invoke(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		var got Output
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if want := (Output{Jobs: 4, Facts: 4}); got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})

	bad := []struct {
		name    string
		payload []byte
	}{
		{"a batch without its signal id", []byte(`{"BatchInput":{},"Items":[{"job":{"id":"x"}}]}`)},
		{"a batch item without a job", []byte(`{"BatchInput":{"signal_id":"sig-1"},"Items":[{"job":null}]}`)},
		{"no signal id", []byte(`{"job":{"id":"x"}}`)},
		{"no job", []byte(`{"signal_id":"sig-1"}`)},
		{"unknown kind", payload(t, map[string]any{"id": "x", "kind": "everything", "params": map[string]any{"as_of": at, "limit": 5}})},
		{"no limit", payload(t, map[string]any{"id": "x", "kind": "open-commitments", "params": map[string]any{"as_of": at}})},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.Invoke(ctx, tt.payload)
			if got := errorType(err); got != "InvalidInput" {
				t.Errorf("got %s (%v), want InvalidInput", got, err)
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

// fetcherFunc is a Fetcher with its behaviour in a function field.
type fetcherFunc func(ctx context.Context, signalID string, jobs []orient.Job) (int, error)

func (f fetcherFunc) FetchBatch(ctx context.Context, signalID string, jobs []orient.Job) (int, error) {
	return f(ctx, signalID, jobs)
}

// A failed batch's error keeps its kind and names the batch's jobs and
// families, which the operator reads into the incident.
func TestHandleNamesTheFailedJobs(t *testing.T) {
	cases := []struct {
		name string
		err  error
		typ  string
	}{
		{"a ledger read that kept failing", ora.Errorf(ora.ETRANSIENT, "database is locked"), "TransientError"},
		{"anything else", ora.Errorf(ora.EINTERNAL, "boom"), "InternalError"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Handler{Fetcher: fetcherFunc(func(context.Context, string, []orient.Job) (int, error) { return 0, tc.err })}
			in := Input{BatchInput: &struct {
				SignalID string `json:"signal_id"`
			}{"sig-1"}}
			for _, j := range []orient.Job{{ID: "recent-actions", Kind: orient.JobRecentActions}, {ID: "web.00003", Family: "http", Kind: "get"}} {
				in.Items = append(in.Items, struct {
					Job *orient.Job `json:"job"`
				}{&j})
			}
			_, err := h.Handle(context.Background(), in)
			if got := errorType(err); got != tc.typ {
				t.Fatalf("got %s (%v), want %s", got, err, tc.typ)
			}
			var got []string
			for _, j := range operate.FailedJobsOf(err.Error()) {
				got = append(got, j.ID+" "+j.Family)
			}
			if want := []string{"recent-actions ledger", "web.00003 http"}; !reflect.DeepEqual(got, want) {
				t.Errorf("named jobs: got %v, want %v (error %q)", got, want, err)
			}
		})
	}
}
