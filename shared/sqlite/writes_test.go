package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/stepfn"
)

func TestAppendNew(t *testing.T) {
	ctx := context.Background()
	fact := func(q, body string) ora.Entry {
		return ora.Entry{SignalID: "sig-batch", Kind: ora.KindObservedFact, Qualifier: q, Body: json.RawMessage(body)}
	}
	db := openDB(t)
	if _, err := db.Append(ctx, fact("job/00001", `{"first":true}`)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		entries   []ora.Entry
		wantN     int
		wantCode  string
		wantTotal int
	}{
		{"nothing", nil, 0, "", 1},
		{"new ones and one stored", []ora.Entry{fact("job/00000", `{"a":0}`), fact("job/00001", `{"second":true}`), fact("job/00002", `{"a":2}`)}, 2, "", 3},
		{"all stored: a re-run", []ora.Entry{fact("job/00000", `{"a":0}`), fact("job/00002", `{"a":2}`)}, 0, "", 3},
		{"one invalid writes nothing", []ora.Entry{fact("job/00003", `{"a":3}`), fact("job/00004", `not json`)}, 0, ora.EINVALID, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := db.AppendNew(ctx, tc.entries)
			if got := ora.ErrorCode(err); got != tc.wantCode && !(tc.wantCode == "" && err == nil) {
				t.Fatalf("AppendNew: %v (code %q), want code %q", err, got, tc.wantCode)
			}
			if n != tc.wantN {
				t.Errorf("written: got %d, want %d", n, tc.wantN)
			}
			all, err := db.Entries(ctx, "sig-batch")
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != tc.wantTotal {
				t.Errorf("entries: got %d, want %d", len(all), tc.wantTotal)
			}
			for _, e := range all {
				if e.Qualifier == "job/00001" && string(e.Body) != `{"first":true}` {
					t.Errorf("the stored entry was replaced: body %s", e.Body)
				}
			}
		})
	}
}

// TestWritersQueueInProcess checks that concurrent writers of one DB wait for
// each other in Go, not on the file lock: with a busy timeout of 1 ms none of
// them gets ETRANSIENT.
func TestWritersQueueInProcess(t *testing.T) {
	db := openDB(t, func(o *Options) { o.BusyTimeout = time.Millisecond })
	ctx := context.Background()
	const writers, each = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				e := ora.Entry{SignalID: fmt.Sprintf("sig-%d", w), Kind: ora.KindObservedFact, Qualifier: fmt.Sprint(i), Body: json.RawMessage(`{}`)}
				if _, err := db.Append(ctx, e); err != nil {
					errs <- err
				}
				if _, err := db.Entries(ctx, e.SignalID); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent write: %v", err)
	}
}

func TestExecutionDefinitionStoredOnce(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	s := NewExecutionStore(db)
	def := []byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`)
	for _, arn := range []string{"arn:one", "arn:two"} {
		rec := stepfn.ExecutionRecord{
			Execution:  stepfn.Execution{ExecutionArn: arn, Name: arn, Status: stepfn.StatusRunning, Input: json.RawMessage(`{}`)},
			Definition: def,
		}
		if err := s.CreateExecution(ctx, rec, nil); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			rec.Checkpoint = fmt.Appendf(nil, `{"step":%d}`, i)
			if err := s.SaveExecution(ctx, rec, []stepfn.HistoryEvent{{ID: int64(i + 1), Type: "PassStateEntered"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM stepfn_definitions`).Scan(&n); err != nil || n != 1 {
		t.Errorf("stored definitions: got %d, %v; want 1", n, err)
	}
	var typ, ref string
	if err := db.r.QueryRowContext(ctx, `SELECT typeof(definition), definition FROM stepfn_executions WHERE arn = 'arn:one'`).Scan(&typ, &ref); err != nil {
		t.Fatal(err)
	}
	if typ != "text" || !strings.HasPrefix(ref, "sha256:") {
		t.Errorf("the execution's definition column: got %s %q, want a text sha256: reference", typ, ref)
	}
	got, err := s.GetExecution(ctx, "arn:two")
	if err != nil || string(got.Definition) != string(def) || string(got.Checkpoint) != `{"step":2}` {
		t.Errorf("GetExecution: got definition %s checkpoint %s, %v; want %s and step 2", got.Definition, got.Checkpoint, err, def)
	}
}

// TestExecutionRowWithItsDefinition reads a row written before definitions
// were kept apart: the definition itself in the execution's row.
func TestExecutionRowWithItsDefinition(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ora.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	def := []byte(`{"StartAt":"Old","States":{"Old":{"Type":"Succeed"}}}`)
	desc, _ := json.Marshal(stepfn.Execution{ExecutionArn: "arn:old", Name: "old", Status: stepfn.StatusRunning})
	if _, err := db.w.ExecContext(ctx, `INSERT INTO stepfn_executions (arn, status, execution, definition, checkpoint)
		VALUES ('arn:old', ?, ?, ?, NULL)`, stepfn.StatusRunning, string(desc), def); err != nil {
		t.Fatal(err)
	}
	s := NewExecutionStore(db)
	got, err := s.GetExecution(ctx, "arn:old")
	if err != nil || string(got.Definition) != string(def) {
		t.Errorf("GetExecution: got %s, %v; want %s", got.Definition, err, def)
	}
	running, err := s.RunningExecutions(ctx)
	if err != nil || len(running) != 1 || string(running[0].Definition) != string(def) {
		t.Errorf("RunningExecutions: got %+v, %v; want the old row with its definition", running, err)
	}
}
