package act

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// OutcomePending is the outcome, in a Result or an error's summary, of an
// action that did not run in this call: an action it depends on has an
// unknown outcome (it runs once an operator answers), or the call stopped on
// an error of the ledger. It is never recorded as evidence.
const OutcomePending = "pending"

// ActionOutcome is one action's outcome, as a Result and the error of a
// decision that did not fully succeed list them.
type ActionOutcome struct {
	Index   int    `json:"index"`
	Type    string `json:"type"`
	Outcome string `json:"outcome"` // success | failure | unknown | skipped | pending
	Error   string `json:"error,omitempty"`
}

// slot is one action's place in a run of the plan: closed done means the
// action has its evidence (has), did not run (pending), or met err.
type slot struct {
	done chan struct{}
	ev   Evidence
	has  bool
	// fresh: ev is this run's, not in the ledger yet (conclude commits it).
	fresh bool
	err   error
}

// runPlan runs the plan's actions that have no evidence yet and returns
// every action's outcome and this run's evidence, which it does not write
// (conclude commits it with the decision's new status). An action
// starts once every action it depends on has ended; at most s.parallel run at
// once. An action whose dependency failed or was skipped is recorded as
// skipped; one whose dependency's outcome is unknown stays pending (it runs
// when the wave resumes after the operator's answer). After an error of the
// idempotency store no further action starts (those running finish), and
// the first error is returned: a retry resumes.
func (s *Service) runPlan(ctx context.Context, w Wave, plan []ora.Action, targets [][]string) ([]ActionOutcome, []Evidence, error) {
	slots := make([]slot, len(plan))
	sem := make(chan struct{}, s.parallel)
	var stopped atomic.Bool
	var wg sync.WaitGroup
	for i := range plan {
		slots[i].done = make(chan struct{})
		if ev, ok := w.Evidence[i]; ok {
			slots[i].ev, slots[i].has = ev, true
			close(slots[i].done)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(slots[i].done)
			s.runSlot(ctx, w, plan, targets, slots, i, sem, &stopped)
		}()
	}
	wg.Wait()
	outs := make([]ActionOutcome, len(plan))
	var fresh []Evidence
	for i, sl := range slots {
		if sl.err != nil {
			return nil, nil, sl.err
		}
		outs[i] = ActionOutcome{Index: i, Type: plan[i].Type, Outcome: OutcomePending}
		if sl.has {
			outs[i].Outcome, outs[i].Error = sl.ev.Outcome, sl.ev.Error
		}
		if sl.fresh {
			fresh = append(fresh, sl.ev)
		}
	}
	return outs, fresh, nil
}

// runSlot waits for action i's dependencies, then skips it, leaves it
// pending or runs it, and fills slots[i].
func (s *Service) runSlot(ctx context.Context, w Wave, plan []ora.Action, targets [][]string, slots []slot, i int, sem chan struct{}, stopped *atomic.Bool) {
	sl, a := &slots[i], plan[i]
	failedDep, pendingDep := -1, -1
	for _, d := range a.DependsOn {
		<-slots[d].done
		switch dep := &slots[d]; {
		case !dep.has || dep.ev.Outcome == OutcomeUnknown:
			if pendingDep < 0 {
				pendingDep = d
			}
		case dep.ev.Outcome != OutcomeSuccess:
			if failedDep < 0 {
				failedDep = d
			}
		}
	}
	if failedDep >= 0 {
		ev := s.evidence(w, i, a, targets[i])
		ev.Outcome, ev.ErrorType = OutcomeSkipped, "Skipped"
		ev.Error = fmt.Sprintf("not run: action %d, which it depends on, ended %s", failedDep, slots[failedDep].ev.Outcome)
		s.log.InfoContext(ctx, "action", "key", w.Decision.ID+"/"+fmt.Sprint(i), "type", a.Type, "outcome", ev.Outcome, "error", ev.Error)
		sl.ev, sl.has, sl.fresh = ev, true, true
		return
	}
	if pendingDep >= 0 {
		return
	}
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		sl.err = ora.Errorf(ora.ETRANSIENT, "act: action %d of decision %s did not start: %v", i, w.Decision.ID, ctx.Err())
		return
	}
	defer func() { <-sem }()
	if stopped.Load() {
		return
	}
	ev, err := s.run(ctx, w, i, a, targets[i])
	if err != nil {
		sl.err = err
		stopped.Store(true)
		return
	}
	sl.ev, sl.has, sl.fresh = ev, true, true
}

// conclude moves the decision to where its actions' outcomes lead: unknown
// when any outcome is unknown (a human must say whether it ran), failed when
// any action failed (its dependents skipped), executed otherwise; the error
// of a decision that did not succeed names the first bad action and, for a
// decision of several actions, lists every action's outcome.
func (s *Service) conclude(ctx context.Context, w Wave, outs []ActionOutcome, fresh []Evidence) (Result, error) {
	var unknown, failed *ActionOutcome
	for i := range outs {
		switch o := &outs[i]; o.Outcome {
		case OutcomeUnknown:
			if unknown == nil {
				unknown = o
			}
		case OutcomeFailure, OutcomeSkipped:
			if failed == nil || (failed.Outcome == OutcomeSkipped && o.Outcome == OutcomeFailure) {
				failed = o
			}
		}
	}
	id := w.Decision.ID
	var cause error
	to := ora.StatusExecuted
	switch {
	case unknown != nil:
		to = ora.StatusUnknown
		cause = &taskerr.OutcomeUnknown{Message: fmt.Sprintf("decision %s action %d (%s): outcome unknown, ask the operator: %s%s", id, unknown.Index, unknown.Type, unknown.Error, summary(outs))}
	case failed != nil:
		to = ora.StatusFailed
		cause = &taskerr.ActionFailed{Message: fmt.Sprintf("decision %s action %d (%s) %s: %s%s", id, failed.Index, failed.Type, failedWord(failed.Outcome), failed.Error, summary(outs))}
	}
	reason := "every action has evidence"
	if cause != nil {
		reason = cause.Error()
	}
	if err := s.settle(ctx, id, fresh, to, reason); err != nil {
		return Result{}, err
	}
	if cause != nil {
		return Result{}, cause
	}
	r := Result{Outcome: OutcomeSuccess, Actions: outs}
	for _, o := range outs {
		r.Evidence = append(r.Evidence, fmt.Sprint(o.Index))
	}
	return r, nil
}

func failedWord(outcome string) string {
	if outcome == OutcomeSkipped {
		return "was skipped"
	}
	return "failed"
}

// summary lists every action's outcome, for a decision of several actions.
func summary(outs []ActionOutcome) string {
	if len(outs) < 2 {
		return ""
	}
	parts := make([]string, len(outs))
	for i, o := range outs {
		parts[i] = fmt.Sprintf("%d %s %s", o.Index, o.Type, o.Outcome)
	}
	return " (actions: " + strings.Join(parts, "; ") + ")"
}

// outcomesOf reads every planned action's outcome from the wave's evidence.
func outcomesOf(w Wave) []ActionOutcome {
	plan := w.Decision.Plan()
	outs := make([]ActionOutcome, len(plan))
	for i, a := range plan {
		outs[i] = ActionOutcome{Index: i, Type: a.Type, Outcome: OutcomePending}
		if ev, ok := w.Evidence[i]; ok {
			outs[i].Outcome, outs[i].Error = ev.Outcome, ev.Error
		}
	}
	return outs
}

// settle commits this run's evidence and the decision's move from
// executing to to as one stage: the evidence and the status land together
// or not at all. Actions run before it, each once by its idempotency key, so
// a run that stops short of it (a crash, a failed commit) leaves the
// decision executing with none of the run's evidence, and the retry gets
// the stored receipts and commits the stage then. A stage committed
// already (a concurrent run that settled it first with the same evidence)
// is a replay, not an error.
func (s *Service) settle(ctx context.Context, decisionID string, evs []Evidence, to ora.DecisionStatus, reason string) error {
	st := ora.Stage{Name: "act", Transitions: []ora.Transition{{DecisionID: decisionID, From: ora.StatusExecuting, To: to, Reason: reason}}}
	for _, ev := range evs {
		e, err := evidenceEntry(ev)
		if err != nil {
			return err
		}
		st.Entries = append(st.Entries, e)
	}
	if _, err := s.ledger.Commit(ctx, st); err != nil {
		return fmt.Errorf("act: record the evidence and mark decision %s %s: %w", decisionID, to, err)
	}
	return nil
}
