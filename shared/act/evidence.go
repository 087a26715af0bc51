package act

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Outcomes of an action, as its evidence records them.
const (
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
	// OutcomeUnknown: the request went out and no answer came back, so
	// whether the action took effect cannot be known.
	OutcomeUnknown = "unknown"
)

// Evidence is the body of an execution-evidence entry (qualifier: the action
// index): what the executor did for one planned action, with its provenance.
type Evidence struct {
	DecisionID     string          `json:"decision_id"`
	DecisionDigest string          `json:"decision_digest"`
	SignalID       string          `json:"signal_id"`
	Index          int             `json:"index"`
	Type           string          `json:"type"`
	Parameters     json.RawMessage `json:"parameters,omitempty"`
	Targets        []string        `json:"targets,omitempty"`
	Outcome        string          `json:"outcome"`              // success | failure | unknown
	ErrorType      string          `json:"error_type,omitempty"` // ActionFailed | ScopeViolation | OutcomeUnknown
	Error          string          `json:"error,omitempty"`
	Receipt        *Receipt        `json:"receipt,omitempty"`
	At             time.Time       `json:"at"`
}

// Entries reads a wave's entries; ora.Ledger satisfies it.
type Entries interface {
	// Entries: see ora.Ledger. Errors: ENOTFOUND, ETRANSIENT.
	Entries(ctx context.Context, signalID string) ([]ora.Entry, error)
}

// Wave is what the ledger holds about one decision of a signal: the
// reasoner-decision entry, the decision it carries and the evidence recorded
// so far, by action index.
type Wave struct {
	Entries       []ora.Entry
	DecisionEntry ora.Entry
	Decision      ora.ReasonerDecision
	Evidence      map[int]Evidence
}

// Find returns the wave's entry of kind and qualifier.
func (w Wave) Find(kind ora.EntryKind, qualifier string) (ora.Entry, bool) {
	for _, e := range w.Entries {
		if e.Kind == kind && e.Qualifier == qualifier {
			return e, true
		}
	}
	return ora.Entry{}, false
}

// LoadWave reads a signal's entries and picks out decisionID's decision and
// its evidence. Errors: ENOTFOUND when the signal has no entries or no
// reasoner-decision entry for decisionID, EINVALID when a stored body does not
// decode, ETRANSIENT.
func LoadWave(ctx context.Context, l Entries, signalID, decisionID string) (Wave, error) {
	entries, err := l.Entries(ctx, signalID)
	if err != nil {
		return Wave{}, fmt.Errorf("ledger: entries of %s: %w", signalID, err)
	}
	w := Wave{Entries: entries, Evidence: map[int]Evidence{}}
	found := false
	for _, e := range entries {
		switch e.Kind {
		case ora.KindReasonerDecision:
			if e.Qualifier != decisionID {
				continue
			}
			if err := json.Unmarshal(e.Body, &w.Decision); err != nil {
				return Wave{}, ora.Invalid("reasoner-decision", "entry %s does not decode: %v", decisionID, err)
			}
			w.DecisionEntry, found = e, true
		case ora.KindExecutionEvidence:
			var ev Evidence
			if err := json.Unmarshal(e.Body, &ev); err != nil {
				return Wave{}, ora.Invalid("execution-evidence", "entry %s does not decode: %v", e.Qualifier, err)
			}
			if ev.DecisionID != decisionID {
				continue
			}
			i, err := strconv.Atoi(e.Qualifier)
			if err != nil {
				return Wave{}, ora.Invalid("execution-evidence", "qualifier %q is not an action index", e.Qualifier)
			}
			w.Evidence[i] = ev
		}
	}
	if !found {
		return Wave{}, ora.Errorf(ora.ENOTFOUND, "no reasoner-decision entry %s for signal %s", decisionID, signalID)
	}
	return w, nil
}

// Succeeded reports whether every planned action has success evidence.
func (w Wave) Succeeded() bool {
	for i := range w.Decision.Plan() {
		if ev, ok := w.Evidence[i]; !ok || ev.Outcome != OutcomeSuccess {
			return false
		}
	}
	return true
}

// HTTPOK reports whether an http.request receipt carries a 2xx status.
func HTTPOK(r Receipt) bool {
	return r.StatusCode >= http.StatusOK && r.StatusCode < http.StatusMultipleChoices
}
