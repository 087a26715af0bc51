package operate_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// target is an HTTP receiver that leaves its first request unanswered (the
// caller's timeout ends it: the outcome is unknown) and answers the others.
type target struct {
	mu   sync.Mutex
	keys []string
	hang chan struct{}
}

func (tg *target) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	tg.mu.Lock()
	tg.keys = append(tg.keys, r.Header.Get(act.HeaderIdempotencyKey))
	first := len(tg.keys) == 1
	tg.mu.Unlock()
	if first {
		select {
		case <-tg.hang:
		case <-r.Context().Done():
		}
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (tg *target) requests() []string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]string(nil), tg.keys...)
}

// tokens is a Resumer that records what each token was settled with.
type tokens struct {
	mu  sync.Mutex
	out map[string][]byte
}

func (tk *tokens) SendTaskSuccess(_ context.Context, token string, output []byte) error {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if _, done := tk.out[token]; done {
		return ora.Conflict(nil, "task %s is no longer waiting", token)
	}
	tk.out[token] = output
	return nil
}

// pauseOnUnknown runs decision d1 of wave s1 to its unknown outcome and has
// the operator pause the wave (task token "token-1").
func pauseOnUnknown(t *testing.T, l ora.Ledger, actor *act.Service) (*operate.Service, *tokens, operate.Outcome) {
	t.Helper()
	ctx := context.Background()
	resumer := &tokens{out: map[string][]byte{}}
	ops := operate.New(l, func(o *operate.Options) {
		o.Resumer = resumer
		o.FailedStage = func(context.Context, string) (string, error) { return "Act", nil }
	})
	_, err := actor.Act(ctx, "s1", "d1")
	var unknown *taskerr.OutcomeUnknown
	if !errors.As(err, &unknown) {
		t.Fatalf("Act: %T %v, want OutcomeUnknown", err, err)
	}
	out, err := ops.Operate(ctx, operate.Input{SignalID: "s1", Failure: operate.Failure{Error: "OutcomeUnknown", Cause: err.Error()},
		ExecutionID: "exec-1", EnteredAt: "2026-11-24T01:00:00Z", DecisionID: "d1"})
	if err != nil || out.Action != "pause" {
		t.Fatalf("Operate: %+v, %v; want a pause", out, err)
	}
	if err := ops.Pause(ctx, "s1", out.OperatorDecisionID, "token-1"); err != nil {
		t.Fatal(err)
	}
	return ops, resumer, out
}

// An action whose request went unanswered pauses its wave; resume is refused
// until an operator says whether it ran. "Executed" resumes at Validate with
// the evidence attested and nothing sent again; "not executed" resumes at
// Act, which sends the action once more under a new idempotency key, once
// however often Act runs. Over SQLite and DynamoDB Local.
func TestResolveOutcomeUnknown(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, st := range acttest.Stores {
		for _, executed := range []bool{true, false} {
			name := st.Name + "/not-executed"
			if executed {
				name = st.Name + "/executed"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				store := st.Open(t)
				tg := &target{hang: make(chan struct{})}
				srv := httptest.NewServer(tg)
				t.Cleanup(srv.Close)
				t.Cleanup(func() { close(tg.hang) })
				u, _ := url.Parse(srv.URL)
				reg := act.Standard(act.Config{HTTP: act.HTTPConfig{AllowedHosts: []string{u.Host}, SigningSecret: "s", TimeoutSeconds: 1}},
					act.NewLogNotify(quiet), act.Folder{Root: t.TempDir()}, store.Ledger, nil)
				actor := act.New(store.Ledger, reg, store.Once, func(o *act.Options) { o.Log = quiet })
				d := acttest.Decision("d1", "s1", ora.Scope{AllowedOperations: []string{act.TypeHTTPRequest}},
					ora.Action{Type: act.TypeHTTPRequest, Parameters: acttest.Params(t, map[string]any{"url": srv.URL + "/hook", "body": "{}"})})
				acttest.Record(t, store.Ledger, d)
				ops, resumer, out := pauseOnUnknown(t, store.Ledger, actor)
				if out.Taxonomy != operate.AppBuild {
					t.Errorf("Operate: %+v, want APP-BUILD", out)
				}
				if _, err := ops.Resume(ctx, "s1", operate.ResumeRequest{By: "olga"}); ora.ErrorCode(err) != ora.ECONFLICT || !strings.Contains(err.Error(), "ora resolve") {
					t.Errorf("plain resume of an unknown outcome: %v, want a conflict naming ora resolve", err)
				}

				res, err := ops.Resolve(ctx, "s1", executed, "olga", "checked the target's log")
				if err != nil {
					t.Fatalf("Resolve: %v", err)
				}
				var sent struct {
					ResumeAt string `json:"resume_at"`
				}
				_ = json.Unmarshal(resumer.out["token-1"], &sent)
				wantStage, wantStatus := "Act", ora.StatusExecuting
				if executed {
					wantStage, wantStatus = "Validate", ora.StatusExecuted
				}
				if res.ResumeAt != wantStage || sent.ResumeAt != wantStage || res.Index != 0 || res.Attempt != 1 || res.DecisionID != "d1" {
					t.Errorf("resolution %+v, token settled with %q; want resume at %s, action 0, attempt 1", res, sent.ResumeAt, wantStage)
				}
				if s := acttest.Status(t, store.Ledger, "d1"); s != wantStatus {
					t.Errorf("decision %s, want %s", s, wantStatus)
				}
				entries, _ := store.Ledger.Entries(ctx, "s1")
				recorded := false
				for _, e := range entries {
					if e.Kind == ora.KindOperatorDecision && e.Qualifier == act.ResolutionQualifier(0, 1) {
						var r act.Resolution
						_ = json.Unmarshal(e.Body, &r)
						recorded = r.Executed == executed && r.By == "olga" && r.OperatorDecisionID == out.OperatorDecisionID
					}
				}
				if !recorded {
					t.Error("no operator-decision entry records the resolution")
				}
				if _, err := ops.Resolve(ctx, "s1", executed, "olga", ""); ora.ErrorCode(err) != ora.ECONFLICT {
					t.Errorf("a second resolution: %v, want a conflict", err)
				}

				// The resumed wave: Act runs (not executed) or is skipped; a
				// retry of Act after it finished sends nothing more.
				if !executed {
					for range 2 {
						if _, err := actor.Act(ctx, "s1", "d1"); err != nil {
							t.Fatalf("Act after the resolution: %v", err)
						}
					}
				}
				w, err := act.LoadWave(ctx, store.Ledger, "s1", "d1")
				if err != nil {
					t.Fatal(err)
				}
				ev := w.Evidence[0]
				keys := tg.requests()
				if executed {
					if len(keys) != 1 || ev.Outcome != act.OutcomeSuccess || ev.ResolvedBy != "olga" || ev.Attempt != 0 {
						t.Errorf("executed: requests %v, evidence %+v; want the one request, attested by olga", keys, ev)
					}
				} else {
					if len(keys) != 2 || keys[0] == keys[1] || ev.Outcome != act.OutcomeSuccess || ev.Attempt != 1 || ev.ResolvedBy != "" {
						t.Errorf("not executed: requests %v, evidence %+v; want a second request under its own key, attempt 1 succeeded", keys, ev)
					}
					if s := acttest.Status(t, store.Ledger, "d1"); s != ora.StatusExecuted {
						t.Errorf("decision after the re-run %s, want executed", s)
					}
				}
			})
		}
	}
}

// An action that depends on one whose outcome was unknown has not run: an
// operator's "executed" resumes the wave at Act (not Validate), which runs the
// dependent under its own key and nothing else.
func TestResolveExecutedRunsTheDependents(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	db := acttest.DB(t)
	tg := &target{hang: make(chan struct{})}
	srv := httptest.NewServer(tg)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(tg.hang) })
	u, _ := url.Parse(srv.URL)
	reg := act.Standard(act.Config{HTTP: act.HTTPConfig{AllowedHosts: []string{u.Host}, SigningSecret: "s", TimeoutSeconds: 1}},
		act.NewLogNotify(quiet), act.Folder{Root: t.TempDir()}, db, nil)
	actor := act.New(db, reg, acttest.Once(db), func(o *act.Options) { o.Log = quiet })
	call := func(path string, deps ...int) ora.Action {
		return ora.Action{Type: act.TypeHTTPRequest, Parameters: acttest.Params(t, map[string]any{"url": srv.URL + path, "body": "{}"}), DependsOn: deps}
	}
	acttest.Record(t, db, acttest.Decision("d1", "s1", ora.Scope{AllowedOperations: []string{act.TypeHTTPRequest}}, call("/label"), call("/report", 0)))
	ops, _, _ := pauseOnUnknown(t, db, actor)
	res, err := ops.Resolve(ctx, "s1", true, "olga", "the label is there")
	if err != nil || res.ResumeAt != "Act" || acttest.Status(t, db, "d1") != ora.StatusExecuting {
		t.Fatalf("Resolve: %+v, %v, decision %s; want resume at Act, executing", res, err, acttest.Status(t, db, "d1"))
	}
	if _, err := actor.Act(ctx, "s1", "d1"); err != nil {
		t.Fatalf("Act after the resolution: %v", err)
	}
	if keys := tg.requests(); len(keys) != 2 || keys[0] != "d1/0" || keys[1] != "d1/1" {
		t.Errorf("requests %v, want d1/0 (unanswered) then d1/1", keys)
	}
	if s := acttest.Status(t, db, "d1"); s != ora.StatusExecuted {
		t.Errorf("decision %s, want executed", s)
	}
}

// The failed verdict of a decision whose actions ran in parallel lists every
// action's outcome, and its reason names them too.
func TestFailedVerdictListsEveryAction(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	db := acttest.DB(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/labels" {
			w.WriteHeader(http.StatusUnprocessableEntity)
		}
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	reg := act.Standard(act.Config{HTTP: act.HTTPConfig{AllowedHosts: []string{u.Host}, SigningSecret: "s", TimeoutSeconds: 5}},
		act.NewLogNotify(quiet), act.Folder{Root: t.TempDir()}, db, nil)
	call := func(path string, deps ...int) ora.Action {
		return ora.Action{Type: act.TypeHTTPRequest, Parameters: acttest.Params(t, map[string]any{"url": srv.URL + path, "body": "{}"}), DependsOn: deps}
	}
	acttest.Record(t, db, acttest.Decision("d1", "s1", ora.Scope{AllowedOperations: []string{act.TypeHTTPRequest}}, call("/labels"), call("/report", 0), call("/comments")))
	_, err := act.New(db, reg, acttest.Once(db), func(o *act.Options) { o.Log = quiet }).Act(ctx, "s1", "d1")
	var failed *taskerr.ActionFailed
	if !errors.As(err, &failed) {
		t.Fatalf("Act: %v, want ActionFailed", err)
	}
	cause, _ := json.Marshal(map[string]string{"errorType": "ActionFailed", "errorMessage": failed.Message})
	ops := operate.New(db)
	if _, err := ops.Operate(ctx, operate.Input{SignalID: "s1", Failure: operate.Failure{Error: "ActionFailed", Cause: string(cause)},
		ExecutionID: "exec-1", EnteredAt: "2026-11-24T01:00:00Z", DecisionID: "d1"}); err != nil {
		t.Fatal(err)
	}
	entries, _ := db.Entries(ctx, "s1")
	var v operate.Verdict
	for _, e := range entries {
		if e.Kind == ora.KindFinalVerdict {
			_ = json.Unmarshal(e.Body, &v)
		}
	}
	got := make([]string, len(v.Actions))
	for i, a := range v.Actions {
		got[i] = a.Outcome
	}
	if strings.Join(got, ",") != "failure,skipped,success" || v.Outcome != "failed" {
		t.Errorf("verdict %s with actions %v, want failed with failure,skipped,success", v.Outcome, got)
	}
	if !strings.Contains(v.Reason, "0 http.request failure; 1 http.request skipped; 2 http.request success") {
		t.Errorf("reason %q does not list every action", v.Reason)
	}
}
