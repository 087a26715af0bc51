// Package operate is the minimal operator of seed 003: it catches a wave's
// failure (from Act or Validate), classifies it as app, motor or mixed by the
// error's name, records an operator decision record and a failed final
// verdict, and moves an executing decision to failed. The richer loop of seed
// 003 (pause, patch, resume) builds on this record.
package operate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ora-runtime/ora/shared/ora"
)

// Ledger is the part of ora.Ledger the operator calls.
type Ledger interface {
	// Append: see ora.Ledger. Errors: EINVALID, ECONFLICT (with the stored Entry), ETRANSIENT.
	Append(ctx context.Context, e ora.Entry) (ora.Entry, error)
	// Decision: see ora.Ledger. Errors: ENOTFOUND, ETRANSIENT.
	Decision(ctx context.Context, decisionID string) (ora.DecisionState, error)
	// TransitionDecision: see ora.Ledger. Errors: EINVALID, ENOTFOUND, ECONFLICT, ETRANSIENT.
	TransitionDecision(ctx context.Context, decisionID string, from, to ora.DecisionStatus, reason string) (ora.DecisionState, error)
}

// Failure is what a Catch hands the operator: the error name and its cause
// (for a Lambda error, a JSON object with errorMessage and errorType).
type Failure struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// Step is one step of an operator's action plan.
type Step struct {
	Step   string `json:"step"`
	Target string `json:"target"`
}

// Record is an operator decision record (seed 003 §8.2), the body of the
// operator-decision entry.
type Record struct {
	DecisionID         string    `json:"decision_id"` // the operator decision's own id
	ReasonerDecisionID string    `json:"reasoner_decision_id,omitempty"`
	SignalID           string    `json:"signal_id"`
	Classification     string    `json:"classification"` // app | motor | mixed
	Taxonomy           string    `json:"taxonomy"`       // seed 003 §10
	Rationale          string    `json:"rationale"`
	ActionPlan         []Step    `json:"action_plan"`
	SafetyChecks       []string  `json:"safety_checks"`
	Failure            Failure   `json:"failure"`
	At                 time.Time `json:"at"`
}

// Verdict is the body of a final-verdict entry.
type Verdict struct {
	Outcome    string          `json:"outcome"` // completed | rejected | failed | unknown
	DecisionID string          `json:"decision_id,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Error      string          `json:"error,omitempty"`
	Validators json.RawMessage `json:"validators,omitempty"`
	At         time.Time       `json:"at"`
}

// Outcome is what Operate returns: the Fail state's error and cause.
type Outcome struct {
	Error string `json:"error"`
	Cause string `json:"cause"`
}

// Classify maps a failure's error name to seed 003's classification and
// taxonomy: the wave's own inputs (a decision out of scope, unprovable, or an
// action the world refused) are the app's; the runtime's failures (internal
// errors, timeouts, exhausted retries) are the motor's; a validator finding
// the executed work disagreeing with the decision is mixed.
func Classify(errorName string) (classification, taxonomy string) {
	switch errorName {
	case "ScopeViolation", "ProvenanceError", "InvalidInput", "NotFound":
		return "app", "APP-SPEC"
	case "ActionFailed":
		return "app", "APP-BUILD"
	case "OutcomeUnknown":
		return "mixed", "MIXED-UNKNOWN-OUTCOME"
	case "ValidationFailed":
		return "mixed", "MIXED-DRIFT"
	case "TransientError", "States.Timeout", "States.HeartbeatTimeout", "Lambda.TooManyRequestsException":
		return "motor", "MOTOR-PERF"
	}
	return "motor", "MOTOR-RULES"
}

// Options tune a Service.
type Options struct {
	// Now returns the current time. Default time.Now.
	Now func() time.Time
}

// Service is the operator.
type Service struct {
	ledger Ledger
	now    func() time.Time
}

// New returns an operator writing to ledger.
func New(ledger Ledger, opts ...func(*Options)) *Service {
	o := Options{Now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	return &Service{ledger: ledger, now: o.Now}
}

// namespace derives operator decision ids from the wave, so a retry writes the
// same record.
var namespace = uuid.MustParse("5b0c36a2-4c8e-4f57-9d0e-0d8f3c7a1e11")

// Operate records the failure of decisionID's wave: an operator-decision
// entry, a final-verdict "failed", and executing -> failed when the decision
// is executing. It is safe to run twice. Errors: EINVALID, ETRANSIENT.
func (s *Service) Operate(ctx context.Context, signalID, decisionID string, f Failure) (Outcome, error) {
	if signalID == "" {
		return Outcome{}, ora.Invalid("signal_id", "required")
	}
	if f.Error == "" {
		f.Error = "UnknownError"
	}
	msg := message(f.Cause)
	class, tax := Classify(f.Error)
	rec := Record{
		DecisionID:         uuid.NewSHA1(namespace, []byte(signalID+"/"+decisionID)).String(),
		ReasonerDecisionID: decisionID,
		SignalID:           signalID,
		Classification:     class,
		Taxonomy:           tax,
		Rationale:          fmt.Sprintf("%s classified %s (%s): %s", f.Error, class, tax, msg),
		ActionPlan:         []Step{{Step: "fail", Target: "pipeline"}},
		SafetyChecks:       []string{},
		Failure:            f,
		At:                 s.now().UTC(),
	}
	outcome := "failed"
	if f.Error == "OutcomeUnknown" {
		// Nobody can tell whether the action took effect: never "failed,
		// nothing done"; a human finds out (the decision stays unknown).
		outcome = "unknown"
		rec.ActionPlan = []Step{{Step: "ask", Target: "operator"}}
	}
	if err := s.append(ctx, signalID, ora.KindOperatorDecision, decisionID, rec); err != nil {
		return Outcome{}, err
	}
	if decisionID != "" {
		if err := s.failDecision(ctx, decisionID, f.Error+": "+msg); err != nil {
			return Outcome{}, err
		}
	}
	v := Verdict{Outcome: outcome, DecisionID: decisionID, Reason: msg, Error: f.Error, At: s.now().UTC()}
	if err := s.append(ctx, signalID, ora.KindFinalVerdict, "", v); err != nil {
		return Outcome{}, err
	}
	return Outcome{Error: f.Error, Cause: msg}, nil
}

func (s *Service) failDecision(ctx context.Context, decisionID, reason string) error {
	st, err := s.ledger.Decision(ctx, decisionID)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return nil
	}
	if err != nil {
		return fmt.Errorf("operate: read decision %s: %w", decisionID, err)
	}
	if st.Status != ora.StatusExecuting {
		return nil
	}
	if _, err := s.ledger.TransitionDecision(ctx, decisionID, ora.StatusExecuting, ora.StatusFailed, reason); err != nil {
		if _, ok := ora.Existing[ora.DecisionState](err); ok {
			return nil // it moved meanwhile (the actor failed it itself)
		}
		return fmt.Errorf("operate: fail decision %s: %w", decisionID, err)
	}
	return nil
}

// append writes an entry once; a conflict (a retry, or a verdict already
// written) keeps the stored one.
func (s *Service) append(ctx context.Context, signalID string, kind ora.EntryKind, qualifier string, body any) error {
	e, err := ora.NewEntry(signalID, kind, qualifier, body)
	if err != nil {
		return fmt.Errorf("operate: %w", err)
	}
	if _, err := s.ledger.Append(ctx, e); err != nil {
		if _, ok := ora.Existing[ora.Entry](err); ok {
			return nil
		}
		return fmt.Errorf("ledger: append %s: %w", kind, err)
	}
	return nil
}

// message extracts errorMessage from a Lambda error's cause, which Step
// Functions passes as a JSON string; any other cause is returned trimmed.
func message(cause string) string {
	var c struct {
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal([]byte(cause), &c) == nil && c.ErrorMessage != "" {
		return c.ErrorMessage
	}
	return strings.TrimSpace(cause)
}
