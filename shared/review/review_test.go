package review_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/review"
	"github.com/ora-runtime/ora/shared/sqlite"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// notifier and settler are fakes with function fields.
type notifier struct {
	notify func(ctx context.Context, subject, message string) error
}

func (n notifier) Notify(ctx context.Context, subject, message string) error {
	return n.notify(ctx, subject, message)
}

type settler struct {
	send func(ctx context.Context, token string, output []byte) error
}

func (s settler) SendTaskSuccess(ctx context.Context, token string, output []byte) error {
	return s.send(ctx, token, output)
}

type settled struct {
	token  string
	output []byte
}

type fixture struct {
	skew     time.Duration // how far the service's clock runs ahead of the ledger's
	fail     error         // the next SendTaskSuccess fails with it
	db       *sqlite.DB
	svc      *review.Service
	notified atomic.Int64
	mu       sync.Mutex
	settled  []settled
}

func newFixture(t *testing.T, confidence float64) *fixture {
	t.Helper()
	f := &fixture{db: acttest.DB(t)}
	d := acttest.Decision("d1", "s1", ora.Scope{AllowedOperations: []string{act.TypeNotify}},
		ora.Action{Type: act.TypeNotify, Parameters: json.RawMessage(`{"message":"hi"}`)})
	d.Confidence = confidence
	acttest.Record(t, f.db, d)
	f.svc = review.New(f.db, func(o *review.Options) {
		o.Now = func() time.Time {
			f.mu.Lock()
			defer f.mu.Unlock()
			return time.Now().Add(f.skew)
		}
		o.Notifier = notifier{notify: func(context.Context, string, string) error { f.notified.Add(1); return nil }}
		o.Settler = settler{send: func(_ context.Context, token string, output []byte) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.fail != nil {
				err := f.fail
				f.fail = nil
				return err
			}
			// Like Step Functions: a task completes once; its token is then spent.
			for _, s := range f.settled {
				if s.token == token {
					return ora.Conflict(nil, "task %s is no longer waiting", token)
				}
			}
			f.settled = append(f.settled, settled{token, output})
			return nil
		}}
	})
	return f
}

// advance moves the service's clock d ahead of the ledger's.
func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.skew += d
}

func (f *fixture) entries(t *testing.T, kind ora.EntryKind) []ora.Entry {
	t.Helper()
	all, err := f.db.Entries(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	var out []ora.Entry
	for _, e := range all {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func TestFlagReview(t *testing.T) {
	f := newFixture(t, 0.7)
	for run := range 2 {
		got, err := f.svc.FlagReview(context.Background(), "s1", "d1")
		if err != nil || got.Review != "requested" {
			t.Fatalf("FlagReview #%d: got %+v, %v, want requested", run, got, err)
		}
	}
	es := f.entries(t, ora.KindReviewRequested)
	if len(es) != 1 {
		t.Fatalf("review-requested entries: got %d, want 1", len(es))
	}
	var r review.Review
	_ = json.Unmarshal(es[0].Body, &r)
	if r.Band != ora.BandMedium || r.DecisionID != "d1" {
		t.Errorf("review: got %+v, want medium band for d1", r)
	}
}

func TestEscalate(t *testing.T) {
	f := newFixture(t, 0.3)
	ctx := context.Background()
	out, err := f.svc.Escalate(ctx, "s1", "d1", "token-1")
	if err != nil {
		t.Fatalf("Escalate: %v", err)
	}
	if out.Status != ora.StatusAwaitingApproval || acttest.Status(t, f.db, "d1") != ora.StatusAwaitingApproval {
		t.Errorf("status: got %s, want awaiting-approval", acttest.Status(t, f.db, "d1"))
	}
	es := f.entries(t, ora.KindArchitectIntent)
	if len(es) != 1 {
		t.Fatalf("architect-intent entries: got %d, want 1", len(es))
	}
	var in review.Intent
	_ = json.Unmarshal(es[0].Body, &in)
	if !in.RequiresHumanAudit || in.TaskToken != "token-1" || es[0].Meta["requires_human_audit"] != "true" || es[0].AuthorType != ora.AuthorArchitect {
		t.Errorf("intent: got %+v meta %v, want requires_human_audit with the token, by the architect", in, es[0].Meta)
	}
	if got := f.notified.Load(); got != 1 {
		t.Errorf("notifications: got %d, want 1", got)
	}
	// A retry with a new token keeps waiting; approval settles the newest token.
	if _, err := f.svc.Escalate(ctx, "s1", "d1", "token-2"); err != nil {
		t.Fatalf("Escalate retry: %v", err)
	}
	if _, err := f.svc.Approve(ctx, "d1", "alice", "fine"); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if len(f.settled) != 1 || f.settled[0].token != "token-2" {
		t.Errorf("settled: got %+v, want token-2 once", f.settled)
	}
}

// Escalate run again after a human settled the decision (a restart between
// its entry and the engine recording the wait) settles the new task token
// with the stored verdict instead of failing the wave; it does not notify
// again. A decision past the human's verdict is still a conflict.
func TestEscalateAfterTheVerdictSettlesTheNewToken(t *testing.T) {
	for _, verdict := range []string{review.Approved, review.Rejected} {
		t.Run(verdict, func(t *testing.T) {
			f := newFixture(t, 0.3)
			ctx := context.Background()
			if _, err := f.svc.Escalate(ctx, "s1", "d1", "token-1"); err != nil {
				t.Fatal(err)
			}
			var err error
			if verdict == review.Approved {
				_, err = f.svc.Approve(ctx, "d1", "alice", "fine")
			} else {
				_, err = f.svc.Reject(ctx, "d1", "alice", "no")
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := f.svc.Escalate(ctx, "s1", "d1", "token-2")
			if err != nil {
				t.Fatalf("Escalate after the verdict: %v", err)
			}
			want := ora.StatusApproved
			if verdict == review.Rejected {
				want = ora.StatusRejected
			}
			var got struct{ Verdict, Reason, By string }
			if out.Status != want || len(f.settled) != 2 || f.settled[1].token != "token-2" ||
				json.Unmarshal(f.settled[1].output, &got) != nil || got.Verdict != verdict || got.By != "alice" {
				t.Fatalf("status %s, settled %+v; want %s with token-2 settled %s by alice", out.Status, f.settled, want, verdict)
			}
			if n := f.notified.Load(); n != 1 {
				t.Errorf("notifications: %d, want 1 (the human already answered)", n)
			}
			if n := len(f.entries(t, ora.KindHumanVerdict)); n != 1 {
				t.Errorf("human-verdict entries: %d, want 1", n)
			}
		})
	}
	t.Run("executing", func(t *testing.T) {
		f := newFixture(t, 0.3)
		ctx := context.Background()
		if _, err := f.svc.Escalate(ctx, "s1", "d1", "token-1"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Approve(ctx, "d1", "alice", "fine"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.db.TransitionDecision(ctx, "d1", ora.StatusApproved, ora.StatusExecuting, "act"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Escalate(ctx, "s1", "d1", "token-2"); ora.ErrorCode(err) != ora.ECONFLICT {
			t.Errorf("Escalate of an executing decision: %v, want a conflict", err)
		}
	})
}

func TestApproveThenSecondApproveConflicts(t *testing.T) {
	f := newFixture(t, 0.3)
	ctx := context.Background()
	if _, err := f.svc.Escalate(ctx, "s1", "d1", "tok"); err != nil {
		t.Fatal(err)
	}
	hv, err := f.svc.Approve(ctx, "d1", "alice", "looks right")
	if err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if hv.Verdict != review.Approved || acttest.Status(t, f.db, "d1") != ora.StatusApproved {
		t.Errorf("approve: got %+v status %s, want approved", hv, acttest.Status(t, f.db, "d1"))
	}
	var out struct{ Verdict, Reason, By string }
	if len(f.settled) != 1 || json.Unmarshal(f.settled[0].output, &out) != nil || out.Verdict != "approved" || out.By != "alice" || out.Reason != "looks right" {
		t.Fatalf("settled: got %+v, want one approved output by alice", f.settled)
	}
	for _, second := range []func() (review.HumanVerdict, error){
		func() (review.HumanVerdict, error) { return f.svc.Approve(ctx, "d1", "bob", "again") },
		func() (review.HumanVerdict, error) { return f.svc.Reject(ctx, "d1", "bob", "too late") },
	} {
		_, err := second()
		if ora.ErrorCode(err) != ora.ECONFLICT {
			t.Errorf("second verdict: got %v, want ECONFLICT", err)
		}
		if st, ok := ora.Existing[ora.DecisionState](err); !ok || st.Status != ora.StatusApproved {
			t.Errorf("conflict carries: got %+v, want the approved state", st)
		}
	}
	if len(f.settled) != 1 {
		t.Errorf("settlements: got %d, want 1", len(f.settled))
	}
	if es := f.entries(t, ora.KindHumanVerdict); len(es) != 1 || es[0].AuthorType != ora.AuthorHuman {
		t.Errorf("human-verdict entries: got %d, want 1 by a human", len(es))
	}
}

// An approval whose call is cut short after the status moved (here: the task
// could not be reached) is finished by the next approval, which still gets
// the conflict: the wave is never left waiting on an approved decision.
func TestRetriedApprovalDeliversTheFirst(t *testing.T) {
	f := newFixture(t, 0.3)
	ctx := context.Background()
	if _, err := f.svc.Escalate(ctx, "s1", "d1", "tok"); err != nil {
		t.Fatal(err)
	}
	f.fail = ora.Transient(nil, "step functions throttled")
	if _, err := f.svc.Approve(ctx, "d1", "alice", "looks right"); err == nil {
		t.Fatal("Approve succeeded although the task could not be settled")
	}
	if len(f.settled) != 0 || acttest.Status(t, f.db, "d1") != ora.StatusApproved {
		t.Fatalf("after the cut-short approval: settled %d, status %s", len(f.settled), acttest.Status(t, f.db, "d1"))
	}
	// A repeat moments later leaves the delivery to the call still under way.
	if _, err := f.svc.Approve(ctx, "d1", "alice", "looks right"); ora.ErrorCode(err) != ora.ECONFLICT || len(f.settled) != 0 {
		t.Fatalf("an immediate repeat: got %v and %d settlements, want ECONFLICT and none", err, len(f.settled))
	}
	f.advance(time.Minute)
	_, err := f.svc.Approve(ctx, "d1", "alice", "looks right")
	if ora.ErrorCode(err) != ora.ECONFLICT {
		t.Errorf("retried approval: got %v, want ECONFLICT", err)
	}
	var out struct{ Verdict string }
	if len(f.settled) != 1 || json.Unmarshal(f.settled[0].output, &out) != nil || out.Verdict != "approved" {
		t.Fatalf("the waiting task was not settled by the retry: %+v", f.settled)
	}
}

func TestConcurrentApprovalsOneWins(t *testing.T) {
	f := newFixture(t, 0.3)
	ctx := context.Background()
	if _, err := f.svc.Escalate(ctx, "s1", "d1", "tok"); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wins, conflicts atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, err := f.svc.Approve(ctx, "d1", "someone", "ok")
			switch ora.ErrorCode(err) {
			case "":
				wins.Add(1)
			case ora.ECONFLICT:
				conflicts.Add(1)
			default:
				t.Errorf("Approve: %v", err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || conflicts.Load() != n-1 {
		t.Errorf("got %d wins and %d conflicts, want 1 and %d", wins.Load(), conflicts.Load(), n-1)
	}
}

func TestRejectNeverExecutes(t *testing.T) {
	f := newFixture(t, 0.3)
	ctx := context.Background()
	if _, err := f.svc.Escalate(ctx, "s1", "d1", "tok"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Reject(ctx, "d1", "alice", "wrong target"); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	var ran atomic.Int64
	reg := act.NewRegistry()
	reg.Register(act.TypeNotify, runFunc(func(context.Context, json.RawMessage) (act.Receipt, error) {
		ran.Add(1)
		return act.Receipt{Type: act.TypeNotify, ID: "x"}, nil
	}))
	_, err := act.New(f.db, reg, acttest.Once(f.db)).Act(ctx, "s1", "d1")
	var pe *taskerr.ProvenanceError
	if !errors.As(taskerr.From(err), &pe) {
		t.Errorf("Act after reject: got %v, want ProvenanceError", err)
	}
	if ran.Load() != 0 {
		t.Errorf("actions run: got %d, want 0", ran.Load())
	}
	got, err := f.svc.Record(ctx, "s1", "d1", review.OutcomeRejected, json.RawMessage(`{"verdict":"rejected","reason":"wrong target","by":"alice"}`))
	if err != nil || got.Final != review.OutcomeRejected {
		t.Fatalf("Record: got %+v, %v, want rejected", got, err)
	}
	var v operate.Verdict
	_ = json.Unmarshal(f.entries(t, ora.KindFinalVerdict)[0].Body, &v)
	if !strings.Contains(v.Reason, "alice") || !strings.Contains(v.Reason, "wrong target") {
		t.Errorf("final reason: got %q, want the human's reason", v.Reason)
	}
}

type runFunc func(context.Context, json.RawMessage) (act.Receipt, error)

func (f runFunc) Run(ctx context.Context, p json.RawMessage) (act.Receipt, error) { return f(ctx, p) }

func TestRecord(t *testing.T) {
	cases := []struct {
		name       string
		escalate   bool
		outcome    string
		verdict    string
		wantFinal  string
		wantStatus ora.DecisionStatus
		wantReason string
	}{
		{name: "timeout rejects a waiting decision", escalate: true, outcome: review.OutcomeRejected, verdict: `{"Error":"States.Timeout","Cause":""}`,
			wantFinal: review.OutcomeRejected, wantStatus: ora.StatusRejected, wantReason: "timed out"},
		{name: "completed lists the validators", outcome: review.OutcomeCompleted, verdict: `[{}]`,
			wantFinal: review.OutcomeCompleted, wantStatus: ora.StatusDecided},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 0.3)
			ctx := context.Background()
			if tc.escalate {
				if _, err := f.svc.Escalate(ctx, "s1", "d1", "tok"); err != nil {
					t.Fatal(err)
				}
			}
			if tc.outcome == review.OutcomeCompleted {
				r := ora.ValidatorResult{Validator: ora.ValidatorTechnical, Verdict: ora.Pass, Summary: "ok", DecisionID: "d1"}
				e, _ := ora.NewEntry("s1", ora.KindValidatorResult, "technical", r)
				if _, err := f.db.Append(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			for run := range 2 {
				got, err := f.svc.Record(ctx, "s1", "d1", tc.outcome, json.RawMessage(tc.verdict))
				if err != nil || got.Final != tc.wantFinal {
					t.Fatalf("Record #%d: got %+v, %v, want %s", run, got, err, tc.wantFinal)
				}
			}
			if got := acttest.Status(t, f.db, "d1"); got != tc.wantStatus {
				t.Errorf("status: got %s, want %s", got, tc.wantStatus)
			}
			es := f.entries(t, ora.KindFinalVerdict)
			if len(es) != 1 {
				t.Fatalf("final-verdict entries: got %d, want 1", len(es))
			}
			var v operate.Verdict
			_ = json.Unmarshal(es[0].Body, &v)
			if !strings.Contains(v.Reason, tc.wantReason) {
				t.Errorf("reason: got %q, want it to mention %q", v.Reason, tc.wantReason)
			}
			if tc.outcome == review.OutcomeCompleted {
				var rs []ora.ValidatorResult
				if json.Unmarshal(v.Validators, &rs) != nil || len(rs) != 1 || rs[0].Verdict != ora.Pass {
					t.Errorf("validators: got %s, want one PASS", v.Validators)
				}
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t, 0.3)
	ctx := context.Background()
	cases := []struct {
		name string
		call func() error
		code string
	}{
		{"record: unknown outcome", func() error { _, err := f.svc.Record(ctx, "s1", "d1", "maybe", nil); return err }, ora.EINVALID},
		{"escalate: no token", func() error { _, err := f.svc.Escalate(ctx, "s1", "d1", ""); return err }, ora.EINVALID},
		{"approve: unknown decision", func() error { _, err := f.svc.Approve(ctx, "nope", "alice", ""); return err }, ora.ENOTFOUND},
		{"approve: not escalated", func() error { _, err := f.svc.Approve(ctx, "d1", "alice", ""); return err }, ora.ECONFLICT},
		{"approve: nobody", func() error { _, err := f.svc.Approve(ctx, "d1", "", ""); return err }, ora.EINVALID},
		{"flag: unknown decision", func() error { _, err := f.svc.FlagReview(ctx, "s1", "nope"); return err }, ora.ENOTFOUND},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ora.ErrorCode(tc.call()); got != tc.code {
				t.Errorf("code: got %q, want %q", got, tc.code)
			}
		})
	}
}

func TestSettle(t *testing.T) {
	cases := []struct {
		name    string
		approve bool
		want    ora.DecisionStatus
	}{
		{"approve", true, ora.StatusApproved},
		{"reject", false, ora.StatusRejected},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 0.3)
			ctx := context.Background()
			if _, err := f.svc.Escalate(ctx, "s1", "d1", "tok"); err != nil {
				t.Fatal(err)
			}
			st, err := f.svc.Settle(ctx, "d1", tc.approve, "alice", "because")
			if err != nil || st.Status != tc.want || st.Reason != "because" {
				t.Fatalf("Settle: got %+v, %v, want %s", st, err, tc.want)
			}
			if _, err := f.svc.Settle(ctx, "d1", tc.approve, "alice", "again"); ora.ErrorCode(err) != ora.ECONFLICT {
				t.Errorf("second Settle: got %v, want ECONFLICT", err)
			}
		})
	}
}

// stamped is a ledger whose appended entries take their created_at from at:
// hosts whose clocks agree to the instant, or disagree.
type stamped struct {
	ora.Ledger
	at func() time.Time
}

func (s stamped) Append(ctx context.Context, e ora.Entry) (ora.Entry, error) {
	e.CreatedAt = s.at()
	return s.Ledger.Append(ctx, e)
}

// After a retried Escalate only the newest task waits: approval settles that
// token on both ledgers, even when the ledger's own order (created_at, then
// the qualifier, which holds the token's hash) puts the older intent last:
// the two escalations written at one instant with the older one's qualifier
// sorting after the newer one's, or the retry's host clock behind the first's.
func TestApproveSettlesTheNewestEscalation(t *testing.T) {
	// older and newer: tokens whose qualifiers sort the opposite way to the
	// order they are escalated in.
	older, newer := "token-a", "token-b"
	if q := func(tok string) string { return ora.Digest([]byte(tok))[:16] }; q(older) < q(newer) {
		older, newer = newer, older
	}
	base := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	clocks := []struct {
		name  string
		times []time.Time // the created_at of the first and the second escalation
	}{
		{"one instant, qualifiers reversed", []time.Time{base, base}},
		{"the retry's clock behind", []time.Time{base, base.Add(-time.Second)}},
	}
	for _, store := range acttest.Stores {
		for _, clock := range clocks {
			t.Run(store.Name+"/"+clock.name, func(t *testing.T) {
				ctx := context.Background()
				st := store.Open(t)
				d := acttest.Decision("d1", "s1", ora.Scope{AllowedOperations: []string{act.TypeNotify}},
					ora.Action{Type: act.TypeNotify, Parameters: json.RawMessage(`{"message":"hi"}`)})
				d.Confidence = 0.3
				acttest.Record(t, st.Ledger, d)
				n := 0
				ledger := stamped{Ledger: st.Ledger, at: func() time.Time { return clock.times[min(n, 1)] }}
				var got []string
				svc := review.New(ledger, func(o *review.Options) {
					o.Now = func() time.Time { return clock.times[min(n, 1)] }
					o.Notifier = notifier{notify: func(context.Context, string, string) error { return nil }}
					o.Settler = settler{send: func(_ context.Context, token string, _ []byte) error {
						got = append(got, token)
						return nil
					}}
				})
				for _, tok := range []string{older, newer} {
					if _, err := svc.Escalate(ctx, "s1", "d1", tok); err != nil {
						t.Fatalf("Escalate %s: %v", tok, err)
					}
					n++
				}
				// The precondition: the ledger's order puts the older intent last.
				all, err := st.Ledger.Entries(ctx, "s1")
				if err != nil {
					t.Fatal(err)
				}
				var last struct {
					TaskToken string `json:"task_token"`
				}
				for _, e := range all {
					if e.Kind == ora.KindArchitectIntent {
						_ = json.Unmarshal(e.Body, &last)
					}
				}
				if last.TaskToken != older {
					t.Fatalf("the ledger lists %s last; the case needs the older token %s last", last.TaskToken, older)
				}
				if _, err := svc.Approve(ctx, "d1", "alice", "fine"); err != nil {
					t.Fatalf("Approve: %v", err)
				}
				if len(got) != 1 || got[0] != newer {
					t.Errorf("settled %v, want the newer token %s once (not the dead %s)", got, newer, older)
				}
			})
		}
	}
}

// The completed verdict lists every action's outcome beside the validators'.
func TestRecordListsEveryAction(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0.9)
	reg := act.NewRegistry()
	reg.Register(act.TypeNotify, act.NewLogNotify(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if _, err := act.New(f.db, reg, acttest.Once(f.db)).Act(ctx, "s1", "d1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Record(ctx, "s1", "d1", review.OutcomeCompleted, json.RawMessage(`[{}]`)); err != nil {
		t.Fatal(err)
	}
	var v operate.Verdict
	_ = json.Unmarshal(f.entries(t, ora.KindFinalVerdict)[0].Body, &v)
	if len(v.Actions) != 1 || v.Actions[0].Outcome != act.OutcomeSuccess || v.Actions[0].Type != act.TypeNotify {
		t.Errorf("verdict actions %+v, want the one notify, success", v.Actions)
	}
}
