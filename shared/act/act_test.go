package act_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

const secret = "s3cret"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// target is an httptest server counting the requests whose signature checks.
type target struct {
	srv    *httptest.Server
	hits   atomic.Int64
	forged atomic.Int64
	status int
}

func newTarget(t *testing.T, status int) *target {
	t.Helper()
	tg := &target{status: status}
	tg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get(act.HeaderSignature) != act.Sign(secret, b) {
			tg.forged.Add(1)
		}
		tg.hits.Add(1)
		w.WriteHeader(tg.status)
	}))
	t.Cleanup(tg.srv.Close)
	return tg
}

type fixture struct {
	db     ora.Ledger
	once   act.Once
	svc    *act.Service
	root   string
	target *target
}

func newFixture(t *testing.T, status int) *fixture {
	t.Helper()
	db := acttest.DB(t)
	return newFixtureOn(t, acttest.Store{Name: "sqlite", Ledger: db, Once: acttest.Once(db)}, status)
}

func newFixtureOn(t *testing.T, st acttest.Store, status int) *fixture {
	t.Helper()
	f := &fixture{db: st.Ledger, once: st.Once, root: t.TempDir(), target: newTarget(t, status)}
	u, _ := url.Parse(f.target.srv.URL)
	cfg := act.Config{
		HTTP:   act.HTTPConfig{AllowedHosts: []string{u.Host}, SigningSecret: secret, TimeoutSeconds: 5},
		Object: act.ObjectConfig{AllowedPrefixes: []string{"out/"}, Root: f.root},
	}
	reg := act.Standard(cfg, act.NewLogNotify(quiet), act.Folder{Root: f.root}, f.db, nil)
	f.svc = act.New(f.db, reg, st.Once, func(o *act.Options) { o.Log = quiet })
	return f
}

var fullScope = ora.Scope{
	AllowedOperations: []string{act.TypeHTTPRequest, act.TypeObjectPut, act.TypeNotify, act.TypeCommitmentOpen, act.TypeCommitmentClose},
	ForbiddenPaths:    []string{"secrets", "/admin", "*.pem"},
}

func (f *fixture) http(t *testing.T, path string) ora.Action {
	t.Helper()
	return ora.Action{Type: act.TypeHTTPRequest, Parameters: acttest.Params(t, map[string]any{"url": f.target.srv.URL + path, "body": map[string]string{"hello": "world"}})}
}

func TestActConcurrentRunsExecuteOnce(t *testing.T) {
	for _, store := range acttest.Stores {
		t.Run(store.Name, func(t *testing.T) { testConcurrentRuns(t, store.Open(t)) })
	}
}

func testConcurrentRuns(t *testing.T, st acttest.Store) {
	f := newFixtureOn(t, st, http.StatusOK)
	d := acttest.Decision("d1", "s1", fullScope, f.http(t, "/hook"))
	acttest.Record(t, f.db, d)

	const runs = 8
	var wg sync.WaitGroup
	errs := make([]error, runs)
	for i := range runs {
		wg.Go(func() { _, errs[i] = f.svc.Act(context.Background(), "s1", "d1") })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		var te *taskerr.TransientError
		switch {
		case err == nil:
			ok++
		case errors.As(taskerr.From(err), &te):
		default:
			t.Fatalf("Act: got %v, want success or a transient error", err)
		}
	}
	if ok == 0 {
		t.Fatalf("no run succeeded: %v", errs)
	}
	// A retry of the loser (the state machine retries TransientError) finishes.
	res, err := f.svc.Act(context.Background(), "s1", "d1")
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if got, want := f.target.hits.Load(), int64(1); got != want {
		t.Errorf("requests: got %d, want %d", got, want)
	}
	if got := f.target.forged.Load(); got != 0 {
		t.Errorf("requests with a bad signature: got %d, want 0", got)
	}
	if got, want := res.Evidence, []string{"0"}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("evidence: got %v, want %v", got, want)
	}
	if got, want := acttest.Status(t, f.db, "d1"), ora.StatusExecuted; got != want {
		t.Errorf("status: got %s, want %s", got, want)
	}
}

func TestActRecordsEvidenceWithProvenance(t *testing.T) {
	f := newFixture(t, http.StatusNoContent)
	d := acttest.Decision("d1", "s1", fullScope,
		f.http(t, "/a"),
		ora.Action{Type: act.TypeObjectPut, Parameters: acttest.Params(t, map[string]any{"key": "out/report.txt", "body": "done"})},
		ora.Action{Type: act.TypeCommitmentOpen, Parameters: acttest.Params(t, map[string]any{"id": "c1", "title": "follow up"})},
		ora.Action{Type: act.TypeNotify, Parameters: acttest.Params(t, map[string]any{"subject": "s", "message": "m"})},
	)
	de := acttest.Record(t, f.db, d)
	res, err := f.svc.Act(context.Background(), "s1", "d1")
	if err != nil {
		t.Fatalf("Act: %v", err)
	}
	if got, want := len(res.Evidence), 4; got != want {
		t.Fatalf("evidence: got %d, want %d", got, want)
	}
	w, err := act.LoadWave(context.Background(), f.db, "s1", "d1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		ev := w.Evidence[i]
		if ev.Outcome != act.OutcomeSuccess || ev.DecisionDigest != de.Digest || ev.SignalID != "s1" || ev.Receipt == nil {
			t.Errorf("evidence %d: got %+v, want success with provenance digest %s", i, ev, de.Digest)
		}
		e, _ := w.Find(ora.KindExecutionEvidence, strconv.Itoa(i))
		if e.Meta["provenance"] != "d1" || e.AuthorType != ora.AuthorExecutor {
			t.Errorf("entry %d: meta %v author %s, want provenance d1 by executor", i, e.Meta, e.AuthorType)
		}
	}
	if got := w.Evidence[0].Receipt.StatusCode; got != http.StatusNoContent {
		t.Errorf("http receipt status: got %d, want 204", got)
	}
	b, err := os.ReadFile(filepath.Join(f.root, "out", "report.txt"))
	if err != nil || string(b) != "done" {
		t.Errorf("object: got %q, %v, want \"done\"", b, err)
	}
	open, err := f.db.OpenCommitments(context.Background(), 0)
	if err != nil || len(open) != 1 || open[0].ID != "c1" {
		t.Errorf("open commitments: got %+v, %v, want c1", open, err)
	}
}

func TestActScopeViolationBeforeAnySideEffect(t *testing.T) {
	cases := []struct {
		name   string
		scope  ora.Scope
		action func(f *fixture) ora.Action
	}{
		{"operation not allowed", ora.Scope{AllowedOperations: []string{act.TypeNotify}}, func(f *fixture) ora.Action {
			return ora.Action{Type: act.TypeObjectPut, Parameters: acttest.Params(t, map[string]any{"key": "out/a", "body": "x"})}
		}},
		{"forbidden url path", fullScope, func(f *fixture) ora.Action { return f.http(t, "/admin/users") }},
		{"forbidden object key", fullScope, func(f *fixture) ora.Action {
			return ora.Action{Type: act.TypeObjectPut, Parameters: acttest.Params(t, map[string]any{"key": "out/keys/server.pem", "body": "x"})}
		}},
		{"object outside allowed prefixes", fullScope, func(f *fixture) ora.Action {
			return ora.Action{Type: act.TypeObjectPut, Parameters: acttest.Params(t, map[string]any{"key": "elsewhere/a", "body": "x"})}
		}},
		{"host not allow-listed", fullScope, func(f *fixture) ora.Action {
			return ora.Action{Type: act.TypeHTTPRequest, Parameters: acttest.Params(t, map[string]any{"url": "http://example.invalid/x"})}
		}},
		{"unregistered type", ora.Scope{AllowedOperations: []string{"shell.exec"}}, func(f *fixture) ora.Action {
			return ora.Action{Type: "shell.exec"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, http.StatusOK)
			// A harmless first action proves nothing runs before the check.
			first := f.http(t, "/first")
			acttest.Record(t, f.db, acttest.Decision("d1", "s1", ora.Scope{AllowedOperations: append([]string{act.TypeHTTPRequest}, tc.scope.AllowedOperations...), ForbiddenPaths: tc.scope.ForbiddenPaths}, first, tc.action(f)))
			_, err := f.svc.Act(context.Background(), "s1", "d1")
			var sv *taskerr.ScopeViolation
			if !errors.As(taskerr.From(err), &sv) {
				t.Fatalf("Act: got %v, want a ScopeViolation", err)
			}
			if got := f.target.hits.Load(); got != 0 {
				t.Errorf("requests: got %d, want 0", got)
			}
			if entries, _ := os.ReadDir(f.root); len(entries) != 0 {
				t.Errorf("objects written: %d, want 0", len(entries))
			}
			if got, want := acttest.Status(t, f.db, "d1"), ora.StatusFailed; got != want {
				t.Errorf("status: got %s, want %s", got, want)
			}
			w, _ := act.LoadWave(context.Background(), f.db, "s1", "d1")
			if ev, ok := w.Evidence[1]; !ok || ev.ErrorType != "ScopeViolation" {
				t.Errorf("failure evidence: got %+v, want a ScopeViolation at index 1", ev)
			}
		})
	}
}

// tampered is a ledger whose status records report another digest.
type tampered struct {
	act.Ledger
	decision func(context.Context, string) (ora.DecisionState, error)
}

func (l tampered) Decision(ctx context.Context, id string) (ora.DecisionState, error) {
	return l.decision(ctx, id)
}

func TestActProvenance(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, f *fixture) (*act.Service, string, string)
	}{
		{"digest differs", func(t *testing.T, f *fixture) (*act.Service, string, string) {
			l := tampered{Ledger: f.db, decision: func(ctx context.Context, id string) (ora.DecisionState, error) {
				st, err := f.db.Decision(ctx, id)
				st.Digest = ora.Digest([]byte("another decision"))
				return st, err
			}}
			reg := act.NewRegistry()
			reg.Register(act.TypeHTTPRequest, act.NewHTTPRequest(act.HTTPConfig{AllowedHosts: []string{"127.0.0.1"}, SigningSecret: secret}, nil))
			return act.New(l, reg, f.once), "s1", "d1"
		}},
		{"unknown decision", func(t *testing.T, f *fixture) (*act.Service, string, string) { return f.svc, "s1", "nope" }},
		{"decision of another signal", func(t *testing.T, f *fixture) (*act.Service, string, string) { return f.svc, "s2", "d1" }},
		{"awaiting approval", func(t *testing.T, f *fixture) (*act.Service, string, string) {
			if _, err := f.db.TransitionDecision(context.Background(), "d1", ora.StatusDecided, ora.StatusAwaitingApproval, ""); err != nil {
				t.Fatal(err)
			}
			return f.svc, "s1", "d1"
		}},
		{"rejected", func(t *testing.T, f *fixture) (*act.Service, string, string) {
			ctx := context.Background()
			if _, err := f.db.TransitionDecision(ctx, "d1", ora.StatusDecided, ora.StatusAwaitingApproval, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := f.db.TransitionDecision(ctx, "d1", ora.StatusAwaitingApproval, ora.StatusRejected, "no"); err != nil {
				t.Fatal(err)
			}
			return f.svc, "s1", "d1"
		}},
		{"low confidence, never approved", func(t *testing.T, f *fixture) (*act.Service, string, string) {
			d := acttest.Decision("d2", "s1", fullScope, f.http(t, "/x"))
			d.Confidence = 0.3
			acttest.Record(t, f.db, d)
			return f.svc, "s1", "d2"
		}},
		{"the wave already ended", func(t *testing.T, f *fixture) (*act.Service, string, string) {
			e, err := ora.NewEntry("s1", ora.KindFinalVerdict, "", map[string]string{"outcome": "rejected"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.db.Append(context.Background(), e); err != nil {
				t.Fatal(err)
			}
			return f.svc, "s1", "d1"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, http.StatusOK)
			acttest.Record(t, f.db, acttest.Decision("d1", "s1", fullScope, f.http(t, "/x")))
			svc, sig, dec := tc.prepare(t, f)
			before := acttest.Status(t, f.db, "d1")
			_, err := svc.Act(context.Background(), sig, dec)
			var pe *taskerr.ProvenanceError
			if !errors.As(taskerr.From(err), &pe) {
				t.Fatalf("Act: got %v, want a ProvenanceError", err)
			}
			if got := f.target.hits.Load(); got != 0 {
				t.Errorf("requests: got %d, want 0", got)
			}
			if got := acttest.Status(t, f.db, "d1"); got != before {
				t.Errorf("status: got %s, want %s", got, before)
			}
		})
	}
}

func TestActApprovedDecisionExecutes(t *testing.T) {
	f := newFixture(t, http.StatusOK)
	acttest.Record(t, f.db, acttest.Decision("d1", "s1", fullScope, f.http(t, "/x")))
	ctx := context.Background()
	for _, tr := range [][2]ora.DecisionStatus{{ora.StatusDecided, ora.StatusAwaitingApproval}, {ora.StatusAwaitingApproval, ora.StatusApproved}} {
		if _, err := f.db.TransitionDecision(ctx, "d1", tr[0], tr[1], ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.Act(ctx, "s1", "d1"); err != nil {
		t.Fatalf("Act: %v", err)
	}
	if got, want := acttest.Status(t, f.db, "d1"), ora.StatusExecuted; got != want {
		t.Errorf("status: got %s, want %s", got, want)
	}
}

func TestActRetriesAreIdempotent(t *testing.T) {
	for _, store := range acttest.Stores {
		t.Run(store.Name, func(t *testing.T) { testRetries(t, store.Open(t)) })
	}
}

func testRetries(t *testing.T, st acttest.Store) {
	f := newFixtureOn(t, st, http.StatusOK)
	acttest.Record(t, f.db, acttest.Decision("d1", "s1", fullScope, f.http(t, "/a"), f.http(t, "/b")))
	ctx := context.Background()
	for i := range 3 {
		res, err := f.svc.Act(ctx, "s1", "d1")
		if err != nil {
			t.Fatalf("Act #%d: %v", i, err)
		}
		if got, want := len(res.Evidence), 2; got != want {
			t.Errorf("Act #%d evidence: got %d, want %d", i, got, want)
		}
	}
	if got, want := f.target.hits.Load(), int64(2); got != want {
		t.Errorf("requests: got %d, want %d (one per action)", got, want)
	}
}

// counting is an action with a function field, counting runs per index.
type counting struct {
	run func(ctx context.Context, params json.RawMessage) (act.Receipt, error)
}

func (c counting) Run(ctx context.Context, params json.RawMessage) (act.Receipt, error) {
	return c.run(ctx, params)
}

func TestActResumesAfterCrash(t *testing.T) {
	db := acttest.DB(t)
	var mu sync.Mutex
	ran := map[int]int{}
	reg := act.NewRegistry()
	reg.Register(act.TypeNotify, counting{run: func(ctx context.Context, _ json.RawMessage) (act.Receipt, error) {
		inv, _ := act.InvocationFrom(ctx)
		mu.Lock()
		ran[inv.Index]++
		mu.Unlock()
		return act.Receipt{Type: act.TypeNotify, ID: inv.Key}, nil
	}})
	svc := act.New(db, reg, acttest.Once(db), func(o *act.Options) { o.Log = quiet })
	n := func(msg string) ora.Action {
		return ora.Action{Type: act.TypeNotify, Parameters: acttest.Params(t, map[string]string{"message": msg})}
	}
	de := acttest.Record(t, db, acttest.Decision("d1", "s1", ora.Scope{AllowedOperations: []string{act.TypeNotify}}, n("a"), n("b")))
	ctx := context.Background()
	// The crashed run claimed the decision and recorded action 0's evidence.
	if _, err := db.TransitionDecision(ctx, "d1", ora.StatusDecided, ora.StatusExecuting, ""); err != nil {
		t.Fatal(err)
	}
	ev := act.Evidence{DecisionID: "d1", DecisionDigest: de.Digest, SignalID: "s1", Index: 0, Type: act.TypeNotify, Outcome: act.OutcomeSuccess, Receipt: &act.Receipt{Type: act.TypeNotify}}
	e, _ := ora.NewEntry("s1", ora.KindExecutionEvidence, "0", ev)
	if _, err := db.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Act(ctx, "s1", "d1")
	if err != nil {
		t.Fatalf("Act: %v", err)
	}
	if ran[0] != 0 || ran[1] != 1 {
		t.Errorf("runs per action: got %v, want only action 1 once", ran)
	}
	if got, want := len(res.Evidence), 2; got != want {
		t.Errorf("evidence: got %d, want %d", got, want)
	}
	if got, want := acttest.Status(t, db, "d1"), ora.StatusExecuted; got != want {
		t.Errorf("status: got %s, want %s", got, want)
	}
}

// A failed action fails the decision; the action that depends on it is
// recorded as skipped and never sent.
func TestActFailedAction(t *testing.T) {
	f := newFixture(t, http.StatusBadGateway)
	dependent := f.http(t, "/never")
	dependent.DependsOn = []int{0}
	acttest.Record(t, f.db, acttest.Decision("d1", "s1", fullScope, f.http(t, "/x"), dependent))
	ctx := context.Background()
	_, err := f.svc.Act(ctx, "s1", "d1")
	var af *taskerr.ActionFailed
	if !errors.As(taskerr.From(err), &af) {
		t.Fatalf("Act: got %v, want ActionFailed", err)
	}
	if got, want := acttest.Status(t, f.db, "d1"), ora.StatusFailed; got != want {
		t.Errorf("status: got %s, want %s", got, want)
	}
	w, _ := act.LoadWave(ctx, f.db, "s1", "d1")
	if ev := w.Evidence[0]; ev.Outcome != act.OutcomeFailure || ev.Receipt == nil || ev.Receipt.StatusCode != http.StatusBadGateway {
		t.Errorf("failure evidence: got %+v, want failure with status 502", ev)
	}
	if ev := w.Evidence[1]; ev.Outcome != act.OutcomeSkipped || ev.Receipt != nil {
		t.Errorf("dependent's evidence: got %+v, want skipped without a receipt", ev)
	}
	// A second run never executes a failed decision again.
	_, err = f.svc.Act(ctx, "s1", "d1")
	var pe *taskerr.ProvenanceError
	if !errors.As(taskerr.From(err), &pe) {
		t.Errorf("second Act: got %v, want ProvenanceError", err)
	}
	if got, want := f.target.hits.Load(), int64(1); got != want {
		t.Errorf("requests: got %d, want %d", got, want)
	}
}

func TestActInvalidRequest(t *testing.T) {
	f := newFixture(t, http.StatusOK)
	for _, tc := range []struct{ name, signal, decision, field string }{
		{"no signal", "", "d1", "signal_id"},
		{"no decision", "s1", "", "decision_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.svc.Act(context.Background(), tc.signal, tc.decision)
			if got := ora.ErrorField(err); got != tc.field {
				t.Errorf("field: got %q, want %q (%v)", got, tc.field, err)
			}
		})
	}
}

// BenchmarkAct measures one decision of one notify action through provenance,
// scope, the idempotency record, the action and its evidence, on SQLite.
func BenchmarkAct(b *testing.B) {
	db := acttest.DB(b)
	reg := act.NewRegistry()
	reg.Register(act.TypeNotify, act.NewLogNotify(quiet))
	svc := act.New(db, reg, acttest.Once(db), func(o *act.Options) { o.Log = quiet })
	scope := ora.Scope{AllowedOperations: []string{act.TypeNotify}}
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		id := "d" + strconv.Itoa(i)
		acttest.Record(b, db, acttest.Decision(id, "s"+strconv.Itoa(i), scope,
			ora.Action{Type: act.TypeNotify, Parameters: json.RawMessage(`{"message":"hi"}`)}))
		b.StartTimer()
		if _, err := svc.Act(ctx, "s"+strconv.Itoa(i), id); err != nil {
			b.Fatal(err)
		}
	}
}
