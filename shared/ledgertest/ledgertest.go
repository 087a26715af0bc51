// Package ledgertest is the one contract suite every ora.Ledger and
// ora.Debouncer adapter runs: shared/sqlite against a file in t.TempDir(),
// shared/dynamo against DynamoDB Local. An adapter's test calls
//
//	ledgertest.Run(t, func(t *testing.T) ora.Ledger { return newLedger(t) })
//	ledgertest.RunDebounce(t, func(t *testing.T, now func() time.Time) ora.Debouncer { ... })
//
// Each subtest asks the factory for a fresh, empty store, so queries that span
// signals (Recent, OpenCommitments) see only what that subtest wrote.
package ledgertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Concurrency is how many goroutines race for one write in the concurrency tests.
const Concurrency = 50

// base is a fixed instant every test's timestamps are built from, so results
// never depend on the wall clock.
var base = time.Date(2026, 3, 14, 9, 26, 53, 589793000, time.UTC)

// Run runs the ledger contract against the stores newLedger returns; it calls
// newLedger once per subtest and expects an empty store each time.
func Run(t *testing.T, newLedger func(t *testing.T) ora.Ledger) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, ora.Ledger)
	}{
		{"AppendThenEntriesInOrder", testAppendThenEntries},
		{"AppendKeepsBodyBytes", testAppendKeepsBodyBytes},
		{"AppendFillsDigestAndCreatedAt", testAppendFills},
		{"AppendKeepsExpiresAtAndMeta", testAppendExpiresAndMeta},
		{"AppendTwiceConflicts", testAppendTwiceConflicts},
		{"AppendInvalidWritesNothing", testAppendInvalid},
		{"AppendConcurrentOneWins", testAppendConcurrent},
		{"EntriesNotFound", testEntriesNotFound},
		{"RecentNewestFirstInRange", testRecent},
		{"RecentInvalid", testRecentInvalid},
		{"RecordDecision", testRecordDecision},
		{"RecordDecisionTwiceConflicts", testRecordDecisionTwice},
		{"RecordDecisionInvalidWritesNothing", testRecordDecisionInvalid},
		{"DecisionNotFound", testDecisionNotFound},
		{"TransitionAlongEdges", testTransitionAlongEdges},
		{"TransitionRejected", testTransitionRejected},
		{"TransitionConcurrentOneWins", testTransitionConcurrent},
		{"RetentionSetsExpiresAt", testRetention},
		{"AppendNewWritesOnlyNew", testAppendNew},
		{"FactsAndPacketsKeepTheirBytes", testFactsKeepBytes},
		{"Commitments", testCommitments},
		{"CommitmentErrors", testCommitmentErrors},
		{"OrientationProfileVersions", testOrientationProfileVersions},
		{"StageCommitsAll", testStageCommitsAll},
		{"StageConflictWritesNothing", testStageConflictWritesNothing},
		{"StageReplayWritesNothing", testStageReplay},
		{"StageLimitsRefusedWhole", testStageLimits},
		{"StageConcurrentOneWrites", testStageConcurrent},
		{"StageOfOneWrite", testStageOneWrite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newLedger(t))
		})
	}
}

// entry builds a valid observed-fact entry (a kind without a body schema).
func entry(signal string, kind ora.EntryKind, qualifier string, at time.Time, body string) ora.Entry {
	return ora.Entry{
		SignalID:   signal,
		Kind:       kind,
		Qualifier:  qualifier,
		AuthorType: ora.AuthorObserver,
		Body:       json.RawMessage(body),
		Digest:     ora.Digest([]byte(body)),
		CreatedAt:  at,
	}
}

// decision builds a valid reasoner decision.
func decision(id, signal string) ora.ReasonerDecision {
	return ora.ReasonerDecision{
		ID:         id,
		SignalID:   signal,
		ActionType: "comment",
		Parameters: json.RawMessage(`{"text":"hello"}`),
		Confidence: 0.9,
		Reasoning:  "the rule matched",
		AuthorType: ora.AuthorArchitect,
		Scope:      ora.Scope{AllowedOperations: []string{"comment"}},
		Tier:       1,
		Timestamp:  base,
	}
}

func mustAppend(t *testing.T, l ora.Ledger, e ora.Entry) ora.Entry {
	t.Helper()
	got, err := l.Append(context.Background(), e)
	if err != nil {
		t.Fatalf("Append(%s/%s/%s): %v", e.SignalID, e.Kind, e.Qualifier, err)
	}
	return got
}

// sameEntry compares two entries field by field, times by instant.
func sameEntry(t *testing.T, what string, got, want ora.Entry) {
	t.Helper()
	if got.SignalID != want.SignalID || got.Kind != want.Kind || got.Qualifier != want.Qualifier ||
		got.AuthorType != want.AuthorType || got.Digest != want.Digest {
		t.Errorf("%s: got %s/%s/%q author %q digest %s, want %s/%s/%q author %q digest %s", what,
			got.SignalID, got.Kind, got.Qualifier, got.AuthorType, got.Digest,
			want.SignalID, want.Kind, want.Qualifier, want.AuthorType, want.Digest)
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Errorf("%s: body got %s, want %s", what, got.Body, want.Body)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("%s: created_at got %v, want %v", what, got.CreatedAt, want.CreatedAt)
	}
	if (got.ExpiresAt == nil) != (want.ExpiresAt == nil) || (got.ExpiresAt != nil && !got.ExpiresAt.Equal(*want.ExpiresAt)) {
		t.Errorf("%s: expires_at got %v, want %v", what, got.ExpiresAt, want.ExpiresAt)
	}
	if len(got.Meta) != 0 || len(want.Meta) != 0 {
		if !reflect.DeepEqual(got.Meta, want.Meta) {
			t.Errorf("%s: meta got %v, want %v", what, got.Meta, want.Meta)
		}
	}
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := ora.ErrorCode(err); got != code {
		t.Fatalf("%s: error code got %q (%v), want %q", what, got, err, code)
	}
}

func testAppendThenEntries(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	// Written out of order: Entries sorts by created_at, then kind rank, then qualifier.
	in := []ora.Entry{
		entry("sig-order", ora.KindFinalVerdict, "", base.Add(3*time.Second), `{"n":6}`),
		entry("sig-order", ora.KindObservedFact, "job-b", base.Add(time.Second), `{"n":3}`),
		entry("sig-order", ora.KindOrientationPacket, "", base.Add(time.Second), `{"n":4}`),
		entry("sig-order", ora.KindObservedFact, "job-a", base.Add(time.Second), `{"n":2}`),
		entry("sig-order", ora.KindObservedFact, "", base, `{"n":1}`),
		entry("sig-order", ora.KindValidatorResult, "technical", base.Add(2*time.Second),
			`{"validator":"technical","verdict":"PASS","summary":"ok","timestamp":"2026-03-14T09:27:00Z"}`),
		entry("sig-other", ora.KindObservedFact, "", base, `{"n":0}`),
	}
	for i, e := range in {
		// As stored: facts and packets gain their retention's ExpiresAt.
		in[i] = mustAppend(t, l, e)
	}
	got, err := l.Entries(ctx, "sig-order")
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	want := []int{4, 3, 1, 2, 5, 0}
	if len(got) != len(want) {
		t.Fatalf("Entries returned %d entries, want %d", len(got), len(want))
	}
	for i, w := range want {
		sameEntry(t, fmt.Sprintf("entry %d", i), got[i], in[w])
	}
}

func testAppendKeepsBodyBytes(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	// Key order, spacing and escapes that a decode/encode round trip would change.
	body := "{ \"z\": 1,\n  \"a\": [1.50, 2e3], \"s\": \"caf\\u00e9 <b>\" }"
	e := entry("sig-bytes", ora.KindObservedFact, "", base, body)
	stored := mustAppend(t, l, e)
	if string(stored.Body) != body {
		t.Errorf("Append returned body %q, want %q", stored.Body, body)
	}
	got, err := l.Entries(ctx, "sig-bytes")
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	if string(got[0].Body) != body {
		t.Errorf("stored body %q, want %q", got[0].Body, body)
	}
	if d := ora.Digest(got[0].Body); d != e.Digest || got[0].Digest != e.Digest {
		t.Errorf("digest of stored body %s, stored digest %s, want %s", d, got[0].Digest, e.Digest)
	}
}

func testAppendFills(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	e := ora.Entry{SignalID: "sig-fill", Kind: ora.KindReviewRequested, Body: json.RawMessage(`{"by":"rules"}`)}
	stored, err := l.Append(ctx, e)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if want := ora.Digest(e.Body); stored.Digest != want {
		t.Errorf("digest got %q, want %q", stored.Digest, want)
	}
	if stored.CreatedAt.IsZero() {
		t.Errorf("created_at was not filled")
	}
	got, err := l.Entries(ctx, "sig-fill")
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("Entries returned %d entries, want 1", len(got))
	}
	sameEntry(t, "stored entry", got[0], stored)
}

func testAppendExpiresAndMeta(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	exp := base.Add(90 * 24 * time.Hour).Add(123456789)
	e := entry("sig-exp", ora.KindObservedFact, "job-1", base, `{"fact":true}`)
	e.ExpiresAt = &exp
	e.Meta = map[string]string{"job_kind": "recent-actions", "source": "github"}
	mustAppend(t, l, e)
	got, err := l.Entries(ctx, "sig-exp")
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	sameEntry(t, "entry with expiry and meta", got[0], e)
}

func testAppendTwiceConflicts(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	first := mustAppend(t, l, entry("sig-twice", ora.KindObservedFact, "job-1", base, `{"v":1}`))
	cases := []struct {
		name string
		e    ora.Entry
	}{
		{"same content", entry("sig-twice", ora.KindObservedFact, "job-1", base, `{"v":1}`)},
		{"other content and time", entry("sig-twice", ora.KindObservedFact, "job-1", base.Add(time.Hour), `{"v":2}`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.Append(ctx, tc.e)
			wantCode(t, "second Append", err, ora.ECONFLICT)
			existing, ok := ora.Existing[ora.Entry](err)
			if !ok {
				t.Fatalf("conflict does not carry an ora.Entry: %#v", err)
			}
			sameEntry(t, "carried entry", existing, first)
		})
	}
	got, err := l.Entries(ctx, "sig-twice")
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("Entries returned %d entries, want 1", len(got))
	}
	sameEntry(t, "stored entry after conflicts", got[0], first)
	// Another qualifier is another entry.
	mustAppend(t, l, entry("sig-twice", ora.KindObservedFact, "job-2", base, `{"v":1}`))
}

func testAppendInvalid(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	badDecision := decision("dec-bad", "sig-inv-decision")
	badDecision.Confidence = 1.5
	decBody, _ := json.Marshal(badDecision)
	cases := []struct {
		name  string
		e     ora.Entry
		field string
	}{
		{"missing signal id", entry("", ora.KindObservedFact, "", base, `{}`), "signal_id"},
		{"missing kind", entry("sig-inv-kind", "", "", base, `{}`), "kind"},
		{"unknown kind", entry("sig-inv-unknown", "gossip", "", base, `{}`), "kind"},
		{"body not JSON", entry("sig-inv-body", ora.KindObservedFact, "", base, `{nope`), "body"},
		{"empty body", entry("sig-inv-empty", ora.KindObservedFact, "", base, ``), "body"},
		{"digest mismatch", func() ora.Entry {
			e := entry("sig-inv-digest", ora.KindObservedFact, "", base, `{}`)
			e.Digest = ora.Digest([]byte(`{"other":1}`))
			return e
		}(), "digest"},
		{"confidence outside 0..1", entry("sig-inv-decision", ora.KindReasonerDecision, "dec-bad", base, string(decBody)), "decision.confidence"},
		{"validator result without verdict", entry("sig-inv-validator", ora.KindValidatorResult, "technical", base,
			`{"validator":"technical","summary":"x"}`), "verdict"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.Append(ctx, tc.e)
			wantCode(t, "Append", err, ora.EINVALID)
			if got := ora.ErrorField(err); got != tc.field {
				t.Errorf("field got %q, want %q (%v)", got, tc.field, err)
			}
			if tc.e.SignalID != "" {
				_, err := l.Entries(ctx, tc.e.SignalID)
				wantCode(t, "Entries after a rejected Append", err, ora.ENOTFOUND)
			}
		})
	}
}

func testAppendConcurrent(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	var (
		wg        sync.WaitGroup
		start     = make(chan struct{})
		stored    = make([]ora.Entry, Concurrency)
		errs      = make([]error, Concurrency)
		candidate = make([]ora.Entry, Concurrency)
	)
	for i := range Concurrency {
		// Each writer brings its own body, so a conflict must carry the winner's.
		candidate[i] = entry("sig-race", ora.KindExecutionEvidence, "", base, fmt.Sprintf(`{"writer":%d}`, i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stored[i], errs[i] = l.Append(ctx, candidate[i])
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("writers %d and %d both won", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no writer won; first error: %v", errs[0])
	}
	sameEntry(t, "winner's stored entry", stored[winner], candidate[winner])
	for i, err := range errs {
		if i == winner {
			continue
		}
		if ora.ErrorCode(err) != ora.ECONFLICT {
			t.Errorf("writer %d: error code got %q (%v), want %q", i, ora.ErrorCode(err), err, ora.ECONFLICT)
			continue
		}
		existing, ok := ora.Existing[ora.Entry](err)
		if !ok {
			t.Errorf("writer %d: conflict does not carry an ora.Entry", i)
			continue
		}
		sameEntry(t, fmt.Sprintf("writer %d's carried entry", i), existing, candidate[winner])
	}
	got, err := l.Entries(ctx, "sig-race")
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("Entries returned %d entries, want 1", len(got))
	}
	sameEntry(t, "stored entry", got[0], candidate[winner])
}

func testEntriesNotFound(t *testing.T, l ora.Ledger) {
	_, err := l.Entries(context.Background(), "sig-never-seen")
	wantCode(t, "Entries", err, ora.ENOTFOUND)
}

func testRecent(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	var facts []ora.Entry
	for i := range 6 {
		e := entry(fmt.Sprintf("sig-recent-%d", i), ora.KindExecutionEvidence, "", base.Add(time.Duration(i)*time.Minute), fmt.Sprintf(`{"i":%d}`, i))
		facts = append(facts, mustAppend(t, l, e))
		// Same times, another kind: Recent must not return these.
		// (The signals spread over a sharded index; Recent merges them.)
		mustAppend(t, l, entry(fmt.Sprintf("sig-recent-%d", i), ora.KindReviewRequested, "", base.Add(time.Duration(i)*time.Minute), `{}`))
	}
	// Two entries at one instant in one range: both come back.
	twin := mustAppend(t, l, entry("sig-recent-twin", ora.KindExecutionEvidence, "", base.Add(3*time.Minute), `{"twin":true}`))
	cases := []struct {
		name     string
		from, to time.Time
		limit    int
		want     []ora.Entry
	}{
		{"half-open range, newest first", base.Add(time.Minute), base.Add(4 * time.Minute), 0,
			[]ora.Entry{facts[3], twin, facts[2], facts[1]}},
		{"limit", base.Add(time.Minute), base.Add(4 * time.Minute), 2, []ora.Entry{facts[3], twin}},
		{"to is exclusive", base, base.Add(time.Minute), 0, []ora.Entry{facts[0]}},
		{"from is inclusive", base.Add(5 * time.Minute), base.Add(time.Hour), 0, []ora.Entry{facts[5]}},
		{"empty range", base.Add(-time.Hour), base, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.Recent(ctx, ora.KindExecutionEvidence, tc.from, tc.to, tc.limit)
			if err != nil {
				t.Fatalf("Recent: %v", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Recent returned %d entries, want %d", len(got), len(tc.want))
			}
			// Entries created at one instant may come in either order: compare
			// the times in order and the signals as a set.
			gotSignals, wantSignals := map[string]int{}, map[string]int{}
			for i := range got {
				if !got[i].CreatedAt.Equal(tc.want[i].CreatedAt) || got[i].Kind != ora.KindExecutionEvidence {
					t.Errorf("entry %d: got %s at %v, want %s at %v", i, got[i].Kind, got[i].CreatedAt, ora.KindExecutionEvidence, tc.want[i].CreatedAt)
				}
				gotSignals[got[i].SignalID]++
				wantSignals[tc.want[i].SignalID]++
			}
			if !reflect.DeepEqual(gotSignals, wantSignals) {
				t.Errorf("signals got %v, want %v", gotSignals, wantSignals)
			}
		})
	}
}

func testRecentInvalid(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	cases := []struct {
		name     string
		kind     ora.EntryKind
		from, to time.Time
		limit    int
	}{
		{"unknown kind", "gossip", base, base.Add(time.Hour), 0},
		{"to before from", ora.KindExecutionEvidence, base.Add(time.Hour), base, 0},
		{"negative limit", ora.KindExecutionEvidence, base, base.Add(time.Hour), -1},
		{"a kind not indexed by kind", ora.KindObservedFact, base, base.Add(time.Hour), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.Recent(ctx, tc.kind, tc.from, tc.to, tc.limit)
			wantCode(t, "Recent", err, ora.EINVALID)
		})
	}
}

func testRecordDecision(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	d := decision("dec-1", "sig-dec")
	e, err := l.RecordDecision(ctx, d)
	if err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	if e.Kind != ora.KindReasonerDecision || e.Qualifier != d.ID || e.SignalID != d.SignalID {
		t.Errorf("entry identity got %s/%s/%s, want %s/%s/%s", e.SignalID, e.Kind, e.Qualifier, d.SignalID, ora.KindReasonerDecision, d.ID)
	}
	if e.AuthorType != d.AuthorType {
		t.Errorf("entry author got %q, want %q", e.AuthorType, d.AuthorType)
	}
	if e.Digest != ora.Digest(e.Body) {
		t.Errorf("entry digest %s does not match its body", e.Digest)
	}
	var back ora.ReasonerDecision
	if err := json.Unmarshal(e.Body, &back); err != nil {
		t.Fatalf("entry body is not a decision: %v", err)
	}
	if back.ID != d.ID || back.Confidence != d.Confidence || back.ActionType != d.ActionType {
		t.Errorf("entry body decodes to %+v, want %+v", back, d)
	}
	entries, err := l.Entries(ctx, d.SignalID)
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	if len(entries) != 1 {
		t.Fatalf("Entries returned %d entries, want 1", len(entries))
	}
	sameEntry(t, "stored decision entry", entries[0], e)
	st, err := l.Decision(ctx, d.ID)
	if err != nil {
		t.Fatalf("Decision: %v", err)
	}
	want := ora.DecisionState{DecisionID: d.ID, SignalID: d.SignalID, Status: ora.StatusDecided, Digest: e.Digest}
	if st.DecisionID != want.DecisionID || st.SignalID != want.SignalID || st.Status != want.Status || st.Digest != want.Digest {
		t.Errorf("Decision got %+v, want %+v", st, want)
	}
	if st.UpdatedAt.IsZero() {
		t.Errorf("Decision updated_at is zero")
	}
}

func testRecordDecisionTwice(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	d := decision("dec-twice", "sig-dec-twice")
	first, err := l.RecordDecision(ctx, d)
	if err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	if _, err := l.TransitionDecision(ctx, d.ID, ora.StatusDecided, ora.StatusExecuting, "act"); err != nil {
		t.Fatalf("TransitionDecision: %v", err)
	}
	d.Confidence = 0.6
	_, err = l.RecordDecision(ctx, d)
	wantCode(t, "second RecordDecision", err, ora.ECONFLICT)
	existing, ok := ora.Existing[ora.Entry](err)
	if !ok {
		t.Fatalf("conflict does not carry an ora.Entry: %#v", err)
	}
	sameEntry(t, "carried entry", existing, first)
	// The status record was not reset by the losing write.
	st, err := l.Decision(ctx, d.ID)
	if err != nil {
		t.Fatalf("Decision: %v", err)
	}
	if st.Status != ora.StatusExecuting {
		t.Errorf("status after a conflicting RecordDecision got %q, want %q", st.Status, ora.StatusExecuting)
	}
}

func testRecordDecisionInvalid(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	cases := []struct {
		name  string
		edit  func(*ora.ReasonerDecision)
		field string
	}{
		{"confidence above 1", func(d *ora.ReasonerDecision) { d.Confidence = 1.01 }, "decision.confidence"},
		{"confidence below 0", func(d *ora.ReasonerDecision) { d.Confidence = -0.1 }, "decision.confidence"},
		{"missing id", func(d *ora.ReasonerDecision) { d.ID = "" }, "decision.id"},
		{"tier 4", func(d *ora.ReasonerDecision) { d.Tier = 4 }, "decision.tier"},
		{"executor author", func(d *ora.ReasonerDecision) { d.AuthorType = ora.AuthorExecutor }, "decision.author_type"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decision(fmt.Sprintf("dec-invalid-%d", i), fmt.Sprintf("sig-dec-invalid-%d", i))
			tc.edit(&d)
			_, err := l.RecordDecision(ctx, d)
			wantCode(t, "RecordDecision", err, ora.EINVALID)
			if got := ora.ErrorField(err); got != tc.field {
				t.Errorf("field got %q, want %q (%v)", got, tc.field, err)
			}
			_, err = l.Entries(ctx, d.SignalID)
			wantCode(t, "Entries after a rejected RecordDecision", err, ora.ENOTFOUND)
			if d.ID != "" {
				_, err = l.Decision(ctx, d.ID)
				wantCode(t, "Decision after a rejected RecordDecision", err, ora.ENOTFOUND)
			}
		})
	}
}

func testDecisionNotFound(t *testing.T, l ora.Ledger) {
	_, err := l.Decision(context.Background(), "dec-never-seen")
	wantCode(t, "Decision", err, ora.ENOTFOUND)
}

func testTransitionAlongEdges(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	d := decision("dec-path", "sig-path")
	e, err := l.RecordDecision(ctx, d)
	if err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	start, err := l.Decision(ctx, d.ID)
	if err != nil {
		t.Fatalf("Decision: %v", err)
	}
	steps := []struct{ from, to ora.DecisionStatus }{
		{ora.StatusDecided, ora.StatusAwaitingApproval},
		{ora.StatusAwaitingApproval, ora.StatusApproved},
		{ora.StatusApproved, ora.StatusExecuting},
		{ora.StatusExecuting, ora.StatusExecuted},
	}
	version := start.Version
	for _, s := range steps {
		t.Run(string(s.from)+"->"+string(s.to), func(t *testing.T) {
			reason := "moved to " + string(s.to)
			got, err := l.TransitionDecision(ctx, d.ID, s.from, s.to, reason)
			if err != nil {
				t.Fatalf("TransitionDecision: %v", err)
			}
			if got.Status != s.to || got.Reason != reason || got.Digest != e.Digest || got.SignalID != d.SignalID {
				t.Errorf("returned state got %+v, want status %q reason %q digest %s", got, s.to, reason, e.Digest)
			}
			if got.Version != version+1 {
				t.Errorf("version got %d, want %d", got.Version, version+1)
			}
			version = got.Version
			stored, err := l.Decision(ctx, d.ID)
			if err != nil {
				t.Fatalf("Decision: %v", err)
			}
			if stored.Status != s.to || stored.Version != got.Version || stored.Reason != reason {
				t.Errorf("stored state got %+v, want %+v", stored, got)
			}
		})
	}
}

func testTransitionRejected(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	d := decision("dec-reject", "sig-reject")
	if _, err := l.RecordDecision(ctx, d); err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	if _, err := l.TransitionDecision(ctx, d.ID, ora.StatusDecided, ora.StatusExecuting, ""); err != nil {
		t.Fatalf("TransitionDecision: %v", err)
	}
	cases := []struct {
		name     string
		id       string
		from, to ora.DecisionStatus
		code     string
	}{
		{"not an edge", d.ID, ora.StatusDecided, ora.StatusExecuted, ora.EINVALID},
		{"terminal status", d.ID, ora.StatusExecuted, ora.StatusExecuting, ora.EINVALID},
		{"unknown decision", "dec-never-seen", ora.StatusDecided, ora.StatusExecuting, ora.ENOTFOUND},
		{"stale from", d.ID, ora.StatusDecided, ora.StatusExecuting, ora.ECONFLICT},
		{"stale from, other edge", d.ID, ora.StatusDecided, ora.StatusAwaitingApproval, ora.ECONFLICT},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.TransitionDecision(ctx, tc.id, tc.from, tc.to, "")
			wantCode(t, "TransitionDecision", err, tc.code)
			if tc.code != ora.ECONFLICT {
				return
			}
			cur, ok := ora.Existing[ora.DecisionState](err)
			if !ok {
				t.Fatalf("conflict does not carry an ora.DecisionState: %#v", err)
			}
			if cur.Status != ora.StatusExecuting || cur.DecisionID != d.ID {
				t.Errorf("carried state got %+v, want decision %s at %q", cur, d.ID, ora.StatusExecuting)
			}
		})
	}
	st, err := l.Decision(ctx, d.ID)
	if err != nil {
		t.Fatalf("Decision: %v", err)
	}
	if st.Status != ora.StatusExecuting {
		t.Errorf("status after rejected transitions got %q, want %q", st.Status, ora.StatusExecuting)
	}
}

func testTransitionConcurrent(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	d := decision("dec-race", "sig-dec-race")
	if _, err := l.RecordDecision(ctx, d); err != nil {
		t.Fatalf("RecordDecision: %v", err)
	}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, Concurrency)
	)
	for i := range Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = l.TransitionDecision(ctx, d.ID, ora.StatusDecided, ora.StatusExecuting, fmt.Sprintf("executor %d", i))
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("executors %d and %d both won", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no executor won; first error: %v", errs[0])
	}
	for i, err := range errs {
		if i == winner {
			continue
		}
		if ora.ErrorCode(err) != ora.ECONFLICT {
			t.Errorf("executor %d: error code got %q (%v), want %q", i, ora.ErrorCode(err), err, ora.ECONFLICT)
			continue
		}
		cur, ok := ora.Existing[ora.DecisionState](err)
		if !ok || cur.Status != ora.StatusExecuting {
			t.Errorf("executor %d: carried state got %+v (ok %v), want status %q", i, cur, ok, ora.StatusExecuting)
		}
	}
	st, err := l.Decision(ctx, d.ID)
	if err != nil {
		t.Fatalf("Decision: %v", err)
	}
	if want := fmt.Sprintf("executor %d", winner); st.Status != ora.StatusExecuting || st.Reason != want {
		t.Errorf("stored state got status %q reason %q, want %q %q", st.Status, st.Reason, ora.StatusExecuting, want)
	}
}

func commitment(id string, opened time.Time) ora.Commitment {
	return ora.Commitment{ID: id, SignalID: "sig-" + id, Title: "follow up on " + id, Body: json.RawMessage(`{"due":"friday"}`), OpenedAt: opened}
}

func testCommitments(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	// Opened newest first: OpenCommitments returns oldest first.
	var opened []ora.Commitment
	for i := 3; i >= 1; i-- {
		c, err := l.OpenCommitment(ctx, commitment(fmt.Sprintf("com-%d", i), base.Add(time.Duration(i)*time.Hour)))
		if err != nil {
			t.Fatalf("OpenCommitment: %v", err)
		}
		if c.Status != ora.CommitmentOpen || c.Version != 1 {
			t.Errorf("opened commitment got status %q version %d, want %q 1", c.Status, c.Version, ora.CommitmentOpen)
		}
		opened = append([]ora.Commitment{c}, opened...)
	}
	ids := func(cs []ora.Commitment) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	list := func(limit int) []ora.Commitment {
		t.Helper()
		got, err := l.OpenCommitments(ctx, limit)
		if err != nil {
			t.Fatalf("OpenCommitments: %v", err)
		}
		return got
	}
	got := list(0)
	if want := []string{"com-1", "com-2", "com-3"}; !reflect.DeepEqual(ids(got), want) {
		t.Fatalf("OpenCommitments got %v, want %v", ids(got), want)
	}
	if got[0].Title != opened[0].Title || !bytes.Equal(got[0].Body, opened[0].Body) || got[0].SignalID != opened[0].SignalID ||
		!got[0].OpenedAt.Equal(opened[0].OpenedAt) || got[0].Status != ora.CommitmentOpen {
		t.Errorf("listed commitment got %+v, want %+v", got[0], opened[0])
	}
	if want := []string{"com-1", "com-2"}; !reflect.DeepEqual(ids(list(2)), want) {
		t.Errorf("OpenCommitments(2) got %v, want %v", ids(list(2)), want)
	}
	closed, err := l.CloseCommitment(ctx, "com-2", "actor")
	if err != nil {
		t.Fatalf("CloseCommitment: %v", err)
	}
	if closed.Status != ora.CommitmentClosed || closed.ClosedBy != "actor" || closed.ClosedAt == nil || closed.Version != 2 || closed.Title != opened[1].Title {
		t.Errorf("closed commitment got %+v, want status %q closed_by actor, closed_at set, version 2", closed, ora.CommitmentClosed)
	}
	if want := []string{"com-1", "com-3"}; !reflect.DeepEqual(ids(list(0)), want) {
		t.Errorf("OpenCommitments after a close got %v, want %v", ids(list(0)), want)
	}
}

func testCommitmentErrors(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	first, err := l.OpenCommitment(ctx, commitment("com-x", base))
	if err != nil {
		t.Fatalf("OpenCommitment: %v", err)
	}
	t.Run("open twice", func(t *testing.T) {
		again := commitment("com-x", base.Add(time.Hour))
		again.Title = "another title"
		_, err := l.OpenCommitment(ctx, again)
		wantCode(t, "second OpenCommitment", err, ora.ECONFLICT)
		c, ok := ora.Existing[ora.Commitment](err)
		if !ok || c.Title != first.Title || !c.OpenedAt.Equal(first.OpenedAt) {
			t.Errorf("carried commitment got %+v (ok %v), want %+v", c, ok, first)
		}
	})
	invalid := []struct {
		name  string
		c     ora.Commitment
		field string
	}{
		{"missing id", ora.Commitment{Title: "t"}, "id"},
		{"missing title", ora.Commitment{ID: "com-notitle"}, "title"},
		{"closed status", ora.Commitment{ID: "com-closed", Title: "t", Status: ora.CommitmentClosed}, "status"},
		{"body not JSON", ora.Commitment{ID: "com-badbody", Title: "t", Body: json.RawMessage(`{`)}, "body"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.OpenCommitment(ctx, tc.c)
			wantCode(t, "OpenCommitment", err, ora.EINVALID)
			if got := ora.ErrorField(err); got != tc.field {
				t.Errorf("field got %q, want %q (%v)", got, tc.field, err)
			}
		})
	}
	open, err := l.OpenCommitments(ctx, 0)
	if err != nil {
		t.Fatalf("OpenCommitments: %v", err)
	}
	if len(open) != 1 || open[0].ID != "com-x" {
		t.Errorf("OpenCommitments after rejected opens got %d (%v), want only com-x", len(open), open)
	}
	t.Run("close unknown", func(t *testing.T) {
		_, err := l.CloseCommitment(ctx, "com-never-seen", "actor")
		wantCode(t, "CloseCommitment", err, ora.ENOTFOUND)
	})
	t.Run("close twice", func(t *testing.T) {
		if _, err := l.CloseCommitment(ctx, "com-x", "actor"); err != nil {
			t.Fatalf("CloseCommitment: %v", err)
		}
		_, err := l.CloseCommitment(ctx, "com-x", "someone else")
		wantCode(t, "second CloseCommitment", err, ora.ECONFLICT)
		c, ok := ora.Existing[ora.Commitment](err)
		if !ok || c.Status != ora.CommitmentClosed || c.ClosedBy != "actor" {
			t.Errorf("carried commitment got %+v (ok %v), want closed by actor", c, ok)
		}
	})
}

// Facts and packets get ExpiresAt = CreatedAt + ora.DefaultRetention() when
// they carry none; an ExpiresAt of their own is kept; the kinds the ledger
// keeps (signals, decisions, evidence, verdicts) get none.
func testRetention(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	keep := ora.DefaultRetention()
	own := base.Add(time.Hour).UTC()
	withOwn := entry("sig-ttl", ora.KindObservedFact, "own", base, `{"f":2}`)
	withOwn.ExpiresAt = &own
	cases := []struct {
		name string
		in   ora.Entry
		want *time.Time
	}{
		{"fact", entry("sig-ttl", ora.KindObservedFact, "f1", base, `{"f":1}`), ptr(base.Add(keep[ora.KindObservedFact]))},
		{"packet", entry("sig-ttl", ora.KindOrientationPacket, "", base, `{"p":1}`), ptr(base.Add(keep[ora.KindOrientationPacket]))},
		{"fact with its own expiry", withOwn, &own},
		{"evidence is kept", entry("sig-ttl", ora.KindExecutionEvidence, "0", base, `{"e":1}`), nil},
		{"verdict is kept", entry("sig-ttl", ora.KindFinalVerdict, "", base, `{"v":1}`), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := mustAppend(t, l, tc.in)
			if !sameTime(got.ExpiresAt, tc.want) {
				t.Errorf("Append returned ExpiresAt %v, want %v", got.ExpiresAt, tc.want)
			}
		})
	}
	stored, err := l.Entries(ctx, "sig-ttl")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range stored {
		for _, tc := range cases {
			if tc.in.Kind == e.Kind && tc.in.Qualifier == e.Qualifier && !sameTime(e.ExpiresAt, tc.want) {
				t.Errorf("stored %s %q: ExpiresAt %v, want %v", e.Kind, e.Qualifier, e.ExpiresAt, tc.want)
			}
		}
	}
}

func ptr(t time.Time) *time.Time { u := t.UTC(); return &u }

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// batchAppender is the optional batch write a ledger offers for a fetch
// job's facts (shared/orient uses it when present).
type batchAppender interface {
	AppendNew(ctx context.Context, entries []ora.Entry) (int, error)
}

// AppendNew writes the entries not stored yet and leaves the stored ones as
// they are; an invalid entry writes nothing. Every adapter offers it.
func testAppendNew(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	b, ok := l.(batchAppender)
	if !ok {
		t.Fatalf("%T has no AppendNew", l)
	}
	first := mustAppend(t, l, entry("sig-batch", ora.KindObservedFact, "j/00000", base, `{"first":true}`))
	var batch []ora.Entry
	// More than one BatchWriteItem (25) and a repeat of a stored identity.
	batch = append(batch, entry("sig-batch", ora.KindObservedFact, "j/00000", base, `{"second":true}`))
	for i := 1; i <= 30; i++ {
		batch = append(batch, entry("sig-batch", ora.KindObservedFact, fmt.Sprintf("j/%05d", i), base, fmt.Sprintf(`{"i":%d}`, i)))
	}
	n, err := b.AppendNew(ctx, batch)
	if err != nil || n != 30 {
		t.Fatalf("AppendNew = %d, %v; want 30 written", n, err)
	}
	again, err := b.AppendNew(ctx, batch)
	if err != nil || again != 0 {
		t.Errorf("AppendNew again = %d, %v; want 0 written", again, err)
	}
	got, err := l.Entries(ctx, "sig-batch")
	if err != nil || len(got) != 31 {
		t.Fatalf("Entries: %d entries, %v; want 31", len(got), err)
	}
	for _, e := range got {
		if e.Qualifier == "j/00000" {
			sameEntry(t, "the stored entry", e, first)
		}
		if e.ExpiresAt == nil {
			t.Errorf("%s %q has no ExpiresAt", e.Kind, e.Qualifier)
		}
	}
	bad := []ora.Entry{
		entry("sig-batch-bad", ora.KindObservedFact, "a", base, `{"ok":1}`),
		entry("sig-batch-bad", ora.KindObservedFact, "b", base, `not json`),
	}
	_, err = b.AppendNew(ctx, bad)
	wantCode(t, "AppendNew with an invalid entry", err, ora.EINVALID)
	if _, err := l.Entries(ctx, "sig-batch-bad"); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("an invalid batch wrote something: %v", err)
	}
}

// testFactsKeepBytes writes fact parts and a packet shaped as shared/orient
// writes them, several sharing the same normalized bodies (a ledger may keep
// each body once and refer to it), and reads back every body byte for byte,
// through Append, AppendNew, Entries and a conflict.
func testFactsKeepBytes(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	long := strings.Repeat("the output of a recent action, ", 8)
	norm := []string{
		`{"decision":"notify","detail":"` + long + `"}`,
		`{"normalized":{"nested":"` + long + `"},"text":",\"normalized\":{\"no\":1} caf\u00e9 \u003cb\u003e é ` + long + `"}`,
		`["` + long + `",1.5,null,true]`,
		`{"short":1}`,
	}
	fact := func(i int, n string) string {
		return fmt.Sprintf(`{"fact_id":"job/%05d","wave_id":"sig","source_ref":"ledger:x/final-verdict/","provenance":{"store":"ledger"},"normalized":%s,"utility_score":0.6}`, i, n)
	}
	part := func(ns ...string) string {
		var fs []string
		for i, n := range ns {
			fs = append(fs, fact(i, n))
		}
		return `{"job_id":"job","job_kind":"actor_history","part":0,"facts":[` + strings.Join(fs, ",") + `]}`
	}
	bodies := map[string]string{
		"sig-facts-1": part(norm...),
		"sig-facts-2": part(norm[0], norm[2], norm[3]),
		"sig-facts-3": `{"packet_id":"pkt","bands":[{"band":"capabilities","facts":[` + fact(0, norm[0]) + `,` + fact(1, norm[1]) + `]}],"digest_sha256":""}`,
	}
	kinds := map[string]ora.EntryKind{"sig-facts-1": ora.KindObservedFact, "sig-facts-2": ora.KindObservedFact, "sig-facts-3": ora.KindOrientationPacket}
	b, batches := l.(batchAppender)
	for _, sig := range []string{"sig-facts-1", "sig-facts-2", "sig-facts-3"} {
		e := ora.NewEntryJSON(sig, kinds[sig], "job/facts-000", []byte(bodies[sig]))
		if sig == "sig-facts-2" && batches {
			if n, err := b.AppendNew(ctx, []ora.Entry{e}); err != nil || n != 1 {
				t.Fatalf("AppendNew %s = %d, %v", sig, n, err)
			}
		} else {
			mustAppend(t, l, e)
		}
		got, err := l.Entries(ctx, sig)
		if err != nil || len(got) != 1 || string(got[0].Body) != bodies[sig] || got[0].Digest != e.Digest {
			t.Fatalf("Entries(%s) = %v, %v; want the body as written", sig, got, err)
		}
		_, err = l.Append(ctx, e)
		if stored, ok := ora.Existing[ora.Entry](err); !ok || string(stored.Body) != bodies[sig] {
			t.Errorf("Append %s again: %v; want a conflict carrying the body as written", sig, err)
		}
	}
}

// testOrientationProfileVersions stores orientation profile versions the way
// shared/orient does (one write-once entry per version under a pseudo signal
// id): a version is written once, a malformed one not at all, and the
// versions read back in order.
func testOrientationProfileVersions(t *testing.T, l ora.Ledger) {
	ctx := context.Background()
	const key = "orientation-profile:default"
	profile := func(v, budget int) ora.Entry {
		p := ora.Profile{ID: "default", Version: v, TokenBudget: budget, Bands: ora.DefaultBands(), Limits: ora.DefaultLimits(),
			MaxSourceShare: 0.5, Status: ora.ProfileActive, UpdatedBy: "test", UpdatedAt: base}
		e, err := ora.NewEntry(key, ora.KindOrientationProfile, fmt.Sprintf("v%06d", v), p)
		if err != nil {
			t.Fatal(err)
		}
		e.CreatedAt = base
		return e
	}
	mustAppend(t, l, profile(2, 150000))
	mustAppend(t, l, profile(1, 150000))
	_, err := l.Append(ctx, profile(2, 120000))
	wantCode(t, "second write of version 2", err, ora.ECONFLICT)
	_, err = l.Append(ctx, profile(3, 10))
	wantCode(t, "malformed version 3 (floors over the budget)", err, ora.EINVALID)
	got, err := l.Entries(ctx, key)
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	var versions []int
	for _, e := range got {
		var p ora.Profile
		if err := json.Unmarshal(e.Body, &p); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, p.Version)
		if p.Version == 2 && p.TokenBudget != 150000 {
			t.Errorf("version 2 budget: got %d, want the first write's 150000", p.TokenBudget)
		}
	}
	if fmt.Sprint(versions) != "[1 2]" {
		t.Errorf("stored versions: got %v, want [1 2]", versions)
	}
}
