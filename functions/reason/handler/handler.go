// Package handler maps the reason function's events to its service and back; the
// Lambda (functions/reason) and the embedded runtime both call it.
package handler

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Ledger is the part of ora.Ledger the Reason task uses.
type Ledger interface {
	// Entries returns a signal's entries in order. Errors: ENOTFOUND, ETRANSIENT.
	Entries(ctx context.Context, signalID string) ([]ora.Entry, error)
	// RecordDecision writes the decision once. Errors: EINVALID, ECONFLICT
	// carrying the stored ora.Entry, ETRANSIENT.
	RecordDecision(ctx context.Context, d ora.ReasonerDecision) (ora.Entry, error)
}

// Input is the Reason task's input; other fields of the execution state are
// ignored.
type Input struct {
	SignalID string `json:"signal_id"`
}

// Output summarizes the decision; it is stored at $.decision and the Route
// state chooses on Band.
type Output struct {
	DecisionID string  `json:"decision_id"`
	Digest     string  `json:"digest"`
	Confidence float64 `json:"confidence"`
	Band       string  `json:"band"`
	Tier       int     `json:"tier"`
	ActionType string  `json:"action_type"`
	// The model's usage and cost, when a model decided (telemetry counts them).
	InputTokens  int     `json:"input_tokens,omitempty"`
	OutputTokens int     `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
}

// Handler answers the state machine's Reason task with whichever reasoner it
// is given (the rules reasoner, or a model-backed one).
type Handler struct {
	Ledger   Ledger
	Reasoner ora.Reasoner
	// AppVersion is the app context's version (ora.AppVersion), recorded
	// with every decision; the motor version is the reasoner's to record
	// (motor.Reasoner does).
	AppVersion string
}

// Handle decides about the signal once: when the wave already has a decision
// (a retry), that decision is returned and the reasoner is not asked again;
// when a concurrent run recorded one first, the stored one is returned. The
// digest is the sha256 of the stored reasoner-decision entry's body, the one
// the actor checks. Errors are taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (Output, error) {
	if in.SignalID == "" {
		return Output{}, taskerr.From(ora.Invalid("signal_id", "required"))
	}
	entries, err := h.Ledger.Entries(ctx, in.SignalID)
	if err != nil {
		return Output{}, taskerr.From(fmt.Errorf("reason %s: %w", in.SignalID, err))
	}
	for _, e := range entries {
		if e.Kind == ora.KindReasonerDecision {
			return output(e)
		}
	}
	ri, err := orient.InputOf(entries)
	if err != nil {
		return Output{}, taskerr.From(fmt.Errorf("reason %s: %w", in.SignalID, err))
	}
	d, err := h.Reasoner.Reason(ctx, ri)
	if err != nil {
		return Output{}, taskerr.From(fmt.Errorf("reason %s: %w", in.SignalID, err))
	}
	if d.SignalID != in.SignalID {
		return Output{}, &taskerr.InternalError{Message: fmt.Sprintf("reason %s: the reasoner decided about signal %q", in.SignalID, d.SignalID)}
	}
	if d.AppVersion == "" {
		d.AppVersion = h.AppVersion
	}
	e, err := h.Ledger.RecordDecision(ctx, d)
	if err != nil {
		stored, ok := ora.Existing[ora.Entry](err)
		if !ok {
			return Output{}, taskerr.From(fmt.Errorf("reason %s: %w", in.SignalID, err))
		}
		e = stored
	}
	return output(e)
}

// output maps a stored reasoner-decision entry to the task's result.
func output(e ora.Entry) (Output, error) {
	var d ora.ReasonerDecision
	if err := json.Unmarshal(e.Body, &d); err != nil {
		return Output{}, &taskerr.InternalError{Message: fmt.Sprintf("reason %s: stored decision %s is malformed: %v", e.SignalID, e.Qualifier, err)}
	}
	digest := e.Digest
	if digest == "" {
		digest = ora.Digest(e.Body)
	}
	out := Output{
		DecisionID: d.ID,
		Digest:     digest,
		Confidence: d.Confidence,
		Band:       string(ora.BandOf(d.Confidence)),
		Tier:       d.Tier,
		ActionType: d.ActionType,
	}
	if d.Model != nil {
		out.InputTokens, out.OutputTokens, out.CostUSD = d.Model.Usage.InputTokens, d.Model.Usage.OutputTokens, d.Model.CostUSD
	}
	return out, nil
}
