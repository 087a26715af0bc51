// Package act is the actor of a wave (author type executor). It proves the
// provenance of a decision (the reasoner-decision entry is in the ledger, its
// digest matches the decision's status record, and a conditional update moves
// the decision to executing, so it runs once), enforces the decision's scope and
// the configured allow-lists before any side effect, runs each planned action
// through a Registry of Actions, once per (decision id, action index), and
// records an execution-evidence entry per action with its provenance and
// receipt.
package act
