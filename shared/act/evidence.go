package act

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
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
	// OutcomeSkipped: the action did not run because an action it depends
	// on failed or was skipped.
	OutcomeSkipped = "skipped"
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
	Outcome        string          `json:"outcome"`              // success | failure | unknown | skipped
	ErrorType      string          `json:"error_type,omitempty"` // ActionFailed | ScopeViolation | OutcomeUnknown | Skipped
	Error          string          `json:"error,omitempty"`
	Receipt        *Receipt        `json:"receipt,omitempty"`
	At             time.Time       `json:"at"`
	// Attempt counts the runs of the action an operator asked for after an
	// unknown outcome (0: the first run; qualifier "i", then "i/r<n>").
	Attempt int `json:"attempt,omitempty"`
	// ResolvedBy names the operator who said an action whose outcome was
	// unknown did run (LoadWave sets it; the stored evidence stays unknown).
	ResolvedBy string `json:"resolved_by,omitempty"`
}

// Resolution is an operator's answer to an unknown outcome (the body of an
// operator-decision entry, qualifier ResolutionQualifier): the action did run
// (Executed: the wave goes on to validation) or did not (the action runs again
// once, as attempt Attempt, under its own idempotency key).
type Resolution struct {
	DecisionID         string    `json:"decision_id"`
	Index              int       `json:"index"`
	Attempt            int       `json:"attempt"`
	Executed           bool      `json:"executed"`
	By                 string    `json:"by"`
	Reason             string    `json:"reason,omitempty"`
	OperatorDecisionID string    `json:"operator_decision_id,omitempty"`
	At                 time.Time `json:"at"`
}

// ResolutionQualifier is the qualifier of the operator-decision entry that
// resolves attempt-1's unknown outcome of action index.
func ResolutionQualifier(index, attempt int) string {
	return fmt.Sprintf("resolve/%d/%d", index, attempt)
}

// evidenceQualifier is the qualifier of an execution-evidence entry.
func evidenceQualifier(index, attempt int) string {
	if attempt == 0 {
		return strconv.Itoa(index)
	}
	return fmt.Sprintf("%d/r%d", index, attempt)
}

// parseEvidenceQualifier reads "i" or "i/r<n>".
func parseEvidenceQualifier(q string) (index, attempt int, ok bool) {
	is, rs, retried := strings.Cut(q, "/r")
	i, err := strconv.Atoi(is)
	if err != nil || i < 0 {
		return 0, 0, false
	}
	if !retried {
		return i, 0, true
	}
	n, err := strconv.Atoi(rs)
	if err != nil || n < 1 {
		return 0, 0, false
	}
	return i, n, true
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
	// Entries are the signal's entries of WaveKinds, in ledger order.
	Entries       []ora.Entry
	DecisionEntry ora.Entry
	Decision      ora.ReasonerDecision
	// Evidence is each action's latest evidence; an unknown outcome an
	// operator resolved as executed reads as success (ResolvedBy set), one
	// resolved as not executed reads as no evidence.
	Evidence map[int]Evidence
	// Attempts is the attempt the next run of an action is (absent: 0).
	Attempts map[int]int
	// Resolutions are the operators' latest answers, by action index.
	Resolutions map[int]Resolution
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

// WaveKinds are the kinds of entry a Wave holds: every kind but the wave's
// observed facts and orientation packet, which are most of its bytes and
// which acting, validating, reviewing and resolving a decision do not read.
// A ledger that reads by kind (ora.KindReader) leaves those unread.
var WaveKinds = slices.DeleteFunc(slices.Clone(ora.EntryKinds), func(k ora.EntryKind) bool {
	return k == ora.KindObservedFact || k == ora.KindOrientationPacket
})

// LoadWave reads a signal's entries of WaveKinds and picks out decisionID's
// decision and its evidence. Errors: ENOTFOUND when the signal has no such
// entries or no reasoner-decision entry for decisionID, EINVALID when a
// stored body does not decode, ETRANSIENT.
func LoadWave(ctx context.Context, l Entries, signalID, decisionID string) (Wave, error) {
	entries, err := ora.EntriesOfKinds(ctx, l, signalID, WaveKinds...)
	if err != nil {
		return Wave{}, fmt.Errorf("ledger: entries of %s: %w", signalID, err)
	}
	return WaveOf(entries, signalID, decisionID)
}

// WaveOf picks decisionID's decision and its evidence out of a signal's
// entries (those of WaveKinds; others are ignored), as LoadWave does.
// Errors: ENOTFOUND when there is no reasoner-decision entry for decisionID,
// EINVALID when a stored body does not decode.
func WaveOf(entries []ora.Entry, signalID, decisionID string) (Wave, error) {
	w := Wave{Entries: entries, Evidence: map[int]Evidence{}, Attempts: map[int]int{}, Resolutions: map[int]Resolution{}}
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
			i, n, ok := parseEvidenceQualifier(e.Qualifier)
			if !ok {
				return Wave{}, ora.Invalid("execution-evidence", "qualifier %q is not an action index", e.Qualifier)
			}
			ev.Attempt = n
			if prev, seen := w.Evidence[i]; !seen || prev.Attempt < n {
				w.Evidence[i] = ev
			}
		case ora.KindOperatorDecision:
			if !strings.HasPrefix(e.Qualifier, "resolve/") {
				continue
			}
			var r Resolution
			if err := json.Unmarshal(e.Body, &r); err != nil {
				return Wave{}, ora.Invalid("operator-decision", "resolution %s does not decode: %v", e.Qualifier, err)
			}
			if r.DecisionID != decisionID {
				continue
			}
			if prev, seen := w.Resolutions[r.Index]; !seen || prev.Attempt < r.Attempt {
				w.Resolutions[r.Index] = r
			}
		}
	}
	if !found {
		return Wave{}, ora.Errorf(ora.ENOTFOUND, "no reasoner-decision entry %s for signal %s", decisionID, signalID)
	}
	// An operator's answer to the latest unknown outcome of an action.
	for i, r := range w.Resolutions {
		ev, ok := w.Evidence[i]
		if !ok || ev.Outcome != OutcomeUnknown || ev.Attempt != r.Attempt-1 {
			continue
		}
		if r.Executed {
			ev.Outcome, ev.ErrorType, ev.Error, ev.ResolvedBy = OutcomeSuccess, "", "", r.By
			w.Evidence[i] = ev
			continue
		}
		delete(w.Evidence, i)
		w.Attempts[i] = r.Attempt
	}
	return w, nil
}

// Outcomes lists every planned action's outcome: its evidence's, or
// OutcomePending when it has none.
func (w Wave) Outcomes() []ActionOutcome { return outcomesOf(w) }

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
