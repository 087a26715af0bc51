package operate

import (
	"context"
	"fmt"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/ora"
)

// errOutcomeUnknown is the error name of an action whose request went out
// unanswered (taskerr.OutcomeUnknown).
const errOutcomeUnknown = "OutcomeUnknown"

// Resolution is what Resolve answers: the operator's answer and the resumption.
type Resolution struct {
	Resumed
	DecisionID string `json:"decision_id"`
	Index      int    `json:"action_index"`
	Attempt    int    `json:"attempt"`
	Executed   bool   `json:"executed"`
}

// Resolve answers for a wave paused on an action whose outcome is unknown
// (its request went out, no answer came back): executed says the action
// took effect (the decision moves unknown -> executed and the wave resumes at
// Validate, Act is not run again; unless another action of the decision has
// no success evidence yet, such as one that depends on this one: then the
// decision moves unknown -> executing and the wave resumes at Act, which
// runs only those); not executed says it did not (the
// decision moves unknown -> executing and the wave resumes at Act, which runs
// that action once more, as a new attempt under its own idempotency key and
// lock; actions with evidence are not run again). The answer is recorded as
// an operator-decision entry (act.Resolution) before anything moves, so a
// crash half-way is finished by calling Resolve again with the same answer.
// Errors: EINVALID, ENOTFOUND (no such wave), ECONFLICT (not paused on an
// unknown outcome, already resolved otherwise, already resumed), ETRANSIENT.
func (s *Service) Resolve(ctx context.Context, waveID string, executed bool, by, reason string) (Resolution, error) {
	if waveID == "" {
		return Resolution{}, ora.Invalid("wave_id", "required")
	}
	if by == "" {
		by = "operator"
	}
	entries, err := s.ledger.Entries(ctx, waveID)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return Resolution{}, ora.Errorf(ora.ENOTFOUND, "no wave %q", waveID)
	}
	if err != nil {
		return Resolution{}, fmt.Errorf("operate: read wave %s: %w", waveID, err)
	}
	w := readWave(entries)
	rec, ok := w.latest()
	if !ok || rec.Action != actPause || rec.Failure.Error != errOutcomeUnknown {
		return Resolution{}, ora.Conflict(nil, "wave %s is not paused on an action whose outcome is unknown", waveID)
	}
	if b, done := w.steps[rec.DecisionID][qResumed]; done {
		return Resolution{}, ora.Conflict(nil, "wave %s was already resumed at %s (by %s)", waveID, b.At.Format("2006-01-02T15:04:05Z07:00"), b.By)
	}
	decisionID := rec.ReasonerDecisionID
	if decisionID == "" {
		for _, e := range entries {
			if e.Kind == ora.KindReasonerDecision {
				decisionID = e.Qualifier
			}
		}
	}
	aw, err := act.LoadWave(ctx, s.ledger, waveID, decisionID)
	if err != nil {
		return Resolution{}, fmt.Errorf("operate: resolve %s: %w", waveID, err)
	}
	// The action whose latest outcome is unknown, or (a call again after a
	// crash) the one this operator decision already resolved.
	res, found := act.Resolution{}, false
	for i := range aw.Decision.Plan() {
		if ev, ok := aw.Evidence[i]; ok && ev.Outcome == act.OutcomeUnknown {
			res, found = act.Resolution{DecisionID: decisionID, Index: i, Attempt: ev.Attempt + 1}, true
			break
		}
		if r, ok := aw.Resolutions[i]; ok && r.OperatorDecisionID == rec.DecisionID {
			if r.Executed != executed {
				return Resolution{}, ora.Conflict(nil, "wave %s: action %d was already resolved as executed=%v by %s", waveID, i, r.Executed, r.By)
			}
			res, found = r, true
			break
		}
	}
	if !found {
		return Resolution{}, ora.Conflict(nil, "wave %s: no action of decision %s has an unknown outcome", waveID, decisionID)
	}
	to, stage := ora.StatusExecuting, "Act"
	if executed && othersSucceeded(aw, res.Index) {
		to, stage = ora.StatusExecuted, "Validate"
	}
	move := ora.Transition{DecisionID: decisionID, From: ora.StatusUnknown, To: to, Reason: fmt.Sprintf("operator %s: action %d executed=%v", by, res.Index, executed)}
	if res.By == "" {
		// The resolution and the decision's move are one stage.
		res.Executed, res.By, res.Reason, res.OperatorDecisionID, res.At = executed, by, reason, rec.DecisionID, s.o.Now().UTC()
		e, err := ora.NewEntry(waveID, ora.KindOperatorDecision, act.ResolutionQualifier(res.Index, res.Attempt), res)
		if err != nil {
			return Resolution{}, fmt.Errorf("operate: %w", err)
		}
		e.AuthorType = ora.AuthorHuman
		e.CreatedAt = res.At
		if _, err := s.ledger.Commit(ctx, ora.Stage{Name: "resolve", Entries: []ora.Entry{e}, Transitions: []ora.Transition{move}}); err != nil {
			if _, ok := ora.Existing[ora.Entry](err); ok {
				return Resolution{}, ora.Conflict(nil, "wave %s: action %d was resolved meanwhile: read the wave and try again", waveID, res.Index)
			}
			return Resolution{}, fmt.Errorf("operate: record the resolution of %s: %w", waveID, err)
		}
	} else if _, err := s.ledger.TransitionDecision(ctx, decisionID, move.From, move.To, move.Reason); err != nil {
		// A resolution recorded before (by a call that stopped short of
		// the move, before stages were one commit): move it now.
		cur, ok := ora.Existing[ora.DecisionState](err)
		if !ok || cur.Status != to {
			return Resolution{}, fmt.Errorf("operate: resolve decision %s: %w", decisionID, err)
		}
	}
	r, err := s.resume(ctx, waveID, ResumeRequest{By: by, AsIs: true}, stage)
	if err != nil {
		return Resolution{}, err
	}
	return Resolution{Resumed: r, DecisionID: decisionID, Index: res.Index, Attempt: res.Attempt, Executed: executed}, nil
}

// othersSucceeded reports whether every planned action but index has success
// evidence: nothing is left for Act to run.
func othersSucceeded(w act.Wave, index int) bool {
	for i := range w.Decision.Plan() {
		if ev, ok := w.Evidence[i]; i != index && (!ok || ev.Outcome != act.OutcomeSuccess) {
			return false
		}
	}
	return true
}
