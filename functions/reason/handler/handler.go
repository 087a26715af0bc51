// Package handler maps the reason function's events to its service and back; the
// Lambda (functions/reason) and the embedded runtime both call it.
package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
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

// Proposer records an orientation proposal and runs the guard on it;
// *orient.Profiles is one.
type Proposer interface {
	// Propose records p under by (its subject and namespace replace the
	// body's) and runs the guard. Errors: EINVALID (nothing written),
	// ECONFLICT (the id exists with other content), ETRANSIENT.
	Propose(ctx context.Context, p ora.ProfileProposal, by ora.Principal) (ora.ProposalView, error)
}

// ParameterChecker validates an action's parameters with the action's own
// validation; *act.Registry is one (act.StandardParameters in the Lambda,
// the actor's registry in the embedded runtime).
type ParameterChecker interface {
	// CheckParameters returns EINVALID when the action cannot run with its
	// parameters (a required one missing or null); nil otherwise.
	CheckParameters(a ora.Action) error
}

// InvalidParametersConfidence is the confidence a decision is lowered to
// when an action's parameters are invalid: below ora.MediumConfidence, so
// the wave escalates to a human instead of failing its Act.
const InvalidParametersConfidence = 0.49

// ReasonerPrincipal is who a reasoner-emitted proposal is from: the reasoner
// in the main namespace (a human approves it, as any other).
var ReasonerPrincipal = ora.Principal{Subject: "reasoner", Namespace: "main"}

// ProposalOutcome is what became of the orientation proposal a decision
// carried: pending (the guard passed it; it waits for approval), rejected
// (with the guard's code) or invalid (malformed: not recorded).
type ProposalOutcome struct {
	ID     string `json:"proposal_id"`
	Status string `json:"status"`
	Code   string `json:"code,omitempty"`
}

// Input is the Reason task's input; other fields of the execution state are
// ignored.
type Input struct {
	SignalID string `json:"signal_id"`
	// Batch is the wave's place in a reason batch, handed back by the state
	// machine after the wait the last call asked for (Output.BatchWait).
	Batch *BatchTicket `json:"batch,omitempty"`
	// AppPatch is the app patch a resume handed the wave (null when it was
	// never resumed with one): an input patch replaces a field of the
	// signal's payload before the reasoner reads it.
	AppPatch *ora.AppPatch `json:"app_patch,omitempty"`
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
	// CrystallizationReason and ChainLength say why a model's observer
	// chain stopped and after how many stages (0: the decision was reused
	// from the pattern cache); telemetry counts them.
	CrystallizationReason string `json:"crystallization_reason,omitempty"`
	ChainLength           int    `json:"chain_length,omitempty"`
	// Proposal is what became of the decision's orientation proposal, if
	// it carried one.
	Proposal *ProposalOutcome `json:"orientation_proposal,omitempty"`
	// BatchID names the reason batch that decided, when one did.
	BatchID string `json:"batch_id,omitempty"`
	// BatchWait, instead of a decision, asks the state machine to wait
	// BatchWait.Seconds and call the task again with it as Input.Batch: the
	// wave's batch is not decided yet.
	BatchWait *BatchTicket `json:"batch_wait,omitempty"`
}

// Handler answers the state machine's Reason task with whichever reasoner it
// is given (the rules reasoner, or a model-backed one).
type Handler struct {
	Ledger   Ledger
	Reasoner ora.Reasoner
	// Proposals receives the orientation proposals reasoners emit. Nil: a
	// decision's proposal is reported invalid ("no proposal service").
	Proposals Proposer
	// AppVersion is the app context's version (ora.AppVersion), recorded
	// with every decision; the motor version is the reasoner's to record
	// (motor.Reasoner does).
	AppVersion string
	// Batching, when on, reasons the signals of one batch key whose waves
	// reach Reason within its window together (the reasoner must be a
	// BatchReasoner). Off by default.
	Batching Batching
	// Parameters checks each action of a new decision before it is
	// recorded. A decision whose parameters are invalid (a rule's template of
	// a field that came out null) is recorded with its confidence lowered to
	// InvalidParametersConfidence and the problem first in its reasoning, so
	// a human decides. Nil: not checked.
	Parameters ParameterChecker
}

// Handle decides about the signal once: when the wave already has a decision
// (a retry), that decision is returned and the reasoner is not asked again;
// when a concurrent run recorded one first, the stored one is returned. The
// digest is the sha256 of the stored reasoner-decision entry's body, the one
// the actor checks. With Batching on and a reasoner that batches, a signal
// with a batch key is decided in its batch (see Batches): the task answers
// with Output.BatchWait until the batch decided. Errors are taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (Output, error) {
	if in.SignalID == "" {
		return Output{}, taskerr.From(ora.Invalid("signal_id", "required"))
	}
	// What reasoning reads: the signal, its packet and a decision already
	// made, not the observed facts the packet was compiled from.
	// The operator's records are there only when the wave failed: a wave
	// resumed at Reason decides under the motor version its resume sent it
	// on under (motor.Under), not under this process's cached read.
	entries, err := ora.EntriesOfKinds(ctx, h.Ledger, in.SignalID,
		ora.KindSignalReceived, ora.KindOrientationPacket, ora.KindReasonerDecision, ora.KindOperatorDecision)
	if err != nil {
		return Output{}, taskerr.From(fmt.Errorf("reason %s: %w", in.SignalID, err))
	}
	for _, e := range entries {
		if e.Kind == ora.KindReasonerDecision {
			return h.output(ctx, e)
		}
	}
	ri, err := orient.InputOf(entries)
	if err != nil {
		return Output{}, taskerr.From(fmt.Errorf("reason %s: %w", in.SignalID, err))
	}
	patch := in.AppPatch
	if patch != nil && patch.Kind == ora.PatchInput {
		if ri.Signal.Payload, err = patch.ApplyInput(ri.Signal.Payload); err != nil {
			return Output{}, taskerr.From(fmt.Errorf("reason %s: app patch %s: %w", in.SignalID, patch.Digest, err))
		}
	} else {
		patch = nil // a mapping or spec patch is not Reason's to apply
	}
	resumed, pinned := operate.ResumedUnder(entries)
	ctx = motor.Under(ctx, resumed)
	if br, ok := h.Reasoner.(BatchReasoner); ok && h.Batching.on() && !pinned && patch == nil {
		out, done, err := h.batched(ctx, in, ri.Signal, br)
		if done || err != nil {
			return out, err
		}
	}
	d, err := h.Reasoner.Reason(ctx, ri)
	if err != nil {
		return Output{}, taskerr.From(fmt.Errorf("reason %s: %w", in.SignalID, err))
	}
	if d.SignalID != in.SignalID {
		return Output{}, &taskerr.InternalError{Message: fmt.Sprintf("reason %s: the reasoner decided about signal %q", in.SignalID, d.SignalID)}
	}
	d.AppPatch = patch
	e, err := h.record(ctx, d)
	if err != nil {
		return Output{}, taskerr.From(fmt.Errorf("reason %s: %w", in.SignalID, err))
	}
	return h.output(ctx, e)
}

// record stamps a new decision with the app version, checks its actions'
// parameters and its author, and records it once: when a concurrent run
// recorded one first, the stored one is returned.
func (h Handler) record(ctx context.Context, d ora.ReasonerDecision) (ora.Entry, error) {
	if d.AppVersion == "" {
		d.AppVersion = h.AppVersion
	}
	d = architectMode(h.checkParameters(d))
	e, err := h.Ledger.RecordDecision(ctx, d)
	if err != nil {
		stored, ok := ora.Existing[ora.Entry](err)
		if !ok {
			return ora.Entry{}, err
		}
		e = stored
	}
	return e, nil
}

// architectMode records a low-band decision as the architect's: whoever
// proposed it, it is intent, which the actor runs only once an auditor (a
// human, through the escalation) approved it. The reasoning says so when the
// label changes.
func architectMode(d ora.ReasonerDecision) ora.ReasonerDecision {
	if d.Band() != ora.BandLow || d.AuthorType == ora.AuthorArchitect {
		return d
	}
	d.Reasoning = fmt.Sprintf("%s\n\nRecorded as architect (proposed as %s): a low-confidence decision is intent until an auditor approves it.", d.Reasoning, d.AuthorType)
	d.AuthorType = ora.AuthorArchitect
	return d
}

// checkParameters lowers a decision whose actions' parameters are invalid to
// InvalidParametersConfidence (the low band: a human decides) and says why
// first in its reasoning.
func (h Handler) checkParameters(d ora.ReasonerDecision) ora.ReasonerDecision {
	if h.Parameters == nil {
		return d
	}
	var problems []string
	for i, a := range d.Plan() {
		if err := h.Parameters.CheckParameters(a); err != nil {
			problems = append(problems, fmt.Sprintf("action %d (%s): %s", i, a.Type, ora.ErrorMessage(err)))
		}
	}
	if len(problems) == 0 {
		return d
	}
	d.Confidence = min(d.Confidence, InvalidParametersConfidence)
	d.Reasoning = "Invalid parameters, escalated to a human: " + strings.Join(problems, "; ") + ".\n\n" + d.Reasoning
	return d
}

// output maps a stored reasoner-decision entry to the task's result, and
// hands the orientation proposal it carries to the guard. A retry proposes
// again, which is harmless: proposals are idempotent by id (the id defaults
// to one derived from the decision's). A malformed proposal or one whose id
// is taken by other content is reported, not recorded, and the wave goes on;
// a transient failure fails the task (its Retry runs it again).
func (h Handler) output(ctx context.Context, e ora.Entry) (Output, error) {
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
		out.CrystallizationReason, out.ChainLength = d.Model.CrystallizationReason, d.Model.ChainLength
		out.BatchID = d.Model.BatchID
	}
	if d.OrientationProposal != nil {
		po, err := h.propose(ctx, d)
		if err != nil {
			return Output{}, taskerr.From(fmt.Errorf("reason %s: orientation proposal: %w", e.SignalID, err))
		}
		out.Proposal = &po
	}
	return out, nil
}

// ProposalID is the id a reasoner-emitted proposal gets when it has none:
// derived from the decision's, so a retry proposes the same one.
func ProposalID(decisionID string) string {
	id := "reasoner-" + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, decisionID)
	return id[:min(64, len(id))]
}

func (h Handler) propose(ctx context.Context, d ora.ReasonerDecision) (ProposalOutcome, error) {
	p := *d.OrientationProposal
	if p.ID == "" {
		p.ID = ProposalID(d.ID)
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = d.Timestamp
	}
	if p.Reason == "" {
		p.Reason = "emitted by the reasoner with decision " + d.ID
	}
	if h.Proposals == nil {
		return ProposalOutcome{ID: p.ID, Status: "invalid", Code: "no proposal service"}, nil
	}
	v, err := h.Proposals.Propose(ctx, p, ReasonerPrincipal)
	switch ora.ErrorCode(err) {
	case "":
	case ora.EINVALID, ora.ECONFLICT:
		return ProposalOutcome{ID: p.ID, Status: "invalid", Code: err.Error()}, nil
	default:
		return ProposalOutcome{}, err
	}
	out := ProposalOutcome{ID: p.ID, Status: v.Status}
	if v.Decision != nil {
		out.Code = v.Decision.RejectionCode
	}
	return out, nil
}
