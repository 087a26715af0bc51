package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/stepfn"
)

// lambdaServiceErrors are the errors the Lambda service itself raises for an
// invocation (not the function): the wave's definition retries each.
var lambdaServiceErrors = []string{
	"Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException",
}

// fault is one injected failure: the named error (or a panic) on the first
// invocation of a function within a wave, before the handler runs or after it
// ran (the response lost on the way back).
type fault struct {
	function string
	err      string // a Lambda service error name, or "panic"
	after    bool
	always   bool // every call fails: the retries run out
}

// faulty wraps a task handler and injects fault into the first call per signal.
type faulty struct {
	inner stepfn.Handler
	f     *atomic.Pointer[fault]
	name  string
	seen  *sync.Map // signal_id + function -> struct{}
}

func (h faulty) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	f := h.f.Load()
	if f == nil || f.function != h.name {
		return h.inner.Invoke(ctx, payload)
	}
	var in struct {
		SignalID string `json:"signal_id"`
		Batch    struct {
			SignalID string `json:"signal_id"`
		} `json:"BatchInput"` // the Fetch Map's batches
	}
	_ = json.Unmarshal(payload, &in)
	if in.SignalID == "" {
		in.SignalID = in.Batch.SignalID
	}
	if _, dup := h.seen.LoadOrStore(in.SignalID+"/"+h.name, struct{}{}); dup && !f.always {
		return h.inner.Invoke(ctx, payload)
	}
	if f.after {
		if _, err := h.inner.Invoke(ctx, payload); err != nil {
			return nil, err
		}
	}
	if f.err == "panic" {
		panic("injected panic in " + h.name)
	}
	return nil, messages.InvokeResponse_Error{Type: f.err, Message: "injected " + f.err}
}

// actionLog counts the notify actions the actor runs (LogNotify logs each
// with its id; a reviewer notification has none).
type actionLog struct {
	mu    sync.Mutex
	count map[string]int // subject -> runs
}

func (a *actionLog) Enabled(context.Context, slog.Level) bool { return true }
func (a *actionLog) WithAttrs([]slog.Attr) slog.Handler       { return a }
func (a *actionLog) WithGroup(string) slog.Handler            { return a }
func (a *actionLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "notify" {
		return nil
	}
	var id, subject string
	r.Attrs(func(at slog.Attr) bool {
		switch at.Key {
		case "id":
			id = at.Value.String()
		case "subject":
			subject = at.Value.String()
		}
		return true
	})
	if id != "" {
		a.mu.Lock()
		a.count[subject]++
		a.mu.Unlock()
	}
	return nil
}

func (a *actionLog) runs(signalID string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count["test signal "+signalID]
}

// intentRule adds a high-confidence tier-3 rule, so a wave runs the intent
// validator without waiting for a human.
const intentRule = `  - name: test-tier3
    description: A high-confidence tier-3 test signal (every validator runs).
    when:
      all:
        - field: source.provider
          in: [hmac, none]
        - field: payload.confidence
          equals: tier3
    then:
      action: notify
      parameters:
        subject: "test signal {{ id }}"
        message: "tier-3 test signal"
      confidence: 0.95
      tier: 3
      author_type: auditor
      scope:
        allowed_operations: [notify]
      reasoning: The test source asked for a tier-3 high-confidence path.

`

// Each Lambda service error and a handler panic, injected into every Task of
// the real definition on the local engine with the real handlers: every wave
// ends in a terminal state with exactly one recorded final verdict, and no
// action runs twice.
func TestFaultsEndWithAVerdict(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	rules := strings.Replace(string(defaultrules.Default), "\nrules:\n", "\nrules:\n"+intentRule, 1)
	cfg.RulesFile = filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfg.RulesFile, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	actions := &actionLog{count: map[string]int{}}
	r, err := New(ctx, cfg, func(o *Options) {
		o.Logger = slog.New(actions)
		o.Clock = stepfn.NewVirtualClock(time.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hs, err := r.taskHandlers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var current atomic.Pointer[fault]
	seen := &sync.Map{}
	for name, h := range hs {
		r.registerHandler(name, faulty{inner: h, f: &current, name: name, seen: seen})
	}
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	src, _ := cfg.Source("demo")

	// The signal whose wave passes through each function, and the verdict it
	// ends with when nothing fails.
	paths := map[string]struct{ confidence, outcome string }{
		"plan": {"high", "completed"}, "fetch": {"high", "completed"}, "compile": {"high", "completed"},
		"reason": {"high", "completed"}, "act": {"high", "completed"}, "validate-technical": {"high", "completed"},
		"witness": {"high", "completed"}, "record": {"high", "completed"},
		"flag-review": {"medium", "completed"}, "validate-safety": {"medium", "completed"},
		"validate-intent": {"tier3", "completed"},
		"escalate":        {"low", "rejected"}, // the virtual clock lets the escalation time out
		"operate":         {"fail", "failed"},
	}
	for _, name := range functionNames {
		if _, ok := paths[name]; !ok {
			t.Fatalf("no path through function %s", name)
		}
	}
	var faults []fault
	for _, name := range functionNames {
		for _, e := range lambdaServiceErrors {
			faults = append(faults, fault{function: name, err: e})
		}
		if name != "operate" { // Operate is where failures go; its own panic fails the execution
			faults = append(faults, fault{function: name, err: "panic"})
		}
	}
	// The response of a function that did its work, lost on the way back:
	// at every stage's boundary, its writes committed, the retry must find
	// them and write nothing twice.
	for _, name := range functionNames {
		if name != "act" && name != "record" && name != "operate" {
			faults = append(faults, fault{function: name, err: "Lambda.ServiceException", after: true})
		}
	}
	faults = append(faults,
		fault{function: "act", err: "Lambda.ServiceException", after: true},
		fault{function: "act", err: "panic", after: true},
		fault{function: "record", err: "Lambda.SdkClientException", after: true},
		fault{function: "operate", err: "Lambda.SdkClientException", after: true},
		// Throttled on every attempt: the retries run out and Operate records it.
		fault{function: "plan", err: "Lambda.TooManyRequestsException", always: true},
		fault{function: "reason", err: "Lambda.ServiceException", always: true},
		fault{function: "act", err: "Lambda.TooManyRequestsException", always: true},
		fault{function: "witness", err: "Lambda.AWSLambdaException", always: true},
		fault{function: "record", err: "Lambda.SdkClientException", always: true},
	)

	// send sends a wave of the given confidence and waits for its end.
	send := func(t *testing.T, confidence, id string) (observe.Receipt, httpapi.Wave) {
		t.Helper()
		body := []byte(fmt.Sprintf(`{"confidence":%q,"n":%q}`, confidence, id))
		h, _ := observe.SignDelivery(src, body, time.Now(), id)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/demo", strings.NewReader(string(body)))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("webhook: %v %v", resp, err)
		}
		var rec observe.Receipt
		_ = json.NewDecoder(resp.Body).Decode(&rec)
		resp.Body.Close()
		w, err := waves{r}.Wave(ctx, rec.WaveID)
		for deadline := time.Now().Add(3 * time.Minute); (err == nil && w.Status == "RUNNING" || ora.ErrorCode(err) == ora.ENOTFOUND) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			w, err = waves{r}.Wave(ctx, rec.WaveID)
		}
		if err != nil || (w.Status != "SUCCEEDED" && w.Status != "FAILED") {
			t.Fatalf("wave not terminal: %+v, %v", w, err)
		}
		return rec, w
	}
	// kinds counts a wave's entries by kind, leaving out the kinds a retry
	// adds by design: a retried escalation records its new task token (an
	// architect-intent), Operate its incident notes.
	kinds := func(t *testing.T, signalID string) map[ora.EntryKind]int {
		t.Helper()
		es, err := r.ledger.Entries(ctx, signalID)
		if err != nil {
			t.Fatal(err)
		}
		n := map[ora.EntryKind]int{}
		for _, e := range es {
			if e.Kind != ora.KindArchitectIntent && e.Kind != ora.KindOperatorDecision {
				n[e.Kind]++
			}
		}
		return n
	}
	// clean holds, per confidence, the entry counts of a wave nothing failed.
	clean := map[string]map[ora.EntryKind]int{}

	for i, f := range faults {
		mode := "before"
		switch {
		case f.after:
			mode = "after"
		case f.always:
			mode = "always"
		}
		t.Run(fmt.Sprintf("%s/%s/%s", f.function, f.err, mode), func(t *testing.T) {
			path := paths[f.function]
			if f.after && path.outcome == "completed" && clean[path.confidence] == nil {
				rec, _ := send(t, path.confidence, fmt.Sprintf("clean-%d", i))
				clean[path.confidence] = kinds(t, rec.SignalID)
			}
			current.Store(&f)
			defer current.Store(nil)
			rec, w := send(t, path.confidence, fmt.Sprintf("fault-%d", i))
			want := path.outcome
			if f.err == "panic" || f.always {
				want = "failed" // not retried, or retried to the end: caught into Operate
			}
			entries, err := r.ledger.Entries(ctx, rec.SignalID)
			if err != nil {
				t.Fatal(err)
			}
			var verdicts []string
			evidence := 0
			for _, e := range entries {
				switch e.Kind {
				case ora.KindFinalVerdict:
					var v struct {
						Outcome string `json:"outcome"`
					}
					_ = json.Unmarshal(e.Body, &v)
					verdicts = append(verdicts, v.Outcome)
				case ora.KindExecutionEvidence:
					evidence++
				}
			}
			if len(verdicts) != 1 || verdicts[0] != want {
				t.Fatalf("final verdicts %v (wave %s %s), want one %q", verdicts, w.Status, w.Error, want)
			}
			if (w.Status == "SUCCEEDED") != (want != "failed") {
				t.Errorf("wave status %s with verdict %s", w.Status, want)
			}
			if runs := actions.runs(rec.SignalID); runs > 1 || evidence > 1 {
				t.Errorf("the action ran %d times (%d evidence entries), want at most once", runs, evidence)
			}
			if want == "completed" && actions.runs(rec.SignalID) != 1 {
				t.Errorf("completed wave ran its action %d times, want 1", actions.runs(rec.SignalID))
			}
			if ref := clean[path.confidence]; f.after && want == "completed" && ref != nil {
				// Every stage's entries once, none lost: as a clean wave.
				if got := kinds(t, rec.SignalID); !maps.Equal(got, ref) {
					t.Errorf("entries by kind %v, want a clean wave's %v", got, ref)
				}
			}
		})
	}
}
