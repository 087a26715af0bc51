// Package validate holds the four validators of a wave. Each checks one author
// type's work and records a ValidatorResult attributed to it: technical (the
// executor: the receipts show each action did what it claimed), safety (the
// auditor: scope and boundaries held), intent (the architect: the outcome
// matches the decision's plan) and the witness (the observer: re-normalizing
// the stored raw signal reproduces the recorded signal). A FAIL is recorded,
// then returned as a *taskerr.ValidationFailed.
package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Guardrail checks texts with a content guardrail; *bedrock.Guard (Bedrock
// Guardrails' ApplyGuardrail) satisfies it.
type Guardrail interface {
	// Check applies the guardrail to texts as source (INPUT or OUTPUT).
	// Errors: ETRANSIENT, EINVALID, ENOTFOUND, EFORBIDDEN, EINTERNAL.
	Check(ctx context.Context, source string, texts ...string) (bedrock.GuardVerdict, error)
}

var _ Guardrail = (*bedrock.Guard)(nil)

// IntentJudge asks a model whether a wave's evidence fulfils its decision's
// stated intent; *reason.IntentJudge satisfies it.
type IntentJudge interface {
	// Judge returns the model's verdict. Errors: ETRANSIENT and Bedrock's
	// other errors.
	Judge(ctx context.Context, d ora.ReasonerDecision, evidence any) (reason.IntentVerdict, error)
}

var _ IntentJudge = (*reason.IntentJudge)(nil)

// Motor answers the validator settings of the motor version a decision ran
// under; *motor.Registry satisfies it.
type Motor interface {
	// ValidatorSettingsOf returns the settings of version (the current
	// version's when it is empty or unknown) and the version they are of.
	// Errors: ETRANSIENT, EINVALID (a stored block that does not decode).
	ValidatorSettingsOf(ctx context.Context, version string) (motor.ValidatorSettings, string, error)
}

var _ Motor = (*motor.Registry)(nil)

// Ledger is the part of ora.Ledger the validators call.
type Ledger interface {
	act.Entries
	// Append: see ora.Ledger. Errors: EINVALID, ECONFLICT (with the stored Entry), ETRANSIENT.
	Append(ctx context.Context, e ora.Entry) (ora.Entry, error)
}

// Objects looks objects up; act.Folder and act.S3 satisfy it.
type Objects interface {
	// HeadObject describes the object at key. Errors: ENOTFOUND, ETRANSIENT.
	HeadObject(ctx context.Context, key string) (act.ObjectInfo, error)
}

// Commitments lists open commitments; ora.Ledger satisfies it.
type Commitments interface {
	// OpenCommitments: see ora.Ledger. Errors: ETRANSIENT.
	OpenCommitments(ctx context.Context, limit int) ([]ora.Commitment, error)
}

// Renormalize normalizes a stored signal's Raw bytes again, as its observer
// did; the observe package exports the real one. Errors: EINVALID when the raw
// input does not normalize, ETRANSIENT.
type Renormalize func(ora.NormalizedSignal) (ora.NormalizedSignal, error)

// Options tune a Service.
type Options struct {
	// Objects checks object.put receipts (technical). Without it an object.put
	// fails the technical validator.
	Objects Objects
	// Commitments checks commitment receipts (technical). Without it a
	// commitment action fails the technical validator.
	Commitments Commitments
	// Renormalize is the witness's normalizer. Without it Witness fails with
	// EINTERNAL.
	Renormalize Renormalize
	// Guardrail, when set, is applied by the safety validator to the action
	// parameters and the signal text of every decision of tier 2 or above;
	// an intervention fails safety.
	Guardrail Guardrail
	// IntentJudge, when set, is asked by the intent validator, for every
	// decision of tier 3, whether the evidence fulfils the decision's stated
	// intent; a "no" fails intent.
	IntentJudge IntentJudge
	// Motor, when set, gives the validator settings of the motor version a
	// wave's decision ran under (the bundle's validators block,
	// motor.ValidatorSettings: a canary's waves get the candidate's); they
	// override the defaults, which apply without it. The safety and intent
	// validators read it each time they run, so a promotion or a rollback
	// reaches the next wave (within the registry's cache TTL).
	Motor Motor
	// Now returns the current time. Default time.Now.
	Now func() time.Time
}

// Service runs the validators.
type Service struct {
	ledger Ledger
	o      Options
}

// New returns the validators reading and writing ledger.
func New(ledger Ledger, opts ...func(*Options)) *Service {
	o := Options{Now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	return &Service{ledger: ledger, o: o}
}

var responsibleFor = map[ora.Validator]string{
	ora.ValidatorTechnical: "execution: the receipts prove each action did what it claimed",
	ora.ValidatorSafety:    "scope: allowed operations and forbidden paths held",
	ora.ValidatorIntent:    "intent: the outcome matches the decision's plan",
	ora.ValidatorWitness:   "signal fidelity: the raw input normalizes to the recorded signal",
}

// Validate runs validator v on decisionID of signalID and records its result.
// Errors: EINVALID (bad request or validator name), ENOTFOUND (no such
// decision), *taskerr.ValidationFailed after a FAIL is recorded, ETRANSIENT.
func (s *Service) Validate(ctx context.Context, v ora.Validator, signalID, decisionID string) (ora.ValidatorResult, error) {
	if signalID == "" {
		return ora.ValidatorResult{}, ora.Invalid("signal_id", "required")
	}
	if decisionID == "" {
		return ora.ValidatorResult{}, ora.Invalid("decision_id", "required")
	}
	check, ok := map[ora.Validator]func(context.Context, act.Wave, settings) ([]string, error){
		ora.ValidatorTechnical: s.technical,
		ora.ValidatorSafety:    s.safety,
		ora.ValidatorIntent:    s.intent,
		ora.ValidatorWitness:   s.witness,
	}[v]
	if !ok {
		return ora.ValidatorResult{}, ora.Invalid("validator", "%q is not technical, safety, intent or witness", v)
	}
	w, err := act.LoadWave(ctx, s.ledger, signalID, decisionID)
	if err != nil {
		return ora.ValidatorResult{}, fmt.Errorf("validate %s: %w", v, err)
	}
	set, err := s.settings(ctx, v, w.Decision.MotorVersion)
	if err != nil {
		return ora.ValidatorResult{}, fmt.Errorf("validate %s: %w", v, err)
	}
	problems, err := check(ctx, w, set)
	if err != nil {
		return ora.ValidatorResult{}, fmt.Errorf("validate %s: %w", v, err)
	}
	r := ora.ValidatorResult{
		Validator:   v,
		Verdict:     ora.Pass,
		Attribution: &ora.Attribution{AuthorType: v.ResponsibleAuthor(), ResponsibleFor: responsibleFor[v]},
		DecisionID:  decisionID,
		Timestamp:   s.o.Now().UTC(),
		Summary:     passSummary(v, w) + set.notes(s.o, v, w.Decision.Tier),
	}
	if len(problems) > 0 {
		r.Verdict, r.Summary = ora.Fail, strings.Join(problems, "; ")
	}
	r, err = s.record(ctx, signalID, r)
	if err != nil {
		return ora.ValidatorResult{}, err
	}
	if r.Verdict == ora.Fail {
		return r, &taskerr.ValidationFailed{Message: fmt.Sprintf("%s validator: FAIL (%s responsible): %s", v, v.ResponsibleAuthor(), r.Summary)}
	}
	return r, nil
}

// settings are the validator settings a run uses and the motor version
// they come from ("" for the defaults).
type settings struct {
	motor.ValidatorSettings
	version string
}

// settings reads the validator settings of the motor version the decision
// ran under (a canary's candidate, or the current version) for the
// validators that have some (safety, intent); the others, and a service
// without a Motor, use the defaults.
func (s *Service) settings(ctx context.Context, v ora.Validator, motorVersion string) (settings, error) {
	if s.o.Motor == nil || (v != ora.ValidatorSafety && v != ora.ValidatorIntent) {
		return settings{}, nil
	}
	vs, version, err := s.o.Motor.ValidatorSettingsOf(ctx, motorVersion)
	if err != nil {
		return settings{}, fmt.Errorf("the motor's validator settings: %w", err)
	}
	return settings{ValidatorSettings: vs, version: version}, nil
}

// notes says, in a PASS summary, which check the code would have made that
// the motor's settings turned off, so a result never reads as checked by a
// model or a guardrail that was not asked.
func (set settings) notes(o Options, v ora.Validator, tier int) string {
	var off []string
	switch v {
	case ora.ValidatorSafety:
		if o.Guardrail != nil && tier >= 2 && (!set.Safety.GuardrailOn() || tier < set.Safety.GuardrailFrom()) {
			off = append(off, "the guardrail")
		}
	case ora.ValidatorIntent:
		if o.IntentJudge != nil && tier >= 3 && !set.Intent.JudgeOn() {
			off = append(off, "the intent judge")
		}
	}
	if len(off) == 0 {
		return ""
	}
	return fmt.Sprintf("; %s not asked: off for tier %d under motor %s's validator settings", strings.Join(off, " and "), tier, set.version)
}

// Technical runs the technical validator; see Validate.
func (s *Service) Technical(ctx context.Context, signalID, decisionID string) (ora.ValidatorResult, error) {
	return s.Validate(ctx, ora.ValidatorTechnical, signalID, decisionID)
}

// Safety runs the safety validator; see Validate.
func (s *Service) Safety(ctx context.Context, signalID, decisionID string) (ora.ValidatorResult, error) {
	return s.Validate(ctx, ora.ValidatorSafety, signalID, decisionID)
}

// Intent runs the intent validator; see Validate.
func (s *Service) Intent(ctx context.Context, signalID, decisionID string) (ora.ValidatorResult, error) {
	return s.Validate(ctx, ora.ValidatorIntent, signalID, decisionID)
}

// Witness runs the witness; see Validate.
func (s *Service) Witness(ctx context.Context, signalID, decisionID string) (ora.ValidatorResult, error) {
	return s.Validate(ctx, ora.ValidatorWitness, signalID, decisionID)
}

func passSummary(v ora.Validator, w act.Wave) string {
	n := len(w.Decision.Plan())
	switch v {
	case ora.ValidatorTechnical:
		return fmt.Sprintf("%d of %d actions have success evidence with consistent receipts", n, n)
	case ora.ValidatorSafety:
		return fmt.Sprintf("%d actions stayed within allowed_operations %v and touched no forbidden path", n, w.Decision.Scope.AllowedOperations)
	case ora.ValidatorIntent:
		return fmt.Sprintf("the %d executed actions equal the decision's plan", n)
	}
	return witnessSummary(w)
}

// record writes r once; a retry gets the result stored first.
func (s *Service) record(ctx context.Context, signalID string, r ora.ValidatorResult) (ora.ValidatorResult, error) {
	kind := ora.KindValidatorResult
	if r.Validator == ora.ValidatorWitness {
		kind = ora.KindWitnessResult
	}
	e, err := ora.NewEntry(signalID, kind, string(r.Validator), r)
	if err != nil {
		return ora.ValidatorResult{}, fmt.Errorf("validate %s: %w", r.Validator, err)
	}
	e.Meta = map[string]string{"decision_id": r.DecisionID, "verdict": string(r.Verdict), "responsible": string(r.Attribution.AuthorType)}
	if _, err := s.ledger.Append(ctx, e); err != nil {
		prev, ok := ora.Existing[ora.Entry](err)
		if !ok {
			return ora.ValidatorResult{}, fmt.Errorf("ledger: append %s %s: %w", kind, r.Validator, err)
		}
		var stored ora.ValidatorResult
		if err := json.Unmarshal(prev.Body, &stored); err != nil {
			return ora.ValidatorResult{}, ora.Errorf(ora.EINTERNAL, "validate %s: stored result does not decode: %v", r.Validator, err)
		}
		return stored, nil
	}
	return r, nil
}
