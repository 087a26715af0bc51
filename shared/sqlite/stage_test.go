package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// TestCommitCrashWithinTheTransaction fails a stage inside its transaction,
// after every insert and update ran and before COMMIT (as a crash there
// would leave it: SQLite rolls back what was never committed): nothing of
// the stage is stored. The retried stage commits once; a retry after that
// commit (its answer lost) replays it.
func TestCommitCrashWithinTheTransaction(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	d := ora.ReasonerDecision{ID: "d1", SignalID: "s1", ActionType: "notify", Parameters: json.RawMessage(`{}`),
		Confidence: 0.9, Reasoning: "r", AuthorType: ora.AuthorArchitect, Scope: ora.Scope{AllowedOperations: []string{"notify"}},
		Tier: 1, Timestamp: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)}
	if _, err := db.RecordDecision(ctx, d); err != nil {
		t.Fatal(err)
	}
	stage := ora.Stage{Name: "act", Transitions: []ora.Transition{{DecisionID: "d1", From: ora.StatusDecided, To: ora.StatusExecuting}}}
	for _, q := range []string{"0", "1"} {
		stage.Entries = append(stage.Entries, ora.NewEntryJSON("s1", ora.KindExecutionEvidence, q, []byte(`{"index":`+q+`}`)))
	}
	crash := errors.New("crash before COMMIT")
	ran := 0
	db.beforeCommit = func(s ora.Stage) error { ran++; return crash }
	if _, err := db.Commit(ctx, stage); !errors.Is(err, crash) {
		t.Fatalf("Commit with a crash: got %v, want the crash", err)
	}
	if ran != 1 {
		t.Fatalf("the crash ran %d times, want 1", ran)
	}
	count := func() int {
		es, err := db.EntriesOfKinds(ctx, "s1", ora.KindExecutionEvidence)
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	status := func() ora.DecisionStatus {
		st, err := db.Decision(ctx, "d1")
		if err != nil {
			t.Fatal(err)
		}
		return st.Status
	}
	if n, st := count(), status(); n != 0 || st != ora.StatusDecided {
		t.Fatalf("after the crash: %d evidence entries, decision %s; want 0 and decided", n, st)
	}
	db.beforeCommit = nil
	for i, want := range []bool{false, true} {
		got, err := db.Commit(ctx, stage)
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		if got.Replayed != want {
			t.Errorf("commit %d: replayed %v, want %v", i, got.Replayed, want)
		}
	}
	if n, st := count(), status(); n != 2 || st != ora.StatusExecuting {
		t.Fatalf("after the retries: %d evidence entries, decision %s; want 2 and executing", n, st)
	}
}
