// Package review holds the human side of a wave and its closing record:
// flag-review (a medium-confidence decision runs and is logged for review),
// escalate (a low-confidence decision waits for a human: decided ->
// awaiting-approval, an architect-intent entry carrying the task token, a
// notification), approve and reject (awaiting-approval -> approved | rejected by
// a conditional update, a human-verdict entry, then the waiting task settled
// through its token) and record (the final-verdict entry).
package review

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// Ledger is the part of ora.Ledger this package calls.
type Ledger interface {
	act.Entries
	// Append: see ora.Ledger. Errors: EINVALID, ECONFLICT (with the stored Entry), ETRANSIENT.
	Append(ctx context.Context, e ora.Entry) (ora.Entry, error)
	// Decision: see ora.Ledger. Errors: ENOTFOUND, ETRANSIENT.
	Decision(ctx context.Context, decisionID string) (ora.DecisionState, error)
	// TransitionDecision: see ora.Ledger. Errors: EINVALID, ENOTFOUND,
	// ECONFLICT (with the current DecisionState), ETRANSIENT.
	TransitionDecision(ctx context.Context, decisionID string, from, to ora.DecisionStatus, reason string) (ora.DecisionState, error)
	// Commit: see ora.Ledger. A stage's entry and its decision's move are
	// one commit. Errors: EINVALID, ENOTFOUND, ECONFLICT (with the stored
	// Entry or DecisionState), ETRANSIENT.
	Commit(ctx context.Context, s ora.Stage) (ora.Committed, error)
}

// Notifier tells people a decision awaits them; act.SNSNotify and
// act.LogNotify satisfy it.
type Notifier interface {
	// Notify sends a message. Errors: ETRANSIENT, or the transport's error.
	Notify(ctx context.Context, subject, message string) error
}

// TaskSettler completes a task waiting on a token; sfn.Client satisfies it on
// AWS, the local engine in ora dev.
type TaskSettler interface {
	// SendTaskSuccess completes the task with output (JSON). Errors: EINVALID,
	// ENOTFOUND (no such task), ECONFLICT (it timed out), ETRANSIENT.
	SendTaskSuccess(ctx context.Context, token string, output []byte) error
}

// Options tune a Service.
type Options struct {
	// Notifier is told about escalations. Required by Escalate.
	Notifier Notifier
	// Settler settles the escalation's task. Required by Approve and Reject.
	Settler TaskSettler
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// Regret, when set, records that a wave's decision was regretted
	// (orient.Profiles.RecordRegret): Record calls it, before the final
	// verdict, for a wave a validator failed (source "validator") or a human
	// rejected (source "human"). It must be harmless to repeat.
	Regret func(ctx context.Context, waveID, source, reason string, flags []string) error
}

// Service runs the review steps.
type Service struct {
	ledger Ledger
	o      Options
}

// New returns the review steps over ledger.
func New(ledger Ledger, opts ...func(*Options)) *Service {
	o := Options{Now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	return &Service{ledger: ledger, o: o}
}

// Review is the body of a review-requested entry.
type Review struct {
	DecisionID string             `json:"decision_id"`
	Confidence float64            `json:"confidence"`
	Band       ora.ConfidenceBand `json:"band"`
	ActionType string             `json:"action_type"`
	Reason     string             `json:"reason"`
	At         time.Time          `json:"at"`
}

// FlagResult is the flag-review task's output.
type FlagResult struct {
	Review string `json:"review"`
}

func required(signalID, decisionID string) error {
	if signalID == "" {
		return ora.Invalid("signal_id", "required")
	}
	if decisionID == "" {
		return ora.Invalid("decision_id", "required")
	}
	return nil
}

// FlagReview writes a review-requested entry for a decision that runs without
// waiting. Errors: EINVALID, ENOTFOUND (no such decision), ETRANSIENT.
func (s *Service) FlagReview(ctx context.Context, signalID, decisionID string) (FlagResult, error) {
	if err := required(signalID, decisionID); err != nil {
		return FlagResult{}, err
	}
	w, err := act.LoadWave(ctx, s.ledger, signalID, decisionID)
	if err != nil {
		return FlagResult{}, fmt.Errorf("flag review: %w", err)
	}
	d := w.Decision
	r := Review{
		DecisionID: d.ID, Confidence: d.Confidence, Band: d.Band(), ActionType: d.ActionType,
		Reason: fmt.Sprintf("confidence %.2f is in the %s band: executed and logged for review", d.Confidence, d.Band()),
		At:     s.o.Now().UTC(),
	}
	if err := s.append(ctx, signalID, ora.KindReviewRequested, decisionID, "", nil, r); err != nil {
		return FlagResult{}, err
	}
	return FlagResult{Review: "requested"}, nil
}

// Intent is the body of an architect-intent entry: what the reasoner would do,
// held for a human.
type Intent struct {
	DecisionID         string       `json:"decision_id"`
	SignalID           string       `json:"signal_id"`
	ActionType         string       `json:"action_type"`
	Actions            []ora.Action `json:"actions"`
	Confidence         float64      `json:"confidence"`
	Reasoning          string       `json:"reasoning"`
	Scope              ora.Scope    `json:"scope"`
	RequiresHumanAudit bool         `json:"requires_human_audit"`
	TaskToken          string       `json:"task_token"`
	// Attempt numbers the decision's escalations: one more than the
	// architect-intent entries the escalation found in the ledger (absent,
	// 0, in entries written before it was recorded). taskToken settles the
	// intent with the highest attempt; see newestIntent.
	Attempt int       `json:"attempt,omitempty"`
	At      time.Time `json:"at"`
}

// EscalateResult is the escalate task's output (Step Functions ignores it: the
// task ends when its token is settled).
type EscalateResult struct {
	Status ora.DecisionStatus `json:"status"`
}

// Escalate moves a decision decided -> awaiting-approval, writes its
// architect-intent entry with the task token and notifies. A retry (the
// decision already awaiting) writes the new token and notifies again. Errors:
// EINVALID, ENOTFOUND, ECONFLICT (the decision is past approved or rejected),
// ETRANSIENT, the notifier's errors. Run again after a human already approved
// or rejected it (a restart between the first run and the engine recording
// the wait), it settles the new task token with the stored verdict.
func (s *Service) Escalate(ctx context.Context, signalID, decisionID, taskToken string) (EscalateResult, error) {
	if err := required(signalID, decisionID); err != nil {
		return EscalateResult{}, err
	}
	if taskToken == "" {
		return EscalateResult{}, ora.Invalid("task_token", "required")
	}
	if s.o.Notifier == nil {
		return EscalateResult{}, ora.Errorf(ora.EINTERNAL, "escalate: no notifier configured")
	}
	w, err := act.LoadWave(ctx, s.ledger, signalID, decisionID)
	if err != nil {
		return EscalateResult{}, fmt.Errorf("escalate: %w", err)
	}
	d := w.Decision
	in := Intent{
		DecisionID: d.ID, SignalID: d.SignalID, ActionType: d.ActionType, Actions: d.Plan(), Confidence: d.Confidence,
		Reasoning: d.Reasoning, Scope: d.Scope, RequiresHumanAudit: true, TaskToken: taskToken,
		Attempt: attempt(w, decisionID), At: s.o.Now().UTC(),
	}
	q := decisionID + "/" + ora.Digest([]byte(taskToken))[:16]
	meta := map[string]string{"requires_human_audit": "true", "decision_id": decisionID}
	e, err := ora.NewEntry(signalID, ora.KindArchitectIntent, q, in)
	if err != nil {
		return EscalateResult{}, fmt.Errorf("escalate: %w", err)
	}
	e.AuthorType, e.Meta = ora.AuthorArchitect, meta
	// The decision's move to awaiting-approval and the intent holding the
	// task token are one stage: a human never finds a decision awaiting
	// them without the token to answer it.
	stage := ora.Stage{Name: "escalate", Entries: []ora.Entry{e}, Transitions: []ora.Transition{
		{DecisionID: decisionID, From: ora.StatusDecided, To: ora.StatusAwaitingApproval, Reason: "confidence below 0.5: a human decides"}}}
	if _, err := s.ledger.Commit(ctx, stage); err != nil {
		if ora.ErrorCode(err) != ora.ECONFLICT {
			return EscalateResult{}, fmt.Errorf("escalate: %w", err)
		}
		cur, err := s.ledger.Decision(ctx, decisionID)
		if err != nil {
			return EscalateResult{}, fmt.Errorf("escalate: %w", err)
		}
		switch cur.Status {
		case ora.StatusAwaitingApproval: // a retry: write the new token, notify again
			if err := s.append(ctx, signalID, ora.KindArchitectIntent, q, ora.AuthorArchitect, meta, in); err != nil {
				return EscalateResult{}, err
			}
		case ora.StatusApproved, ora.StatusRejected:
			return s.settled(ctx, w, cur, taskToken)
		default:
			return EscalateResult{}, fmt.Errorf("escalate: %w", ora.Conflict(cur, "decision %s is %s, not decided", decisionID, cur.Status))
		}
	}
	msg := fmt.Sprintf("Decision %s (signal %s) awaits a human: %s, confidence %.2f. %s\nApprove: POST /decisions/%s/approve  Reject: POST /decisions/%s/reject",
		d.ID, d.SignalID, d.ActionType, d.Confidence, d.Reasoning, d.ID, d.ID)
	if err := s.o.Notifier.Notify(ctx, "ora: decision "+d.ID+" awaits approval", msg); err != nil {
		return EscalateResult{}, fmt.Errorf("escalate: notify: %w", err)
	}
	return EscalateResult{Status: ora.StatusAwaitingApproval}, nil
}

// settled answers an Escalate run again after a human already settled the
// decision (the runtime restarted between the first run's entry and the
// engine recording the wait, so the verdict went to a token nobody waits
// on): it records the new token and settles it at once with the stored
// verdict, so the wave moves on as the human said instead of failing.
func (s *Service) settled(ctx context.Context, w act.Wave, cur ora.DecisionState, taskToken string) (EscalateResult, error) {
	if s.o.Settler == nil {
		return EscalateResult{}, ora.Errorf(ora.EINTERNAL, "escalate: no task settler configured")
	}
	d := w.Decision
	in := Intent{
		DecisionID: d.ID, SignalID: d.SignalID, ActionType: d.ActionType, Actions: d.Plan(), Confidence: d.Confidence,
		Reasoning: d.Reasoning, Scope: d.Scope, RequiresHumanAudit: true, TaskToken: taskToken,
		Attempt: attempt(w, d.ID), At: s.o.Now().UTC(),
	}
	q := d.ID + "/" + ora.Digest([]byte(taskToken))[:16]
	meta := map[string]string{"requires_human_audit": "true", "decision_id": d.ID}
	if err := s.append(ctx, d.SignalID, ora.KindArchitectIntent, q, ora.AuthorArchitect, meta, in); err != nil {
		return EscalateResult{}, err
	}
	hv := HumanVerdict{Verdict: Approved, Reason: cur.Reason, By: "unknown"}
	if cur.Status == ora.StatusRejected {
		hv.Verdict = Rejected
	}
	if e, ok := w.Find(ora.KindHumanVerdict, d.ID); ok {
		var stored HumanVerdict
		if err := json.Unmarshal(e.Body, &stored); err != nil {
			return EscalateResult{}, ora.Errorf(ora.EINTERNAL, "escalate: human-verdict %s does not decode: %v", d.ID, err)
		}
		hv = stored
	} else {
		// The human's call stopped before its entry: write it, as deliver would.
		hv.DecisionID, hv.At = d.ID, s.o.Now().UTC()
		if err := s.append(ctx, d.SignalID, ora.KindHumanVerdict, d.ID, ora.AuthorHuman, nil, hv); err != nil && ora.ErrorCode(err) != ora.ECONFLICT {
			return EscalateResult{}, err
		}
	}
	out, err := json.Marshal(struct {
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
		By      string `json:"by"`
	}{hv.Verdict, hv.Reason, hv.By})
	if err != nil {
		return EscalateResult{}, ora.Errorf(ora.EINTERNAL, "escalate: encode the verdict: %v", err)
	}
	if err := s.o.Settler.SendTaskSuccess(ctx, taskToken, out); err != nil {
		return EscalateResult{}, fmt.Errorf("escalate: settle the new task with the stored verdict: %w", err)
	}
	return EscalateResult{Status: cur.Status}, nil
}

// The human verdicts.
const (
	Approved = "approved"
	Rejected = "rejected"
)

// HumanVerdict is the body of a human-verdict entry and the output that
// settles the escalation's task.
type HumanVerdict struct {
	DecisionID string    `json:"decision_id,omitempty"`
	Verdict    string    `json:"verdict"`
	Reason     string    `json:"reason"`
	By         string    `json:"by"`
	At         time.Time `json:"at"`
}

// Approve settles an escalated decision as approved; see settle.
func (s *Service) Approve(ctx context.Context, decisionID, by, reason string) (HumanVerdict, error) {
	hv, _, err := s.settle(ctx, decisionID, Approved, by, reason)
	return hv, err
}

// Reject settles an escalated decision as rejected; see settle.
func (s *Service) Reject(ctx context.Context, decisionID, by, reason string) (HumanVerdict, error) {
	hv, _, err := s.settle(ctx, decisionID, Rejected, by, reason)
	return hv, err
}

// Settle approves (approve true) or rejects a decision on behalf of by and
// returns its new status record: the shape the HTTP API's Verdicts port asks
// for. Errors: as settle.
func (s *Service) Settle(ctx context.Context, decisionID string, approve bool, by, reason string) (ora.DecisionState, error) {
	verdict := Rejected
	if approve {
		verdict = Approved
	}
	_, st, err := s.settle(ctx, decisionID, verdict, by, reason)
	return st, err
}

// healAfter is how old a verdict must be before a repeat of it re-delivers it
// to the waiting task (see settle).
const healAfter = 30 * time.Second

// settle moves the decision awaiting-approval -> approved|rejected (one human
// wins: a second call gets ECONFLICT), records the human-verdict entry, then
// completes the waiting task with {"verdict","reason","by"}. Errors: EINVALID,
// ENOTFOUND, ECONFLICT (already settled, or not awaiting approval; carries the
// DecisionState), ETRANSIENT, the settler's errors.
func (s *Service) settle(ctx context.Context, decisionID, verdict, by, reason string) (HumanVerdict, ora.DecisionState, error) {
	if decisionID == "" {
		return HumanVerdict{}, ora.DecisionState{}, ora.Invalid("decision_id", "required")
	}
	if by == "" {
		return HumanVerdict{}, ora.DecisionState{}, ora.Invalid("by", "required")
	}
	if s.o.Settler == nil {
		return HumanVerdict{}, ora.DecisionState{}, ora.Errorf(ora.EINTERNAL, "%s: no task settler configured", verdict)
	}
	to := ora.StatusApproved
	if verdict == Rejected {
		to = ora.StatusRejected
	}
	hv, st, err := s.settleStage(ctx, decisionID, verdict, to, by, reason)
	if err != nil {
		if cur, ok := ora.Existing[ora.DecisionState](err); ok {
			if cur.Status == to && s.o.Now().Sub(cur.UpdatedAt) > healAfter {
				// The same verdict was given a while ago, and that call may
				// have been cut short before the waiting task heard of it:
				// finish its work (each step is idempotent) so the wave moves
				// on, then answer as any second verdict is answered. A verdict
				// given moments ago is still being delivered by its own call,
				// which must not find its task already settled.
				_, _ = s.deliver(ctx, cur, verdict, by, cur.Reason)
			}
			return HumanVerdict{}, ora.DecisionState{}, ora.Conflict(cur, "decision %s is %s, not awaiting approval", decisionID, cur.Status)
		}
		return HumanVerdict{}, ora.DecisionState{}, fmt.Errorf("%s decision %s: %w", verdict, decisionID, err)
	}
	if err := s.send(ctx, st, verdict, by, reason); err != nil {
		return HumanVerdict{}, ora.DecisionState{}, err
	}
	return hv, st, nil
}

// settleStage commits the human-verdict entry and the decision's move from
// awaiting-approval to to as one stage and returns the verdict and the
// decision's new status record. Errors: those of settle; ECONFLICT (carrying the current
// DecisionState) also when the stage was committed before (a second call
// for the same verdict), as a second verdict is answered.
func (s *Service) settleStage(ctx context.Context, decisionID, verdict string, to ora.DecisionStatus, by, reason string) (HumanVerdict, ora.DecisionState, error) {
	fail := func(err error) (HumanVerdict, ora.DecisionState, error) {
		return HumanVerdict{}, ora.DecisionState{}, err
	}
	before, err := s.ledger.Decision(ctx, decisionID)
	if err != nil {
		return fail(fmt.Errorf("%s decision %s: %w", verdict, decisionID, err))
	}
	now := s.o.Now().UTC()
	hv := HumanVerdict{DecisionID: decisionID, Verdict: verdict, Reason: reason, By: by, At: now}
	e, err := ora.NewEntry(before.SignalID, ora.KindHumanVerdict, decisionID, hv)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", ora.KindHumanVerdict, err))
	}
	e.AuthorType = ora.AuthorHuman
	got, err := s.ledger.Commit(ctx, ora.Stage{Name: "settle", Entries: []ora.Entry{e}, Transitions: []ora.Transition{
		{DecisionID: decisionID, From: ora.StatusAwaitingApproval, To: to, Reason: reason}}})
	if err == nil && !got.Replayed {
		st, err := s.ledger.Decision(ctx, decisionID)
		if err != nil {
			return fail(fmt.Errorf("%s decision %s: %w", verdict, decisionID, err))
		}
		return hv, st, nil
	}
	if err != nil && ora.ErrorCode(err) != ora.ECONFLICT {
		return fail(fmt.Errorf("%s decision %s: %w", verdict, decisionID, err))
	}
	cur, rerr := s.ledger.Decision(ctx, decisionID)
	if rerr != nil {
		return fail(fmt.Errorf("%s decision %s: %w", verdict, decisionID, rerr))
	}
	return fail(ora.Conflict(cur, "decision %s is %s, not awaiting approval", decisionID, cur.Status))
}

// deliver records the human-verdict entry (a retry finds it written) and
// completes the waiting task with {"verdict","reason","by"}.
func (s *Service) deliver(ctx context.Context, st ora.DecisionState, verdict, by, reason string) (HumanVerdict, error) {
	decisionID := st.DecisionID
	hv := HumanVerdict{DecisionID: decisionID, Verdict: verdict, Reason: reason, By: by, At: s.o.Now().UTC()}
	if err := s.append(ctx, st.SignalID, ora.KindHumanVerdict, decisionID, ora.AuthorHuman, nil, hv); err != nil && ora.ErrorCode(err) != ora.ECONFLICT {
		return HumanVerdict{}, err
	}
	if err := s.send(ctx, st, verdict, by, reason); err != nil {
		return HumanVerdict{}, err
	}
	return hv, nil
}

// send completes the decision's waiting task (its newest intent's token)
// with {"verdict","reason","by"}.
func (s *Service) send(ctx context.Context, st ora.DecisionState, verdict, by, reason string) error {
	decisionID := st.DecisionID
	token, err := s.taskToken(ctx, st.SignalID, decisionID)
	if err != nil {
		return err
	}
	out, err := json.Marshal(struct {
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
		By      string `json:"by"`
	}{verdict, reason, by})
	if err != nil {
		return ora.Errorf(ora.EINTERNAL, "encode the verdict: %v", err)
	}
	if err := s.o.Settler.SendTaskSuccess(ctx, token, out); err != nil {
		return fmt.Errorf("%s decision %s: settle the waiting task: %w", verdict, decisionID, err)
	}
	return nil
}

// taskToken returns the token of the decision's newest architect-intent (see
// newestIntent).
func (s *Service) taskToken(ctx context.Context, signalID, decisionID string) (string, error) {
	entries, err := s.ledger.Entries(ctx, signalID)
	if err != nil {
		return "", fmt.Errorf("ledger: entries of %s: %w", signalID, err)
	}
	in, ok, err := newestIntent(entries, decisionID)
	if err != nil {
		return "", err
	}
	if !ok || in.TaskToken == "" {
		return "", ora.Errorf(ora.ENOTFOUND, "decision %s has no architect-intent with a task token", decisionID)
	}
	return in.TaskToken, nil
}

// isIntentOf reports whether e is an architect-intent of decisionID.
func isIntentOf(e ora.Entry, decisionID string) bool {
	return e.Kind == ora.KindArchitectIntent && strings.HasPrefix(e.Qualifier, decisionID+"/")
}

// attempt is the number the next escalation of decisionID records: one more
// than the architect-intents of the decision already in the wave's entries.
func attempt(w act.Wave, decisionID string) int {
	n := 0
	for _, e := range w.Entries {
		if isIntentOf(e, decisionID) {
			n++
		}
	}
	return n + 1
}

// newestIntent picks the decision's newest architect-intent, the one whose
// task is still waiting after Escalate ran more than once (each run writes
// an intent with its own token; only the latest task waits). The ledger's
// order cannot say which is newest: entries of one instant are ordered by
// qualifier, which for an intent holds the token's hash, and created_at
// comes from the clock of whichever host ran Escalate. So the intents are
// compared by, in turn:
//
//  1. Attempt, counted from the ledger itself when the intent was written:
//     escalations of one decision run one after the other (a retry starts
//     after the previous attempt failed or timed out), so it grows with each
//     and no clock can reorder it;
//  2. the entry's created_at, for intents of equal attempt (two runs that
//     overlapped, or intents written before Attempt was recorded);
//  3. the intent's own At (the escalating service's clock);
//  4. the ledger's order (created_at, kind, qualifier): the later entry wins,
//     so that the choice is the same on every read and on both ledgers.
func newestIntent(entries []ora.Entry, decisionID string) (Intent, bool, error) {
	var (
		best   Intent
		bestAt time.Time
		found  bool
	)
	for _, e := range entries {
		if !isIntentOf(e, decisionID) {
			continue
		}
		var in Intent
		if err := json.Unmarshal(e.Body, &in); err != nil {
			return Intent{}, false, ora.Errorf(ora.EINTERNAL, "architect-intent %s does not decode: %v", e.Qualifier, err)
		}
		if found && !newer(in, e.CreatedAt, best, bestAt) {
			continue
		}
		best, bestAt, found = in, e.CreatedAt, true
	}
	return best, found, nil
}

// newer reports whether intent a (its entry created at aAt) is at least as
// new as b by newestIntent's order; a tie goes to a, the later in the
// ledger's order.
func newer(a Intent, aAt time.Time, b Intent, bAt time.Time) bool {
	switch {
	case a.Attempt != b.Attempt:
		return a.Attempt > b.Attempt
	case !aAt.Equal(bAt):
		return aAt.After(bAt)
	case !a.At.Equal(b.At):
		return a.At.After(b.At)
	}
	return true
}

// The outcomes Record accepts.
const (
	OutcomeCompleted = "completed"
	OutcomeRejected  = "rejected"
)

// RecordResult is the record task's output.
type RecordResult struct {
	Final string `json:"final"`
}

// Record writes the wave's final-verdict entry: completed with the
// validators' recorded verdicts, or rejected with the human's reason (or the
// escalation's timeout), moving a decision still awaiting approval to
// rejected. verdict is what the state machine passes: the human verdict, the
// timeout's error, or the validators' outputs. A retry answers with the verdict
// stored first. Errors: EINVALID, ETRANSIENT.
func (s *Service) Record(ctx context.Context, signalID, decisionID, outcome string, verdict json.RawMessage) (RecordResult, error) {
	if err := required(signalID, decisionID); err != nil {
		return RecordResult{}, err
	}
	v := operate.Verdict{Outcome: outcome, DecisionID: decisionID, At: s.o.Now().UTC()}
	switch outcome {
	case OutcomeCompleted:
		// The validators' results, and the signal (whose entry every wave
		// has): not the facts and packet the wave read.
		entries, err := ora.EntriesOfKinds(ctx, s.ledger, signalID,
			ora.KindSignalReceived, ora.KindValidatorResult, ora.KindWitnessResult,
			ora.KindReasonerDecision, ora.KindExecutionEvidence, ora.KindOperatorDecision)
		if err != nil {
			return RecordResult{}, fmt.Errorf("record: ledger: entries of %s: %w", signalID, err)
		}
		// Every action's outcome, as the failed verdict lists them.
		if w, err := act.WaveOf(entries, signalID, decisionID); err == nil {
			v.Actions = operate.ActionsOf(w)
		}
		var results []ora.ValidatorResult
		for _, e := range entries {
			if e.Kind != ora.KindValidatorResult && e.Kind != ora.KindWitnessResult {
				continue
			}
			var r ora.ValidatorResult
			if json.Unmarshal(e.Body, &r) == nil && r.DecisionID == decisionID {
				results = append(results, r)
			}
		}
		b, err := json.Marshal(results)
		if err != nil {
			return RecordResult{}, ora.Errorf(ora.EINTERNAL, "record: encode validators: %v", err)
		}
		v.Validators = b
		var failed []string
		for _, r := range results {
			if r.Verdict == ora.Fail {
				failed = append(failed, string(r.Validator))
			}
		}
		if len(failed) > 0 {
			if err := s.regret(ctx, signalID, "validator", "failed by "+strings.Join(failed, ", "), failed); err != nil {
				return RecordResult{}, err
			}
		}
	case OutcomeRejected:
		v.Reason = rejection(verdict)
		if humanRejection(verdict) {
			if err := s.regret(ctx, signalID, "human", v.Reason, nil); err != nil {
				return RecordResult{}, err
			}
		}
	default:
		return RecordResult{}, ora.Invalid("outcome", "%q is not completed or rejected", outcome)
	}
	e, err := ora.NewEntry(signalID, ora.KindFinalVerdict, "", v)
	if err != nil {
		return RecordResult{}, fmt.Errorf("record: %w", err)
	}
	stored, err := s.recordVerdict(ctx, e, decisionID, outcome == OutcomeRejected, v.Reason)
	if err != nil {
		return RecordResult{}, err
	}
	var sv operate.Verdict
	if err := json.Unmarshal(stored.Body, &sv); err != nil {
		return RecordResult{}, ora.Errorf(ora.EINTERNAL, "record: stored final-verdict does not decode: %v", err)
	}
	return RecordResult{Final: sv.Outcome}, nil
}

// recordVerdict writes the final verdict e and, for a rejection of a
// decision still awaiting approval, its move to rejected, as one stage, and
// returns the verdict stored (this one, or on a retry the first one). A
// human who settles the decision between the read and the commit wins:
// the verdict is then written alone.
func (s *Service) recordVerdict(ctx context.Context, e ora.Entry, decisionID string, reject bool, reason string) (ora.Entry, error) {
	stage := ora.Stage{Name: "record", Entries: []ora.Entry{e}}
	if reject {
		st, err := s.ledger.Decision(ctx, decisionID)
		if err != nil {
			return ora.Entry{}, fmt.Errorf("record: read decision %s: %w", decisionID, err)
		}
		if st.Status == ora.StatusAwaitingApproval {
			stage.Transitions = []ora.Transition{{DecisionID: decisionID, From: ora.StatusAwaitingApproval, To: ora.StatusRejected, Reason: reason}}
		}
	}
	for {
		got, err := s.ledger.Commit(ctx, stage)
		if err == nil {
			return got.Entries[0], nil
		}
		if prev, ok := ora.Existing[ora.Entry](err); ok {
			return prev, nil // a retry: the verdict stored first answers
		}
		if _, ok := ora.Existing[ora.DecisionState](err); ok && len(stage.Transitions) > 0 {
			stage.Transitions = nil // a human settled it meanwhile
			continue
		}
		return ora.Entry{}, fmt.Errorf("record: commit final-verdict: %w", err)
	}
}

// rejection reads the reason out of what the state machine passed for a
// rejected wave.
func rejection(verdict json.RawMessage) string {
	var v struct {
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
		By      string `json:"by"`
		Error   string `json:"Error"`
		Cause   string `json:"Cause"`
	}
	if len(verdict) == 0 || json.Unmarshal(verdict, &v) != nil {
		return "rejected"
	}
	switch {
	case v.Error == "States.Timeout":
		return "escalation timed out: no human verdict in time"
	case v.Error != "":
		return strings.TrimSpace(v.Error + ": " + v.Cause)
	case v.By != "" && v.Reason != "":
		return fmt.Sprintf("rejected by %s: %s", v.By, v.Reason)
	case v.By != "":
		return "rejected by " + v.By
	case v.Reason != "":
		return v.Reason
	}
	return "rejected"
}

// humanRejection reports whether what the state machine passed for a
// rejected wave is a person's verdict (not the escalation's timeout).
func humanRejection(verdict json.RawMessage) bool {
	var v struct {
		Verdict string `json:"verdict"`
		By      string `json:"by"`
		Error   string `json:"Error"`
	}
	return json.Unmarshal(verdict, &v) == nil && v.Error == "" && v.By != "" && strings.HasPrefix(v.Verdict, "reject")
}

// regret records a regretted decision through Options.Regret, if set.
func (s *Service) regret(ctx context.Context, signalID, source, reason string, flags []string) error {
	if s.o.Regret == nil {
		return nil
	}
	if err := s.o.Regret(ctx, signalID, source, reason, flags); err != nil {
		return fmt.Errorf("record: regret of %s: %w", signalID, err)
	}
	return nil
}

// append writes an entry once; a conflict (a retry) keeps the stored one.
func (s *Service) append(ctx context.Context, signalID string, kind ora.EntryKind, qualifier string, author ora.AuthorType, meta map[string]string, body any) error {
	e, err := ora.NewEntry(signalID, kind, qualifier, body)
	if err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	e.AuthorType, e.Meta = author, meta
	if _, err := s.ledger.Append(ctx, e); err != nil {
		if _, ok := ora.Existing[ora.Entry](err); ok {
			return nil
		}
		return fmt.Errorf("ledger: append %s: %w", kind, err)
	}
	return nil
}
