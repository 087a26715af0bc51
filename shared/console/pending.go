package console

import (
	"context"
	"fmt"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Ledger is what the console reads of the ledger: the calls the HTTP API and
// the review service make, nothing that writes.
type Ledger interface {
	// Entries returns a signal's entries in order. Errors: ENOTFOUND, ETRANSIENT.
	Entries(ctx context.Context, signalID string) ([]ora.Entry, error)
	// Recent returns entries of one kind in [from, to), newest first.
	// Errors: EINVALID, ETRANSIENT.
	Recent(ctx context.Context, kind ora.EntryKind, from, to time.Time, limit int) ([]ora.Entry, error)
	// Decision returns a decision's status record. Errors: ENOTFOUND, ETRANSIENT.
	Decision(ctx context.Context, decisionID string) (ora.DecisionState, error)
}

// Approval is a decision waiting for a human's verdict.
type Approval struct {
	DecisionID string
	SignalID   string
	Since      time.Time
}

// Lookback is how far back the console looks for waves and approvals.
const Lookback = 90 * 24 * time.Hour

// maxScan bounds the entries one page reads.
const maxScan = 1000

// Pending returns the decisions awaiting approval, oldest first: those with an
// architect-intent entry whose status is still awaiting-approval.
func Pending(ctx context.Context, l Ledger, now time.Time) ([]Approval, error) {
	intents, err := l.Recent(ctx, ora.KindArchitectIntent, now.Add(-Lookback), now.Add(time.Minute), maxScan)
	if err != nil {
		return nil, fmt.Errorf("console: pending approvals: %w", err)
	}
	seen := map[string]bool{}
	var out []Approval
	for i := len(intents) - 1; i >= 0; i-- { // oldest first
		e := intents[i]
		id := e.Meta["decision_id"]
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		st, err := l.Decision(ctx, id)
		if err != nil {
			if ora.ErrorCode(err) == ora.ENOTFOUND {
				continue
			}
			return nil, fmt.Errorf("console: decision %s: %w", id, err)
		}
		if st.Status == ora.StatusAwaitingApproval {
			out = append(out, Approval{DecisionID: id, SignalID: e.SignalID, Since: e.CreatedAt})
		}
	}
	return out, nil
}
