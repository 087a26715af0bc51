package act

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Commitments is the part of the ledger the commitment actions call.
type Commitments interface {
	// OpenCommitment: see ora.Ledger. Errors: EINVALID, ECONFLICT, ETRANSIENT.
	OpenCommitment(ctx context.Context, c ora.Commitment) (ora.Commitment, error)
	// CloseCommitment: see ora.Ledger. Errors: ENOTFOUND, ECONFLICT, ETRANSIENT.
	CloseCommitment(ctx context.Context, id, closedBy string) (ora.Commitment, error)
}

// CommitmentParams are the parameters of commitment.open (ID optional: it
// defaults to "<decision id>-<action index>"; Title required) and
// commitment.close (ID required).
type CommitmentParams struct {
	ID    string          `json:"id,omitempty"`
	Title string          `json:"title,omitempty"`
	Body  json.RawMessage `json:"body,omitempty"`
}

// CommitmentOpen opens a commitment in the ledger.
type CommitmentOpen struct {
	store Commitments
	now   func() time.Time
}

// NewCommitmentOpen returns the commitment.open action.
func NewCommitmentOpen(store Commitments) *CommitmentOpen {
	return &CommitmentOpen{store: store, now: time.Now}
}

func commitmentTarget(id string) string { return "commitments/" + id }

// Check validates the parameters; the target is "commitments/<id>". Errors: EINVALID.
func (a *CommitmentOpen) Check(params json.RawMessage) ([]string, error) {
	var p CommitmentParams
	if err := decodeParams(TypeCommitmentOpen, params, &p); err != nil {
		return nil, err
	}
	if p.Title == "" {
		return nil, ora.Invalid(TypeCommitmentOpen+".parameters.title", "required")
	}
	if p.ID == "" {
		return nil, nil
	}
	return []string{commitmentTarget(p.ID)}, nil
}

// Run opens the commitment; reopening the same commitment for the same signal
// is a success. Errors: EINVALID, ECONFLICT (the id belongs to another
// signal), ETRANSIENT.
func (a *CommitmentOpen) Run(ctx context.Context, params json.RawMessage) (Receipt, error) {
	if _, err := a.Check(params); err != nil {
		return Receipt{}, err
	}
	var p CommitmentParams
	_ = json.Unmarshal(params, &p)
	inv, _ := InvocationFrom(ctx)
	if p.ID == "" {
		p.ID = inv.DecisionID + "-" + strconv.Itoa(inv.Index)
	}
	c := ora.Commitment{ID: p.ID, SignalID: inv.SignalID, Title: p.Title, Body: p.Body, Status: ora.CommitmentOpen, OpenedAt: a.now().UTC()}
	got, err := a.store.OpenCommitment(ctx, c)
	if err != nil {
		prev, ok := ora.Existing[ora.Commitment](err)
		if !ok || prev.SignalID != inv.SignalID {
			return Receipt{}, fmt.Errorf("commitment.open %s: %w", p.ID, err)
		}
		got = prev
	}
	return Receipt{Type: TypeCommitmentOpen, Target: commitmentTarget(got.ID), ID: got.ID, At: a.now().UTC()}, nil
}

// CommitmentClose closes a commitment in the ledger.
type CommitmentClose struct {
	store Commitments
	now   func() time.Time
}

// NewCommitmentClose returns the commitment.close action.
func NewCommitmentClose(store Commitments) *CommitmentClose {
	return &CommitmentClose{store: store, now: time.Now}
}

// Check validates the parameters; the target is "commitments/<id>". Errors: EINVALID.
func (a *CommitmentClose) Check(params json.RawMessage) ([]string, error) {
	var p CommitmentParams
	if err := decodeParams(TypeCommitmentClose, params, &p); err != nil {
		return nil, err
	}
	if p.ID == "" {
		return nil, ora.Invalid(TypeCommitmentClose+".parameters.id", "required")
	}
	return []string{commitmentTarget(p.ID)}, nil
}

// Run closes the commitment, recording the decision as its closer; closing it
// again for the same decision is a success. Errors: EINVALID, ENOTFOUND,
// ECONFLICT (closed by someone else), ETRANSIENT.
func (a *CommitmentClose) Run(ctx context.Context, params json.RawMessage) (Receipt, error) {
	targets, err := a.Check(params)
	if err != nil {
		return Receipt{}, err
	}
	var p CommitmentParams
	_ = json.Unmarshal(params, &p)
	inv, _ := InvocationFrom(ctx)
	got, err := a.store.CloseCommitment(ctx, p.ID, inv.DecisionID)
	if err != nil {
		prev, ok := ora.Existing[ora.Commitment](err)
		if !ok || prev.ClosedBy != inv.DecisionID {
			return Receipt{Type: TypeCommitmentClose, Target: targets[0], At: a.now().UTC()}, fmt.Errorf("commitment.close %s: %w", p.ID, err)
		}
		got = prev
	}
	return Receipt{Type: TypeCommitmentClose, Target: targets[0], ID: got.ID, At: a.now().UTC()}, nil
}
