package ledgertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// stageOf builds an act-shaped stage for decision id of signal: n evidence
// entries (bodies stamped with at) and the decision's move decided ->
// executing.
func stageOf(signal, id string, n int, at time.Time) ora.Stage {
	s := ora.Stage{Name: "act", Transitions: []ora.Transition{{DecisionID: id, From: ora.StatusDecided, To: ora.StatusExecuting, Reason: "claimed"}}}
	for i := range n {
		e := entry(signal, ora.KindExecutionEvidence, fmt.Sprintf("%05d", i), base, fmt.Sprintf(`{"index":%d,"at":%q}`, i, at.Format(time.RFC3339Nano)))
		e.AuthorType = ora.AuthorExecutor
		s.Entries = append(s.Entries, e)
	}
	return s
}

// recordFor records decision id of signal (status decided) and returns it.
func recordFor(t *testing.T, l ora.Ledger, signal, id string) {
	t.Helper()
	if _, err := l.RecordDecision(context.Background(), decision(id, signal)); err != nil {
		t.Fatalf("RecordDecision %s: %v", id, err)
	}
}

// kindCount counts the signal's entries of kind.
func kindCount(t *testing.T, l ora.Ledger, signal string, kind ora.EntryKind) int {
	t.Helper()
	es, err := l.Entries(context.Background(), signal)
	if err != nil && ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Fatalf("Entries(%s): %v", signal, err)
	}
	n := 0
	for _, e := range es {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func wantStatus(t *testing.T, l ora.Ledger, id string, status ora.DecisionStatus, version int) {
	t.Helper()
	st, err := l.Decision(context.Background(), id)
	if err != nil {
		t.Fatalf("Decision(%s): %v", id, err)
	}
	if st.Status != status || st.Version != version {
		t.Errorf("decision %s: got %s version %d, want %s version %d", id, st.Status, st.Version, status, version)
	}
}

// testStageCommitsAll commits entries and a transition and reads both back.
func testStageCommitsAll(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	recordFor(t, l, "sig-stage", "dec-stage")
	s := stageOf("sig-stage", "dec-stage", 3, base)
	got, err := l.Commit(ctx, s)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if got.Replayed || len(got.Entries) != 3 {
		t.Fatalf("Commit: replayed %v, %d entries; want a first commit of 3", got.Replayed, len(got.Entries))
	}
	stored, err := l.Entries(ctx, "sig-stage")
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	byQ := map[string]ora.Entry{}
	for _, e := range stored {
		byQ[string(e.Kind)+"/"+e.Qualifier] = e
	}
	for i, e := range got.Entries {
		sameEntry(t, fmt.Sprintf("entry %d", i), byQ[string(e.Kind)+"/"+e.Qualifier], e)
		if e.Digest != ora.Digest(s.Entries[i].Body) {
			t.Errorf("entry %d: digest %s, want the body's %s", i, e.Digest, ora.Digest(s.Entries[i].Body))
		}
	}
	wantStatus(t, l, "dec-stage", ora.StatusExecuting, 2)
}

// testStageConflictWritesNothing: one stored identity, or one decision not
// at From, leaves the whole stage unwritten and names what conflicted.
func testStageConflictWritesNothing(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	t.Run("entry", func(t *testing.T) {
		recordFor(t, l, "sig-stage-c1", "dec-stage-c1")
		s := stageOf("sig-stage-c1", "dec-stage-c1", 3, base)
		prior := entry("sig-stage-c1", ora.KindExecutionEvidence, "00001", base, `{"earlier":true}`)
		prior = mustAppend(t, l, prior)
		_, err := l.Commit(ctx, s)
		wantCode(t, "Commit over a stored entry", err, ora.ECONFLICT)
		got, ok := ora.Existing[ora.Entry](err)
		if !ok {
			t.Fatalf("the conflict carries no entry: %v", err)
		}
		sameEntry(t, "the conflicting entry", got, prior)
		if !strings.Contains(err.Error(), "entry 1") {
			t.Errorf("the error %q does not name entry 1", err)
		}
		if n := kindCount(t, l, "sig-stage-c1", ora.KindExecutionEvidence); n != 1 {
			t.Errorf("%d evidence entries stored, want only the earlier one", n)
		}
		wantStatus(t, l, "dec-stage-c1", ora.StatusDecided, 1)
	})
	t.Run("transition", func(t *testing.T) {
		recordFor(t, l, "sig-stage-c2", "dec-stage-c2")
		if _, err := l.TransitionDecision(ctx, "dec-stage-c2", ora.StatusDecided, ora.StatusAwaitingApproval, "low"); err != nil {
			t.Fatal(err)
		}
		_, err := l.Commit(ctx, stageOf("sig-stage-c2", "dec-stage-c2", 2, base))
		wantCode(t, "Commit of a decision not at From", err, ora.ECONFLICT)
		cur, ok := ora.Existing[ora.DecisionState](err)
		if !ok || cur.Status != ora.StatusAwaitingApproval {
			t.Fatalf("the conflict carries %+v (%v), want the decision awaiting approval", cur, ok)
		}
		if n := kindCount(t, l, "sig-stage-c2", ora.KindExecutionEvidence); n != 0 {
			t.Errorf("%d evidence entries stored, want none", n)
		}
		wantStatus(t, l, "dec-stage-c2", ora.StatusAwaitingApproval, 2)
	})
	t.Run("unknown decision", func(t *testing.T) {
		_, err := l.Commit(ctx, stageOf("sig-stage-c3", "dec-missing", 1, base))
		wantCode(t, "Commit of an unknown decision", err, ora.ENOTFOUND)
		if n := kindCount(t, l, "sig-stage-c3", ora.KindExecutionEvidence); n != 0 {
			t.Errorf("%d evidence entries stored, want none", n)
		}
	})
}

// testStageReplay: committing a stage again (a retry after a crash, its
// bodies stamped anew) writes nothing and answers with the first commit's
// entries.
func testStageReplay(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	recordFor(t, l, "sig-stage-r", "dec-stage-r")
	first, err := l.Commit(ctx, stageOf("sig-stage-r", "dec-stage-r", 2, base))
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	again, err := l.Commit(ctx, stageOf("sig-stage-r", "dec-stage-r", 2, base.Add(time.Minute)))
	if err != nil {
		t.Fatalf("Commit again: %v", err)
	}
	if !again.Replayed || len(again.Entries) != 2 {
		t.Fatalf("Commit again: replayed %v, %d entries; want a replay of 2", again.Replayed, len(again.Entries))
	}
	for i := range again.Entries {
		sameEntry(t, fmt.Sprintf("replayed entry %d", i), again.Entries[i], first.Entries[i])
	}
	if n := kindCount(t, l, "sig-stage-r", ora.KindExecutionEvidence); n != 2 {
		t.Errorf("%d evidence entries stored, want 2", n)
	}
	wantStatus(t, l, "dec-stage-r", ora.StatusExecuting, 2)
}

// testStageLimits: a stage over DynamoDB's transaction limits is refused
// whole, on every store alike.
func testStageLimits(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	tests := []struct {
		name  string
		stage ora.Stage
	}{
		{"too many writes", stageOf("sig-stage-l1", "dec-stage-l1", ora.MaxStageWrites, base)},
		{"too many bytes", func() ora.Stage {
			s := ora.Stage{Name: "fetch"}
			big := strings.Repeat("x", 340<<10)
			for i := range 10 {
				s.Entries = append(s.Entries, entry("sig-stage-l2", ora.KindObservedFact, fmt.Sprint(i), base, `{"v":"`+big+`"}`))
			}
			return s
		}()},
		{"no name", ora.Stage{Entries: []ora.Entry{entry("sig-stage-l3", ora.KindObservedFact, "a", base, `{}`)}}},
		{"an invalid entry", ora.Stage{Name: "x", Entries: []ora.Entry{
			entry("sig-stage-l4", ora.KindObservedFact, "a", base, `{}`),
			entry("sig-stage-l4", ora.KindObservedFact, "b", base, `not json`),
		}}},
		{"an identity twice", ora.Stage{Name: "x", Entries: []ora.Entry{
			entry("sig-stage-l5", ora.KindObservedFact, "a", base, `{}`),
			entry("sig-stage-l5", ora.KindObservedFact, "a", base, `{"b":1}`),
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.Commit(ctx, tt.stage)
			wantCode(t, "Commit", err, ora.EINVALID)
			for _, e := range tt.stage.Entries {
				if _, err := l.Entries(ctx, e.SignalID); ora.ErrorCode(err) != ora.ENOTFOUND {
					t.Fatalf("a refused stage wrote entries of %s: %v", e.SignalID, err)
				}
			}
		})
	}
}

// testStageConcurrent: racing commits of one stage write it once; the
// others replay it (or, on DynamoDB, may meet a transaction conflict:
// ETRANSIENT, nothing written).
func testStageConcurrent(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	recordFor(t, l, "sig-stage-x", "dec-stage-x")
	var (
		wg                       sync.WaitGroup
		mu                       sync.Mutex
		written, replayed, retry int
	)
	for i := range Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := l.Commit(ctx, stageOf("sig-stage-x", "dec-stage-x", 2, base.Add(time.Duration(i))))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && got.Replayed:
				replayed++
			case err == nil:
				written++
			case ora.ErrorCode(err) == ora.ETRANSIENT:
				retry++
			default:
				t.Errorf("Commit: %v", err)
			}
		}()
	}
	wg.Wait()
	if written != 1 || written+replayed+retry != Concurrency {
		t.Errorf("%d wrote, %d replayed, %d transient; want exactly one writer", written, replayed, retry)
	}
	if n := kindCount(t, l, "sig-stage-x", ora.KindExecutionEvidence); n != 2 {
		t.Errorf("%d evidence entries stored, want 2", n)
	}
	wantStatus(t, l, "dec-stage-x", ora.StatusExecuting, 2)
}

// testStageOneWrite: a stage of one entry or one transition answers as a
// larger one (a store may write it without a transaction).
func testStageOneWrite(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	e := entry("sig-stage-1", ora.KindFinalVerdict, "", base, `{"outcome":"completed"}`)
	first, err := l.Commit(ctx, ora.Stage{Name: "record", Entries: []ora.Entry{e}})
	if err != nil || first.Replayed {
		t.Fatalf("Commit of one entry: replayed %v, %v; want written", first.Replayed, err)
	}
	again := entry("sig-stage-1", ora.KindFinalVerdict, "", base, `{"outcome":"failed"}`)
	got, err := l.Commit(ctx, ora.Stage{Name: "record", Entries: []ora.Entry{again}})
	if err != nil || !got.Replayed || len(got.Entries) != 1 {
		t.Fatalf("Commit of one stored entry: %+v, %v; want a replay", got, err)
	}
	sameEntry(t, "the replayed entry", got.Entries[0], first.Entries[0])

	recordFor(t, l, "sig-stage-1", "dec-stage-1")
	move := ora.Stage{Name: "escalate", Transitions: []ora.Transition{{DecisionID: "dec-stage-1", From: ora.StatusDecided, To: ora.StatusAwaitingApproval}}}
	for i, want := range []bool{false, true} {
		got, err := l.Commit(ctx, move)
		if err != nil || got.Replayed != want {
			t.Fatalf("Commit of one transition, %d: replayed %v, %v; want %v", i, got.Replayed, err, want)
		}
	}
	wantStatus(t, l, "dec-stage-1", ora.StatusAwaitingApproval, 2)
	_, err = l.Commit(ctx, ora.Stage{Name: "act", Transitions: []ora.Transition{{DecisionID: "dec-stage-1", From: ora.StatusDecided, To: ora.StatusExecuting}}})
	wantCode(t, "Commit of a transition from another status", err, ora.ECONFLICT)
	if cur, ok := ora.Existing[ora.DecisionState](err); !ok || cur.Status != ora.StatusAwaitingApproval {
		t.Errorf("the conflict carries %+v (%v), want the decision awaiting approval", cur, ok)
	}
	_, err = l.Commit(ctx, ora.Stage{Name: "act", Transitions: []ora.Transition{{DecisionID: "dec-missing-1", From: ora.StatusDecided, To: ora.StatusExecuting}}})
	wantCode(t, "Commit of an unknown decision", err, ora.ENOTFOUND)
}
