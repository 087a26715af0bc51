package ora

import "fmt"

// Stage is what one stage of a wave writes to the ledger, committed at once
// by Ledger.Commit: entries written once each (as Append writes one) and
// decision status changes, each conditional on the status it expects. A
// stage's writes land together or not at all.
type Stage struct {
	// Name names the stage in errors ("act", "record").
	Name string
	// Entries are the stage's entries, each written once on its identity
	// (SignalID, Kind, Qualifier).
	Entries []Entry
	// Transitions move decisions from one status to another.
	Transitions []Transition
}

// Transition is a decision's status change within a Stage: a conditional
// update on the expected old status, as TransitionDecision makes one.
type Transition struct {
	DecisionID string
	From, To   DecisionStatus
	Reason     string
}

// Committed is what Ledger.Commit stored or, on a replay, found stored.
type Committed struct {
	// Entries are the stage's entries as stored, in the Stage's order.
	Entries []Entry
	// Replayed is true when the stage had been committed before (every
	// entry's identity stored, every decision at its To) and nothing was
	// written: Entries are the stored ones, which may differ in body from
	// the stage's (the first commit wins).
	Replayed bool
}

// MaxStageWrites is the most writes (entries plus transitions) one Stage
// may hold: DynamoDB's TransactWriteItems takes at most 100 actions, and
// both ledgers refuse a larger stage the same way (EINVALID) rather than
// split it, which would break the stage's all-or-nothing promise.
const MaxStageWrites = 100

// MaxStageBytes bounds a Stage's stored size (entries as stored, after
// large bodies moved to the body store, by EntrySize): DynamoDB's
// transaction limit is 4 MB, less the request's own bytes.
const MaxStageBytes = 3 << 20

// Validate checks the stage's shape: a name, at least one write, at most
// MaxStageWrites of them, no identity twice, transitions that
// CanTransition allows and no decision moved twice. Entries themselves are
// checked as Commit prepares them. Errors: EINVALID.
func (s Stage) Validate() error {
	n := len(s.Entries) + len(s.Transitions)
	switch {
	case s.Name == "":
		return Invalid("stage.name", "required")
	case n == 0:
		return Invalid("stage", "%s writes nothing", s.Name)
	case n > MaxStageWrites:
		return Invalid("stage", "%s holds %d writes: a stage commits at most %d at once", s.Name, n, MaxStageWrites)
	}
	seen := make(map[[3]string]int, len(s.Entries))
	for i, e := range s.Entries {
		id := [3]string{e.SignalID, string(e.Kind), e.Qualifier}
		if j, ok := seen[id]; ok {
			return Invalid(fmt.Sprintf("stage.entries[%d]", i), "%s/%s/%q is entry %d too", e.SignalID, e.Kind, e.Qualifier, j)
		}
		seen[id] = i
	}
	moved := make(map[string]bool, len(s.Transitions))
	for i, t := range s.Transitions {
		field := fmt.Sprintf("stage.transitions[%d]", i)
		switch {
		case t.DecisionID == "":
			return Invalid(field+".decision_id", "required")
		case !CanTransition(t.From, t.To):
			return Invalid(field+".to", "%q -> %q is not an allowed transition", t.From, t.To)
		case moved[t.DecisionID]:
			return Invalid(field, "decision %s moves twice", t.DecisionID)
		}
		moved[t.DecisionID] = true
	}
	return nil
}
