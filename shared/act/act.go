package act

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Ledger is the part of ora.Ledger the actor calls.
type Ledger interface {
	Entries
	// Commit: see ora.Ledger. The actor's evidence and the decision's move
	// out of executing are one stage. Errors: EINVALID, ENOTFOUND,
	// ECONFLICT (with the stored Entry or DecisionState), ETRANSIENT.
	Commit(ctx context.Context, s ora.Stage) (ora.Committed, error)
	// Decision: see ora.Ledger. Errors: ENOTFOUND, ETRANSIENT.
	Decision(ctx context.Context, decisionID string) (ora.DecisionState, error)
	// TransitionDecision: see ora.Ledger. Errors: EINVALID, ENOTFOUND,
	// ECONFLICT (with the current DecisionState), ETRANSIENT.
	TransitionDecision(ctx context.Context, decisionID string, from, to ora.DecisionStatus, reason string) (ora.DecisionState, error)
}

// Once runs fn at most once per key and hands later callers of the same key
// (and payload) the stored result. The wiring adapts the idempotency package
// to it. Errors: ECONFLICT when the key was used with another payload,
// ETRANSIENT while another caller is running fn, fn's error otherwise (an
// error from fn is not stored: the next caller runs fn again).
type Once func(ctx context.Context, key string, payload []byte, fn func(context.Context) (Receipt, error)) (Receipt, error)

// Lock bounds: an action's idempotency lock lasts its timeout (its Timeout
// method, DefaultActionTimeout without one) plus LockMargin, so a retry after a
// crash waits for the lock to expire and runs the action again under the same
// idempotency key. Act's TransientError goes to the operator, whose last
// automatic retry of Act waits MaxActionTimeout+LockMargin (operate.ActLockWait).
const (
	DefaultActionTimeout = 30 * time.Second
	MaxActionTimeout     = 60 * time.Second
	LockMargin           = 10 * time.Second
)

// Timeouter is an action that bounds its own run; its lock lasts that long
// plus LockMargin.
type Timeouter interface {
	// Timeout is the longest one Run takes (at most MaxActionTimeout).
	Timeout() time.Duration
}

// UnknownOutcomeError is what an action returns when its request went out and
// no answer came back: it may or may not have taken effect.
type UnknownOutcomeError struct{ Err error }

func (e *UnknownOutcomeError) Error() string { return "outcome unknown: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// Options tune a Service.
type Options struct {
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// Log receives one line per action. Default slog.Default().
	Log *slog.Logger
	// MaxParallel bounds the actions of one decision that run at once
	// (those whose depends_on have all succeeded). Default
	// DefaultMaxParallel; 1 runs them one after another.
	MaxParallel int
}

// DefaultMaxParallel is how many actions of a decision run at once unless
// the configuration (actions.max_parallel) says otherwise.
const DefaultMaxParallel = 4

// Service runs decisions.
type Service struct {
	ledger   Ledger
	registry *Registry
	once     Once
	now      func() time.Time
	log      *slog.Logger
	parallel int
}

// New returns an actor writing to ledger, running actions from registry, each
// once per (decision id, action index) through once.
func New(ledger Ledger, registry *Registry, once Once, opts ...func(*Options)) *Service {
	o := Options{Now: time.Now, Log: slog.Default(), MaxParallel: DefaultMaxParallel}
	for _, f := range opts {
		f(&o)
	}
	if o.MaxParallel < 1 {
		o.MaxParallel = DefaultMaxParallel
	}
	return &Service{ledger: ledger, registry: registry, once: once, now: o.Now, log: o.Log, parallel: o.MaxParallel}
}

// Result is what Act returns: the contract of the act task. Evidence lists
// the indexes of the actions with success evidence; Actions gives every
// action's outcome.
type Result struct {
	Outcome  string          `json:"outcome"`
	Evidence []string        `json:"evidence"`
	Actions  []ActionOutcome `json:"actions,omitempty"`
}

func provenance(format string, args ...any) error {
	return &taskerr.ProvenanceError{Message: fmt.Sprintf(format, args...)}
}

// Act proves the provenance of decisionID, claims it (decided|approved ->
// executing), checks its scope and runs its plan, recording evidence per
// action, then moves it to executed. A retry resumes a decision already
// executing and runs only the actions without evidence; an executed decision
// answers with its evidence and runs nothing. Errors: *taskerr.ProvenanceError,
// *taskerr.ScopeViolation and *taskerr.ActionFailed (the decision is then
// failed), EINVALID for a bad request, ETRANSIENT.
func (s *Service) Act(ctx context.Context, signalID, decisionID string) (Result, error) {
	if signalID == "" {
		return Result{}, ora.Invalid("signal_id", "required")
	}
	if decisionID == "" {
		return Result{}, ora.Invalid("decision_id", "required")
	}
	state, err := s.ledger.Decision(ctx, decisionID)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return Result{}, provenance("decision %s has no status record", decisionID)
	}
	if err != nil {
		return Result{}, fmt.Errorf("act: read decision %s: %w", decisionID, err)
	}
	if state.SignalID != signalID {
		return Result{}, provenance("decision %s belongs to signal %s, not %s", decisionID, state.SignalID, signalID)
	}
	w, err := LoadWave(ctx, s.ledger, signalID, decisionID)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return Result{}, provenance("decision %s is not in the ledger: %v", decisionID, err)
	}
	if err != nil {
		return Result{}, fmt.Errorf("act: %w", err)
	}
	if d := ora.Digest(w.DecisionEntry.Body); d != w.DecisionEntry.Digest || d != state.Digest {
		return Result{}, provenance("decision %s: digest %s of the ledger entry differs from %s of its status record", decisionID, d, state.Digest)
	}
	if w.Decision.ID != decisionID || w.Decision.SignalID != signalID {
		return Result{}, provenance("decision %s: the entry names decision %s of signal %s", decisionID, w.Decision.ID, w.Decision.SignalID)
	}

	if _, done := w.Find(ora.KindFinalVerdict, ""); done && state.Status != ora.StatusExecuting && state.Status != ora.StatusExecuted {
		// The wave already ended (e.g. an approval that arrived after the
		// escalation timed out): its decision may no longer run.
		return Result{}, provenance("decision %s: the wave already has a final verdict", decisionID)
	}
	if state.Status == ora.StatusDecided && w.Decision.Band() == ora.BandLow {
		return Result{}, provenance("decision %s has low confidence (%v): it executes only once a human approved it", decisionID, w.Decision.Confidence)
	}
	switch state.Status {
	case ora.StatusDecided, ora.StatusApproved:
		if _, err := s.ledger.TransitionDecision(ctx, decisionID, state.Status, ora.StatusExecuting, "executor claimed the decision"); err != nil {
			cur, ok := ora.Existing[ora.DecisionState](err)
			if !ok {
				return Result{}, fmt.Errorf("act: claim decision %s: %w", decisionID, err)
			}
			switch cur.Status {
			case ora.StatusExecuting: // another run claimed it: resume alongside, actions run once
			case ora.StatusExecuted:
				return s.finished(ctx, signalID, decisionID)
			default:
				return Result{}, provenance("decision %s is %s: it may not execute", decisionID, cur.Status)
			}
		}
	case ora.StatusExecuting: // a retry after a crash: resume
	case ora.StatusExecuted:
		return s.finished(ctx, signalID, decisionID)
	default:
		return Result{}, provenance("decision %s is %s: it may not execute", decisionID, state.Status)
	}

	plan := w.Decision.Plan()
	if err := ora.CheckDependsOn(plan); err != nil {
		return Result{}, provenance("decision %s: %v", decisionID, err)
	}
	targets := make([][]string, len(plan))
	for i, a := range plan {
		t, err := s.checkScope(w.Decision, a)
		if err != nil {
			ev := s.evidence(w, i, a, t)
			ev.Outcome, ev.ErrorType, ev.Error = OutcomeFailure, "ScopeViolation", err.Error()
			return Result{}, s.fail(ctx, w, ev, &taskerr.ScopeViolation{Message: fmt.Sprintf("decision %s action %d: %v", decisionID, i, err)})
		}
		targets[i] = t
	}

	outcomes, fresh, err := s.runPlan(ctx, w, plan, targets)
	if err != nil {
		return Result{}, err
	}
	return s.conclude(ctx, w, outcomes, fresh)
}

// finished answers a repeated Act of an executed decision from its evidence.
func (s *Service) finished(ctx context.Context, signalID, decisionID string) (Result, error) {
	w, err := LoadWave(ctx, s.ledger, signalID, decisionID)
	if err != nil {
		return Result{}, fmt.Errorf("act: %w", err)
	}
	r := Result{Outcome: OutcomeSuccess, Actions: outcomesOf(w)}
	for i := range w.Decision.Plan() {
		r.Evidence = append(r.Evidence, strconv.Itoa(i))
	}
	return r, nil
}

// checkScope checks one action against the decision's scope and the action's
// allow-lists and returns its targets. It has no side effect.
func (s *Service) checkScope(d ora.ReasonerDecision, a ora.Action) ([]string, error) {
	if !Allowed(a.Type, d.Scope.AllowedOperations) {
		return nil, fmt.Errorf("operation %q is not in the scope's allowed_operations %v", a.Type, d.Scope.AllowedOperations)
	}
	act, ok := s.registry.Lookup(a.Type)
	if !ok {
		return nil, fmt.Errorf("no action is registered for %q", a.Type)
	}
	var targets []string
	if c, ok := act.(Checker); ok {
		t, err := c.Check(a.Parameters)
		if err != nil {
			return nil, err
		}
		targets = t
	}
	for _, t := range targets {
		if p, bad := Forbidden(t, d.Scope.ForbiddenPaths); bad {
			return targets, fmt.Errorf("target %q matches forbidden path %q", t, p)
		}
	}
	return targets, nil
}

func (s *Service) evidence(w Wave, i int, a ora.Action, targets []string) Evidence {
	return Evidence{
		DecisionID: w.Decision.ID, DecisionDigest: w.DecisionEntry.Digest, SignalID: w.Decision.SignalID,
		Index: i, Type: a.Type, Parameters: a.Parameters, Targets: targets, At: s.now().UTC(),
	}
}

// run runs action i once (by its idempotency key) and records its evidence.
// An action's failure is a result (recorded as failure evidence), not an
// error; errors are the ledger's or the idempotency store's.
func (s *Service) run(ctx context.Context, w Wave, i int, a ora.Action, targets []string) (Evidence, error) {
	// A run an operator asked for after an unknown outcome has its own key:
	// the first one's stored receipt must not answer for it.
	attempt := w.Attempts[i]
	key := w.Decision.ID + "/" + strconv.Itoa(i)
	if attempt > 0 {
		key += "/r" + strconv.Itoa(attempt)
	}
	payload, err := json.Marshal(struct {
		Digest string     `json:"decision_digest"`
		Action ora.Action `json:"action"`
	}{w.DecisionEntry.Digest, a})
	if err != nil {
		return Evidence{}, ora.Errorf(ora.EINTERNAL, "act: encode action %d: %v", i, err)
	}
	impl, _ := s.registry.Lookup(a.Type)
	inv := Invocation{SignalID: w.Decision.SignalID, DecisionID: w.Decision.ID, Index: i, Key: key}
	// The lock lasts as long as the action can take, plus a margin (never past
	// the caller's own deadline): after a crash, the retry waits it out and
	// runs the action again under the same key.
	timeout := DefaultActionTimeout
	if t, ok := impl.(Timeouter); ok && t.Timeout() > 0 {
		timeout = min(t.Timeout(), MaxActionTimeout)
	}
	lctx, cancel := context.WithTimeout(ctx, timeout+LockMargin)
	defer cancel()
	rcpt, err := s.once(lctx, key, payload, func(ctx context.Context) (Receipt, error) {
		r, err := impl.Run(WithInvocation(ctx, inv), a.Parameters)
		if err == nil {
			return r, nil
		}
		var unknown *UnknownOutcomeError
		if ora.ErrorCode(err) == ora.ETRANSIENT && !errors.As(err, &unknown) {
			return Receipt{}, err // nothing happened: not stored, retried
		}
		r.Type, r.Error, r.Unknown = a.Type, err.Error(), errors.As(err, &unknown)
		if r.At.IsZero() {
			r.At = s.now().UTC()
		}
		return r, nil
	})
	if err != nil {
		return Evidence{}, fmt.Errorf("act: run %s: %w", key, err)
	}
	ev := s.evidence(w, i, a, targets)
	ev.Receipt = &rcpt
	ev.Outcome = OutcomeSuccess
	ev.Attempt = attempt
	switch {
	case rcpt.Unknown:
		ev.Outcome, ev.ErrorType, ev.Error = OutcomeUnknown, "OutcomeUnknown", rcpt.Error
	case rcpt.Error != "":
		ev.Outcome, ev.ErrorType, ev.Error = OutcomeFailure, "ActionFailed", rcpt.Error
	}
	s.log.InfoContext(ctx, "action", "key", key, "type", a.Type, "outcome", ev.Outcome, "error", ev.Error)
	return ev, nil
}

// evidenceEntry is ev's execution-evidence entry.
func evidenceEntry(ev Evidence) (ora.Entry, error) {
	e, err := ora.NewEntry(ev.SignalID, ora.KindExecutionEvidence, evidenceQualifier(ev.Index, ev.Attempt), ev)
	if err != nil {
		return ora.Entry{}, fmt.Errorf("act: %w", err)
	}
	e.AuthorType = ora.AuthorExecutor
	e.Meta = map[string]string{"provenance": ev.DecisionID, "decision_digest": ev.DecisionDigest, "signal_id": ev.SignalID}
	return e, nil
}

// fail settles the decision on ev (a failure, or an unknown outcome):
// executing -> failed (unknown for an unknown outcome), and returns cause.
func (s *Service) fail(ctx context.Context, w Wave, ev Evidence, cause error) error {
	to := ora.StatusFailed
	if ev.Outcome == OutcomeUnknown {
		to = ora.StatusUnknown
	}
	if err := s.settle(ctx, w.Decision.ID, []Evidence{ev}, to, cause.Error()); err != nil {
		return err
	}
	return cause
}
