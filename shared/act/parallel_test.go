package act_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

const typeStep = "test.step"

// step is an action whose runs the test drives: each run of action i
// reports its start on started, then waits for release[i]; fail and unknown
// say how action i ends (unknown only on its first run).
type step struct {
	started chan int
	release []chan struct{}
	fail    map[int]bool
	unknown map[int]bool

	running, peak atomic.Int64
	mu            sync.Mutex
	events        []string
	runs          map[int]int
	keys          []string
}

func newStep(n int) *step {
	s := &step{started: make(chan int, 4*n), release: make([]chan struct{}, n), fail: map[int]bool{}, unknown: map[int]bool{}, runs: map[int]int{}}
	for i := range s.release {
		s.release[i] = make(chan struct{})
	}
	return s
}

func (s *step) releaseAll() {
	for _, c := range s.release {
		close(c)
	}
}

func (s *step) log(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

func (s *step) Run(ctx context.Context, params json.RawMessage) (act.Receipt, error) {
	var p struct {
		I int `json:"i"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return act.Receipt{}, ora.Invalid("test.step", "%v", err)
	}
	inv, _ := act.InvocationFrom(ctx)
	s.mu.Lock()
	s.runs[p.I]++
	first := s.runs[p.I] == 1
	s.keys = append(s.keys, inv.Key)
	s.mu.Unlock()
	n := s.running.Add(1)
	for {
		old := s.peak.Load()
		if n <= old || s.peak.CompareAndSwap(old, n) {
			break
		}
	}
	s.log(fmt.Sprintf("start %d", p.I))
	s.started <- p.I
	select {
	case <-s.release[p.I]:
	case <-ctx.Done():
	}
	s.running.Add(-1)
	s.log(fmt.Sprintf("end %d", p.I))
	r := act.Receipt{Type: typeStep, ID: fmt.Sprint(p.I), At: time.Now().UTC()}
	switch {
	case s.fail[p.I]:
		return r, fmt.Errorf("step %d failed", p.I)
	case s.unknown[p.I] && first:
		return r, &act.UnknownOutcomeError{Err: fmt.Errorf("step %d: no answer", p.I)}
	}
	return r, nil
}

func (s *step) index(e string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Index(s.events, e)
}

var stepScope = ora.Scope{AllowedOperations: []string{typeStep}}

// stepAction is action i of a plan, depending on deps.
func stepAction(t *testing.T, i int, deps ...int) ora.Action {
	t.Helper()
	return ora.Action{Type: typeStep, Parameters: acttest.Params(t, map[string]int{"i": i}), DependsOn: deps}
}

func stepService(l act.Ledger, s *step, once act.Once, maxParallel int) *act.Service {
	reg := act.NewRegistry()
	reg.Register(typeStep, s)
	return act.New(l, reg, once, func(o *act.Options) { o.Log, o.MaxParallel = quiet, maxParallel })
}

// waitStart returns the next action index to start. The bound only keeps a
// broken scheduler from hanging the test; nothing is timed.
func waitStart(t *testing.T, s *step) int {
	t.Helper()
	select {
	case i := <-s.started:
		return i
	case <-time.After(time.Minute):
		t.Fatal("no action started")
		return -1
	}
}

type actResult struct {
	res act.Result
	err error
}

func actAsync(svc *act.Service) chan actResult {
	done := make(chan actResult, 1)
	go func() {
		res, err := svc.Act(context.Background(), "s1", "d1")
		done <- actResult{res, err}
	}()
	return done
}

// Actions that depend on nothing are all running at once: each waits for a
// release that comes only after every one has started.
func TestActIndependentActionsRunConcurrently(t *testing.T) {
	db := acttest.DB(t)
	s := newStep(3)
	svc := stepService(db, s, acttest.Once(db), 0)
	acttest.Record(t, db, acttest.Decision("d1", "s1", stepScope, stepAction(t, 0), stepAction(t, 1), stepAction(t, 2)))
	done := actAsync(svc)
	var got []int
	for range 3 {
		got = append(got, waitStart(t, s))
	}
	s.releaseAll()
	r := <-done
	if r.err != nil {
		t.Fatalf("Act: %v", r.err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{0, 1, 2}) || s.peak.Load() != 3 {
		t.Errorf("started %v, at most %d at once; want 0, 1, 2 all at once", got, s.peak.Load())
	}
	if len(r.res.Actions) != 3 || r.res.Outcome != act.OutcomeSuccess {
		t.Errorf("result %+v, want three successes", r.res)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	slices.Sort(s.keys)
	if !slices.Equal(s.keys, []string{"d1/0", "d1/1", "d1/2"}) {
		t.Errorf("idempotency keys %v, want one per action", s.keys)
	}
}

// actions.max_parallel bounds the actions running at once: with 2, four
// independent actions run two at a time, never three.
func TestActMaxParallelBoundsConcurrency(t *testing.T) {
	db := acttest.DB(t)
	s := newStep(4)
	svc := stepService(db, s, acttest.Once(db), 2)
	acttest.Record(t, db, acttest.Decision("d1", "s1", stepScope, stepAction(t, 0), stepAction(t, 1), stepAction(t, 2), stepAction(t, 3)))
	done := actAsync(svc)
	a, b := waitStart(t, s), waitStart(t, s)
	if got := s.running.Load(); got != 2 {
		t.Errorf("running after two starts: %d", got)
	}
	close(s.release[a])
	c := waitStart(t, s)
	close(s.release[b])
	d := waitStart(t, s)
	close(s.release[c])
	close(s.release[d])
	if r := <-done; r.err != nil {
		t.Fatalf("Act: %v", r.err)
	}
	if got := s.peak.Load(); got != 2 {
		t.Errorf("at most %d actions ran at once, want 2", got)
	}
}

// An action starts only once every action it depends on has ended; an
// unrelated action runs meanwhile.
func TestActDependsOnOrdersActions(t *testing.T) {
	db := acttest.DB(t)
	s := newStep(3)
	svc := stepService(db, s, acttest.Once(db), 0)
	acttest.Record(t, db, acttest.Decision("d1", "s1", stepScope, stepAction(t, 0), stepAction(t, 1, 0), stepAction(t, 2)))
	done := actAsync(svc)
	first := []int{waitStart(t, s), waitStart(t, s)}
	slices.Sort(first)
	if !slices.Equal(first, []int{0, 2}) {
		t.Fatalf("first to start: %v, want 0 and 2 (1 waits for 0)", first)
	}
	close(s.release[2])
	close(s.release[0])
	if got := waitStart(t, s); got != 1 {
		t.Fatalf("then %d started, want 1", got)
	}
	close(s.release[1])
	if r := <-done; r.err != nil {
		t.Fatalf("Act: %v", r.err)
	}
	if end0, start1 := s.index("end 0"), s.index("start 1"); end0 < 0 || start1 < end0 {
		t.Errorf("events %v: action 1 started before action 0 ended", s.events)
	}
}

// A failed action skips its dependents (transitively: recorded as skipped,
// never run) and not the other actions; the decision fails and its error
// lists every action's outcome.
func TestActFailureSkipsOnlyDependents(t *testing.T) {
	for _, store := range acttest.Stores {
		t.Run(store.Name, func(t *testing.T) {
			st := store.Open(t)
			s := newStep(5)
			s.fail[0] = true
			s.releaseAll()
			svc := stepService(st.Ledger, s, st.Once, 0)
			acttest.Record(t, st.Ledger, acttest.Decision("d1", "s1", stepScope,
				stepAction(t, 0), stepAction(t, 1, 0), stepAction(t, 2, 1), stepAction(t, 3), stepAction(t, 4, 3)))
			_, err := svc.Act(context.Background(), "s1", "d1")
			var af *taskerr.ActionFailed
			if !errors.As(taskerr.From(err), &af) {
				t.Fatalf("Act: %v, want ActionFailed", err)
			}
			want := "(actions: 0 test.step failure; 1 test.step skipped; 2 test.step skipped; 3 test.step success; 4 test.step success)"
			if !strings.Contains(af.Message, "action 0 (test.step) failed: step 0 failed") || !strings.Contains(af.Message, want) {
				t.Errorf("error %q, want action 0's failure and %s", af.Message, want)
			}
			w, err := act.LoadWave(context.Background(), st.Ledger, "s1", "d1")
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []string{act.OutcomeFailure, act.OutcomeSkipped, act.OutcomeSkipped, act.OutcomeSuccess, act.OutcomeSuccess} {
				if got := w.Evidence[i].Outcome; got != want {
					t.Errorf("action %d: %s (%s), want %s", i, got, w.Evidence[i].Error, want)
				}
			}
			if ev := w.Evidence[2]; !strings.Contains(ev.Error, "action 1") {
				t.Errorf("action 2 skipped because %q, want action 1 named", ev.Error)
			}
			s.mu.Lock()
			runs := s.runs
			s.mu.Unlock()
			if runs[1] != 0 || runs[2] != 0 || runs[3] != 1 || runs[4] != 1 {
				t.Errorf("runs %v: want 1 and 2 never run, 3 and 4 once", runs)
			}
			if got := acttest.Status(t, st.Ledger, "d1"); got != ora.StatusFailed {
				t.Errorf("status %s, want failed", got)
			}
		})
	}
}

// An unknown outcome leaves its dependents pending (no evidence) while the
// others run; once the operator says the action did not run, Act runs it
// again under a new key and then its dependent.
func TestActUnknownOutcomeHoldsDependents(t *testing.T) {
	db := acttest.DB(t)
	s := newStep(3)
	s.unknown[0] = true
	s.releaseAll()
	svc := stepService(db, s, acttest.Once(db), 0)
	acttest.Record(t, db, acttest.Decision("d1", "s1", stepScope, stepAction(t, 0), stepAction(t, 1, 0), stepAction(t, 2)))
	_, err := svc.Act(context.Background(), "s1", "d1")
	var ou *taskerr.OutcomeUnknown
	if !errors.As(taskerr.From(err), &ou) || !strings.Contains(ou.Message, "1 test.step pending") {
		t.Fatalf("Act: %v, want OutcomeUnknown listing action 1 as pending", err)
	}
	w, err := act.LoadWave(context.Background(), db, "s1", "d1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Evidence[1]; ok || w.Evidence[0].Outcome != act.OutcomeUnknown || w.Evidence[2].Outcome != act.OutcomeSuccess {
		t.Fatalf("evidence %+v: want 0 unknown, 1 none, 2 success", w.Evidence)
	}
	// The operator: action 0 did not run.
	e, err := ora.NewEntry("s1", ora.KindOperatorDecision, act.ResolutionQualifier(0, 1), act.Resolution{DecisionID: "d1", Index: 0, Attempt: 1, By: "operator", At: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if _, err := db.TransitionDecision(context.Background(), "d1", ora.StatusUnknown, ora.StatusExecuting, "operator: not executed"); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Act(context.Background(), "s1", "d1")
	if err != nil || res.Outcome != act.OutcomeSuccess {
		t.Fatalf("Act after the answer: %+v, %v", res, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.keys, "d1/0/r1") || s.runs[1] != 1 || s.runs[2] != 1 {
		t.Errorf("keys %v, runs %v: want 0 again as d1/0/r1, 1 once, 2 not again", s.keys, s.runs)
	}
}

// A process that dies while one of two parallel actions runs (the other
// finished) leaves that action's lock; once it expires the retry runs that
// action again under the same key and leaves the finished one alone.
func TestActParallelCrashMidAction(t *testing.T) {
	db := acttest.DB(t)
	once, clk := clockedOnce(db)
	s := newStep(2)
	s.releaseAll()
	acttest.Record(t, db, acttest.Decision("d1", "s1", stepScope, stepAction(t, 0), stepAction(t, 1)))

	// Action 0's run dies after it ran; action 1's finishes.
	sent, finished := make(chan struct{}), make(chan struct{})
	dies := dying(once, sent)
	half := func(ctx context.Context, key string, payload []byte, fn func(context.Context) (act.Receipt, error)) (act.Receipt, error) {
		if key == "d1/1" {
			defer close(finished)
			return once(ctx, key, payload, fn)
		}
		return dies(ctx, key, payload, fn)
	}
	go func() { _, _ = stepService(db, s, half, 0).Act(context.Background(), "s1", "d1") }()
	<-sent
	<-finished

	svc := stepService(db, s, once, 0)
	if _, err := svc.Act(context.Background(), "s1", "d1"); !isTransient(err) {
		t.Fatalf("retry while the lock holds: %v, want a TransientError", err)
	}
	clk.Add(act.DefaultActionTimeout + act.LockMargin + time.Second)
	res, err := svc.Act(context.Background(), "s1", "d1")
	if err != nil || res.Outcome != act.OutcomeSuccess {
		t.Fatalf("retry after the lock expired: %+v, %v", res, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	zero := 0
	for _, k := range s.keys {
		if k == "d1/0" {
			zero++
		}
	}
	if s.runs[0] != 2 || s.runs[1] != 1 || zero != 2 {
		t.Errorf("runs %v, keys %v: want action 0 twice under d1/0, action 1 once", s.runs, s.keys)
	}
	if got := acttest.Status(t, db, "d1"); got != ora.StatusExecuted {
		t.Errorf("status %s, want executed", got)
	}
}

func TestCheckDependsOn(t *testing.T) {
	a := func(deps ...int) ora.Action { return ora.Action{Type: "notify", DependsOn: deps} }
	tests := []struct {
		name    string
		actions []ora.Action
		wantErr string
	}{
		{"none", []ora.Action{a(), a()}, ""},
		{"earlier ones", []ora.Action{a(), a(0), a(0, 1)}, ""},
		{"itself", []ora.Action{a(), a(1)}, "itself"},
		{"a later one", []ora.Action{a(1), a()}, "earlier"},
		{"negative", []ora.Action{a(), a(-1)}, "earlier"},
		{"twice", []ora.Action{a(), a(0, 0)}, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ora.CheckDependsOn(tt.actions)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("got %v, want valid", err)
				}
				return
			}
			if ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got %v, want EINVALID saying %q", err, tt.wantErr)
			}
		})
	}
}
