package validate_test

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
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
	"github.com/ora-runtime/ora/shared/taskerr"
	"github.com/ora-runtime/ora/shared/validate"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type fixture struct {
	db    *sqlite.DB
	root  string
	url   string
	d     ora.ReasonerDecision
	entry ora.Entry
	sig   ora.NormalizedSignal
}

var scope = ora.Scope{
	AllowedOperations: []string{act.TypeHTTPRequest, act.TypeObjectPut, act.TypeCommitmentOpen, act.TypeNotify},
	ForbiddenPaths:    []string{"secrets"},
}

// newFixture records a signal and a decision with four actions; run says
// whether the actor executes it.
func newFixture(t *testing.T, run bool) *fixture {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	t.Cleanup(srv.Close)
	f := &fixture{db: acttest.DB(t), root: t.TempDir(), url: srv.URL}
	ctx := context.Background()
	raw := []byte(`{"action":"opened","number":7}`)
	f.sig = ora.NormalizedSignal{
		ID: "s1", Source: ora.Source{Type: ora.SourceWebhook, Name: "github", Provider: "github", EventType: "issues"},
		Timestamp: time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC), Payload: raw, NormalizedAt: time.Date(2026, 11, 22, 5, 0, 1, 0, time.UTC),
		DedupKey: "github:1", RawDigest: ora.Digest(raw), Raw: raw,
	}
	e, err := ora.NewEntry("s1", ora.KindSignalReceived, "", f.sig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	f.d = acttest.Decision("d1", "s1", scope,
		ora.Action{Type: act.TypeHTTPRequest, Parameters: acttest.Params(t, map[string]any{"url": srv.URL + "/hook", "body": "hi"})},
		ora.Action{Type: act.TypeObjectPut, Parameters: acttest.Params(t, map[string]any{"key": "out/r.txt", "body": "report"})},
		ora.Action{Type: act.TypeCommitmentOpen, Parameters: acttest.Params(t, map[string]any{"id": "c1", "title": "follow up"})},
		ora.Action{Type: act.TypeNotify, Parameters: acttest.Params(t, map[string]any{"message": "done"})},
	)
	f.entry = acttest.Record(t, f.db, f.d)
	if run {
		u, _ := url.Parse(srv.URL)
		cfg := act.Config{HTTP: act.HTTPConfig{AllowedHosts: []string{u.Host}}, Object: act.ObjectConfig{AllowedPrefixes: []string{"out/"}}}
		reg := act.Standard(cfg, act.NewLogNotify(quiet), act.Folder{Root: f.root}, f.db, nil)
		if _, err := act.New(f.db, reg, acttest.Once(f.db), func(o *act.Options) { o.Log = quiet }).Act(ctx, "s1", "d1"); err != nil {
			t.Fatalf("act: %v", err)
		}
	}
	return f
}

// sameSignal re-normalizes by returning the stored signal with a new normalized_at.
func sameSignal(s ora.NormalizedSignal) (ora.NormalizedSignal, error) {
	s.NormalizedAt = time.Now()
	return s, nil
}

func (f *fixture) service(renorm validate.Renormalize) *validate.Service {
	return validate.New(f.db, func(o *validate.Options) {
		o.Objects = act.Folder{Root: f.root}
		o.Commitments = f.db
		o.Renormalize = renorm
	})
}

// forge appends evidence as a misbehaving executor would have.
func (f *fixture) forge(t *testing.T, i int, typ string, params any, targets ...string) {
	t.Helper()
	ev := act.Evidence{DecisionID: "d1", DecisionDigest: f.entry.Digest, SignalID: "s1", Index: i, Type: typ,
		Parameters: acttest.Params(t, params), Targets: targets, Outcome: act.OutcomeSuccess, Receipt: &act.Receipt{Type: typ, ID: "x", StatusCode: 200}}
	e, err := ora.NewEntry("s1", ora.KindExecutionEvidence, strconv.Itoa(i), ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Append(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

func TestValidatorsPass(t *testing.T) {
	f := newFixture(t, true)
	svc := f.service(sameSignal)
	for _, v := range []ora.Validator{ora.ValidatorTechnical, ora.ValidatorSafety, ora.ValidatorIntent, ora.ValidatorWitness} {
		t.Run(string(v), func(t *testing.T) {
			r, err := svc.Validate(context.Background(), v, "s1", "d1")
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if r.Verdict != ora.Pass {
				t.Errorf("verdict: got %s (%s), want PASS", r.Verdict, r.Summary)
			}
			if r.Attribution == nil || r.Attribution.AuthorType != v.ResponsibleAuthor() {
				t.Errorf("attribution: got %+v, want %s", r.Attribution, v.ResponsibleAuthor())
			}
			kind := ora.KindValidatorResult
			if v == ora.ValidatorWitness {
				kind = ora.KindWitnessResult
			}
			w, _ := act.LoadWave(context.Background(), f.db, "s1", "d1")
			if _, ok := w.Find(kind, string(v)); !ok {
				t.Errorf("no %s entry %s recorded", kind, v)
			}
		})
	}
}

func TestValidatorsFail(t *testing.T) {
	cases := []struct {
		name    string
		v       ora.Validator
		run     bool
		prepare func(t *testing.T, f *fixture)
		renorm  validate.Renormalize
	}{
		{name: "technical: object missing", v: ora.ValidatorTechnical, run: true, prepare: func(t *testing.T, f *fixture) {
			if err := os.Remove(filepath.Join(f.root, "out", "r.txt")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "technical: object changed", v: ora.ValidatorTechnical, run: true, prepare: func(t *testing.T, f *fixture) {
			if err := os.WriteFile(filepath.Join(f.root, "out", "r.txt"), []byte("tampered"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "technical: commitment closed", v: ora.ValidatorTechnical, run: true, prepare: func(t *testing.T, f *fixture) {
			if _, err := f.db.CloseCommitment(context.Background(), "c1", "someone"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "technical: not executed", v: ora.ValidatorTechnical},
		{name: "safety: forbidden path", v: ora.ValidatorSafety, prepare: func(t *testing.T, f *fixture) {
			f.forge(t, 0, act.TypeObjectPut, map[string]string{"key": "secrets/token"}) // targets under-reported
		}},
		{name: "safety: operation outside scope", v: ora.ValidatorSafety, prepare: func(t *testing.T, f *fixture) {
			f.forge(t, 0, "commitment.close", map[string]string{"id": "c9"})
		}},
		{name: "intent: parameters differ", v: ora.ValidatorIntent, prepare: func(t *testing.T, f *fixture) {
			for i, a := range f.d.Plan() {
				var p map[string]any
				_ = json.Unmarshal(a.Parameters, &p)
				if i == 1 {
					p["body"] = "something else"
				}
				f.forge(t, i, a.Type, p)
			}
		}},
		{name: "intent: action not planned", v: ora.ValidatorIntent, run: true, prepare: func(t *testing.T, f *fixture) {
			f.forge(t, 4, act.TypeNotify, map[string]string{"message": "extra"})
		}},
		{name: "witness: normalization differs", v: ora.ValidatorWitness, renorm: func(s ora.NormalizedSignal) (ora.NormalizedSignal, error) {
			s.Payload = json.RawMessage(`{"action":"closed","number":7}`)
			return s, nil
		}},
		{name: "witness: raw no longer normalizes", v: ora.ValidatorWitness, renorm: func(s ora.NormalizedSignal) (ora.NormalizedSignal, error) {
			return ora.NormalizedSignal{}, ora.Invalid("body", "not JSON")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.run)
			if tc.prepare != nil {
				tc.prepare(t, f)
			}
			renorm := tc.renorm
			if renorm == nil {
				renorm = sameSignal
			}
			svc := f.service(renorm)
			r, err := svc.Validate(context.Background(), tc.v, "s1", "d1")
			var vf *taskerr.ValidationFailed
			if !errors.As(taskerr.From(err), &vf) {
				t.Fatalf("Validate: got %v, want ValidationFailed", err)
			}
			if r.Verdict != ora.Fail || r.Attribution == nil || r.Attribution.AuthorType != tc.v.ResponsibleAuthor() {
				t.Errorf("result: got %+v, want FAIL attributed to %s", r, tc.v.ResponsibleAuthor())
			}
			// The FAIL is recorded; a retry answers with it.
			again, err := svc.Validate(context.Background(), tc.v, "s1", "d1")
			if !errors.As(taskerr.From(err), &vf) || again.Summary != r.Summary || !again.Timestamp.Equal(r.Timestamp) {
				t.Errorf("retry: got %+v, %v, want the stored FAIL %+v", again, err, r)
			}
		})
	}
}

func TestValidateBadRequest(t *testing.T) {
	f := newFixture(t, false)
	svc := f.service(sameSignal)
	cases := []struct {
		name             string
		v                ora.Validator
		signal, decision string
		code             string
	}{
		{"unknown validator", "vibes", "s1", "d1", ora.EINVALID},
		{"no signal", ora.ValidatorTechnical, "", "d1", ora.EINVALID},
		{"unknown decision", ora.ValidatorTechnical, "s1", "d9", ora.ENOTFOUND},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.Validate(context.Background(), tc.v, tc.signal, tc.decision)
			if got := ora.ErrorCode(err); got != tc.code {
				t.Errorf("code: got %q (%v), want %q", got, err, tc.code)
			}
		})
	}
}

// The validators see every action of a decision whose actions ran in
// parallel: the technical and intent validators name the one that failed and
// the one skipped because it depended on it, not the one that succeeded; the
// safety validator passes (the scope held for all three).
func TestValidatorsSeeEveryParallelOutcome(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	t.Cleanup(srv.Close)
	db := acttest.DB(t)
	report := ora.Action{Type: act.TypeNotify, Parameters: acttest.Params(t, map[string]any{"message": "report"}), DependsOn: []int{0}}
	acttest.Record(t, db, acttest.Decision("d1", "s1", scope,
		ora.Action{Type: act.TypeHTTPRequest, Parameters: acttest.Params(t, map[string]any{"url": srv.URL + "/labels", "body": "bug"})},
		report,
		ora.Action{Type: act.TypeNotify, Parameters: acttest.Params(t, map[string]any{"message": "comment"})},
	))
	u, _ := url.Parse(srv.URL)
	reg := act.Standard(act.Config{HTTP: act.HTTPConfig{AllowedHosts: []string{u.Host}}}, act.NewLogNotify(quiet), act.Folder{Root: t.TempDir()}, db, nil)
	if _, err := act.New(db, reg, acttest.Once(db), func(o *act.Options) { o.Log = quiet }).Act(ctx, "s1", "d1"); err == nil {
		t.Fatal("Act succeeded with a failing action")
	}
	svc := validate.New(db)
	tests := []struct {
		v        ora.Validator
		verdict  ora.Verdict
		mentions []string
		not      string
	}{
		{ora.ValidatorTechnical, ora.Fail, []string{"action 0 (http.request): outcome failure", "action 1 (notify): outcome skipped: not run: action 0"}, "action 2"},
		{ora.ValidatorIntent, ora.Fail, []string{"action 0 (http.request): did not succeed", "action 1 (notify): did not succeed"}, "action 2"},
		{ora.ValidatorSafety, ora.Pass, []string{"3 actions"}, "action"},
	}
	for _, tt := range tests {
		t.Run(string(tt.v), func(t *testing.T) {
			r, _ := svc.Validate(ctx, tt.v, "s1", "d1")
			if r.Verdict != tt.verdict {
				t.Fatalf("verdict %s (%s), want %s", r.Verdict, r.Summary, tt.verdict)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(r.Summary, m) {
					t.Errorf("summary %q does not say %q", r.Summary, m)
				}
			}
			if tt.verdict == ora.Fail && strings.Contains(r.Summary, tt.not) {
				t.Errorf("summary %q names %s, which succeeded", r.Summary, tt.not)
			}
		})
	}
}
