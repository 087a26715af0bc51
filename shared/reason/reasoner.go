package reason

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/ora"
)

// Reasoner is the Bedrock-backed ora.Reasoner.
type Reasoner struct {
	bridge *Bridge
}

var _ ora.Reasoner = (*Reasoner)(nil)

// NewReasoner returns a Reasoner calling conv with cfg. Errors: EINVALID when
// cfg is invalid.
func NewReasoner(conv Converser, cfg Config, opts ...func(*Options)) (*Reasoner, error) {
	b, err := NewBridge(conv, cfg, opts...)
	if err != nil {
		return nil, err
	}
	if b.opts.Kernel == nil {
		b.opts.Kernel = func(context.Context) (ora.KernelStateRef, error) {
			return ora.KernelStateRef{Mode: ModePipeline, RealitySummary: map[string]any{"reality_green": true}}, nil
		}
	}
	return &Reasoner{bridge: b}, nil
}

// ResultError is returned by Reason when the bridge's result is BLOCKED or
// FAILED: no decision is made, so nothing can execute. Its code (through
// Unwrap) is EFORBIDDEN for BLOCKED and EINTERNAL for FAILED; Outcome keeps
// the result, the diagnostics and the trace (usage and cost) for the logs.
type ResultError struct {
	Outcome Outcome
	err     *ora.Error
}

// Error names the program, the status and why.
func (e *ResultError) Error() string { return e.err.Error() }

// Unwrap returns the domain error carrying the code.
func (e *ResultError) Unwrap() error { return e.err }

func resultError(out Outcome) *ResultError {
	code := ora.EINTERNAL
	if out.Result.Status == ora.ReasoningBlocked {
		code = ora.EFORBIDDEN
	}
	msg := fmt.Sprintf("reason: %s %s: %s", out.Result.ProgramID, out.Result.Status, out.Result.Rationale)
	for _, d := range out.Result.Diagnostics {
		if d.Severity == "error" {
			msg += "; " + d.Code + ": " + d.Message
		}
	}
	return &ResultError{Outcome: out, err: &ora.Error{Code: code, Message: msg}}
}

// DecisionID returns the id of the decision the Reasoner makes for a signal:
// derived from the signal id, so a retried reason step proposes the same id.
func DecisionID(signalID string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("ora:model-decision:"+signalID)).String()
}

// programFor returns the program a wave runs: the one the first matching
// rule names (Options.Rules), else the configuration's route for the
// signal's type (Config.ProgramFor), SafeOPSDecision by default.
func (r *Reasoner) programFor(in ora.ReasonerInput) (ora.ProgramID, error) {
	if rs := r.bridge.opts.Rules; rs != nil {
		p, _, ok, err := rs.ProgramFor(in.Signal, in.Packet)
		if err != nil {
			return "", fmt.Errorf("reason: program of %s: %w", in.Signal.ID, err)
		}
		if ok {
			return p, nil
		}
	}
	return r.bridge.cfg.ProgramFor(in.Signal), nil
}

// Reason runs the signal's program (programFor: a rule's, else
// Config.ProgramFor's, SafeOPSDecision by default) over the signal and its
// packet. When the kernel is not green
// (Options.Kernel, see NewKernel) the wave is in diagnostic mode: only
// GuardFailureInterpreter runs, the chosen program is recorded BLOCKED in
// the trace, and the decision is none with the diagnosis (see explain, which
// also maps the other programs' payloads). A SafeOPSDecision maps its
// crystallized observation to a decision: the proposed action's type,
// parameters, tier, scope and author type; the observation's confidence,
// lowered for caution to at most 0.8 (execute with review) when the model said
// WARN or the result is DEGRADED, and below 0.5 (a human decides) when a
// later stage's answer was unusable (Outcome.HumanOnly); reasoning from the
// safety summary and the observation. The operator's policy (Config.Policy)
// then decides what the decision may do (see route): ABORT, none, or an
// action type the policy does not permit becomes a none decision; a
// permitted one runs at least at the policy's tier and carries at most its
// confidence. With an input guard (Options.Guard), a payload the guardrail
// intervenes on becomes a none decision for a human, without a model call.
// Model carries
// the trace (model, status, chain length, crystallization reason, usage, cost,
// envelope digest, motor version, degraded reasons).
//
// Malformed model output never becomes a decision: a BLOCKED or FAILED result
// returns a *ResultError (EFORBIDDEN or EINTERNAL). Errors: EINVALID (bad
// signal, or Bedrock rejected the request), ETRANSIENT (model throttled or down
// after retries and fallbacks; spend meter unavailable), EFORBIDDEN, EINTERNAL.
func (r *Reasoner) Reason(ctx context.Context, in ora.ReasonerInput) (ora.ReasonerDecision, error) {
	if err := in.Signal.Validate(); err != nil {
		return ora.ReasonerDecision{}, err
	}
	opts := r.bridge.opts
	kernel, err := r.kernel(ctx, in.Packet)
	if err != nil {
		return ora.ReasonerDecision{}, err
	}
	now := opts.Now()
	tools := append([]string{}, r.bridge.cfg.ToolsAllowed...)
	program, err := r.programFor(in)
	if err != nil {
		return ora.ReasonerDecision{}, err
	}
	goal := fmt.Sprintf("Decide what ora should do about %s signal %s, and whether it is safe to do it.", in.Signal.Source.Type, in.Signal.ID)
	if program != ora.ProgramSafeOPSDecision {
		goal = fmt.Sprintf("%s (about %s signal %s)", programs[program].goal, in.Signal.Source.Type, in.Signal.ID)
	}
	var blocked []ora.ProgramID
	if !kernel.Green() {
		if program != ora.ProgramGuardFailureInterpreter {
			blocked = append(blocked, program)
		}
		program = ora.ProgramGuardFailureInterpreter
		goal = fmt.Sprintf("ora's kernel is not green (%s), so the wave about %s signal %s runs in diagnostic mode and %v is blocked. Interpret why the kernel is not green and how to remedy it.",
			notGreen(kernel), in.Signal.Source.Type, in.Signal.ID, blocked)
	}
	env := ora.ReasoningEnvelope{
		EnvelopeID:     uuid.NewSHA1(uuid.NameSpaceURL, []byte("ora:envelope:"+in.Signal.ID)).String(),
		Timestamp:      now,
		ProgramID:      program,
		Goal:           goal,
		KernelStateRef: kernel,
		OAContext:      map[string]any{"signal_id": in.Signal.ID, "packet_id": in.Packet.ID, "packet_digest": in.Packet.Digest},
		ToolsAllowed:   tools,
	}
	perm := r.bridge.cfg.Policy.For(in.Signal, program, opts.Catalogue)
	env.OAContext["policy"] = perm
	if d, flagged, err := r.screen(ctx, in, now, perm); err != nil || flagged {
		return d, err
	}
	sig, packet := in.Signal, in.Packet
	out, err := r.bridge.Run(ctx, env, Input{Signal: &sig, Packet: &packet})
	if err != nil {
		return ora.ReasonerDecision{}, err
	}
	out.Trace.Program, out.Trace.Mode, out.Trace.BlockedPrograms = program, kernel.Mode, blocked
	if out.Result.Status != ora.ReasoningOK && out.Result.Status != ora.ReasoningDegraded {
		return ora.ReasonerDecision{}, resultError(out)
	}
	var d ora.ReasonerDecision
	switch p := out.Payload.(type) {
	case SafeOPSDecisionResult:
		if p.Action == nil {
			return ora.ReasonerDecision{}, ora.Errorf(ora.EINTERNAL, "reason: SafeOPSDecision payload without an action")
		}
		d = route(decide(in, p, out, now, out.Trace), p, perm, opts.Catalogue)
	default:
		if d, err = explain(in, p, out, now, kernel, blocked); err != nil {
			return ora.ReasonerDecision{}, err
		}
	}
	if err := d.Validate(); err != nil {
		return ora.ReasonerDecision{}, fmt.Errorf("reason: model decision: %w", err)
	}
	return d, nil
}

// kernel returns the kernel state of a wave's envelope: Options.Kernel's,
// with the motor version as its bootstrap and the orientation profile and
// packet id as its ssot_index (the digest stays out of the prompt). Errors:
// the kernel's.
func (r *Reasoner) kernel(ctx context.Context, packet ora.OrientationPacket) (ora.KernelStateRef, error) {
	k, err := r.bridge.opts.Kernel(ctx)
	if err != nil {
		return ora.KernelStateRef{}, fmt.Errorf("reason: kernel state: %w", err)
	}
	if k.Mode == "" {
		k.Mode = ModePipeline
	}
	k.Bootstrap = map[string]any{"motor_version": r.bridge.cfg.MotorVersion()}
	k.SSOTIndex = map[string]any{"profile_id": packet.ProfileID, "profile_version": packet.ProfileVersion, "packet_id": packet.ID}
	return k, nil
}

// explain maps the payload of a program other than SafeOPSDecision to its
// decision: none, since the actor runs none of what these programs produce,
// with the payload in words and why nothing runs. A GuardFailureInterpreter
// diagnosis or a phase verdict is taken at the model's confidence (at most
// ora.HighConfidence: reviewed); an OPS block is intent a human applies
// (HumanOnlyConfidence). In diagnostic mode the reasoning begins with why.
// Errors: EINTERNAL for an unknown payload.
func explain(in ora.ReasonerInput, payload any, out Outcome, now time.Time, kernel ora.KernelStateRef, blocked []ora.ProgramID) (ora.ReasonerDecision, error) {
	conf := math.Min(out.Final.Confidence, ora.HighConfidence)
	author := ora.AuthorAuditor
	var why string
	switch p := payload.(type) {
	case GuardFailureInterpreterResult:
		transient := "not transient: it needs the remedy"
		if p.IsTransient {
			transient = "transient: it may pass on its own"
		}
		why = fmt.Sprintf("Diagnosis: %s. Remediation: %s (%s). The actor runs no remediation itself: an operator applies it.", p.RootCause, p.RemediationPlan, transient)
	case OPSBlockGeneratorResult:
		why = fmt.Sprintf("OPS block of %d command(s) (complexity %d/10): %s. Risk: %s. The actor runs no commands: an operator applies the block.",
			len(p.OPSBlock), p.ComplexityScore, strings.Join(p.OPSBlock, "; "), p.RiskAnalysis)
		conf, author = math.Min(conf, HumanOnlyConfidence), ora.AuthorArchitect
	case PhaseTransitionValidatorResult:
		why = "Phase transition READY: every criterion is met; nothing to run."
		if p.TransitionStatus != "READY" {
			why = fmt.Sprintf("Phase transition NOT_READY: missing %s; nothing to run.", strings.Join(p.MissingCriteria, "; "))
		}
	default:
		return ora.ReasonerDecision{}, ora.Errorf(ora.EINTERNAL, "reason: payload is %T, not a program's", payload)
	}
	if kernel.Mode == ModeDiagnostic {
		why = fmt.Sprintf("Diagnostic mode: the kernel is not green (%s); %v BLOCKED, only %s ran. %s", notGreen(kernel), blocked, ora.ProgramGuardFailureInterpreter, why)
	}
	params, _ := json.Marshal(act.NoneParams{Reason: why})
	trace := out.Trace
	if len(out.Result.ToolCalls) > 0 {
		trace.ToolCalls = out.Result.ToolCalls
	}
	return ora.ReasonerDecision{
		ID: DecisionID(in.Signal.ID), SignalID: in.Signal.ID, ActionType: act.TypeNone, Parameters: params,
		Confidence: conf, Reasoning: why + "\n\n" + out.Final.Content, AuthorType: author,
		Scope: ora.Scope{AllowedOperations: []string{act.TypeNone}}, Tier: 1, Timestamp: now.UTC(),
		PacketDigest: in.Packet.Digest, Model: &trace,
	}, nil
}

// screenedKey marks in a context the signal ids the input guard already
// passed (a batch screens its signals once).
type screenedKey struct{}

// screen applies the input guard, when there is one, to the signal's
// payload. A payload the guardrail intervenes on never reaches a model: the
// decision is none, at a confidence a human must approve (approving it
// runs nothing). Errors: the guard's (ETRANSIENT, ...).
func (r *Reasoner) screen(ctx context.Context, in ora.ReasonerInput, now time.Time, perm Permission) (ora.ReasonerDecision, bool, error) {
	g := r.bridge.opts.Guard
	if clean, _ := ctx.Value(screenedKey{}).(map[string]bool); g == nil || clean[in.Signal.ID] {
		return ora.ReasonerDecision{}, false, nil
	}
	v, err := g.Check(ctx, "INPUT", string(in.Signal.Payload))
	if err != nil {
		return ora.ReasonerDecision{}, false, fmt.Errorf("reason: input guardrail: %w", err)
	}
	if !v.Intervened {
		return ora.ReasonerDecision{}, false, nil
	}
	why := fmt.Sprintf("The input guardrail intervened on the signal's payload (%s%s): no model saw it and nothing is done; a human should look at the signal.",
		strings.Join(v.Policies, ", "), map[bool]string{true: "; " + v.Reason, false: ""}[v.Reason != ""])
	params, _ := json.Marshal(act.NoneParams{Reason: why})
	trace := ora.ModelTrace{ModelID: "guardrail", Status: ora.ReasoningBlocked, MotorVersion: r.bridge.cfg.MotorVersion()}
	d := ora.ReasonerDecision{
		ID: DecisionID(in.Signal.ID), SignalID: in.Signal.ID, ActionType: act.TypeNone, Parameters: params,
		Confidence: HumanOnlyConfidence, Reasoning: why + fmt.Sprintf(" (policy rule %q)", perm.Rule), AuthorType: ora.AuthorAuditor,
		Scope: ora.Scope{AllowedOperations: []string{act.TypeNone}}, Tier: 1, Timestamp: now.UTC(), PacketDigest: in.Packet.Digest, Model: &trace,
	}
	return d, true, d.Validate()
}

// decide maps a SafeOPSDecision payload for in's signal to its decision:
// the first action is its action_type, every action (when there are
// follow-ups) its Actions, its tier the highest the model gave an action.
func decide(in ora.ReasonerInput, p SafeOPSDecisionResult, out Outcome, now time.Time, trace ora.ModelTrace) ora.ReasonerDecision {
	conf := out.Final.Confidence
	switch p.AllowedAction {
	case "WARN":
		conf = math.Min(conf, ora.HighConfidence)
	}
	if out.Result.Status == ora.ReasoningDegraded {
		conf = math.Min(conf, ora.HighConfidence)
	}
	if out.HumanOnly {
		conf = math.Min(conf, HumanOnlyConfidence)
	}
	a := p.Action
	tier := 0
	for _, x := range p.proposals() {
		tier = max(tier, x.Tier)
	}
	if len(out.Result.ToolCalls) > 0 {
		trace.ToolCalls = out.Result.ToolCalls
	}
	return ora.ReasonerDecision{
		ID:           DecisionID(in.Signal.ID),
		SignalID:     in.Signal.ID,
		ActionType:   a.Type,
		Parameters:   a.Parameters,
		Actions:      p.plan(),
		Confidence:   conf,
		Reasoning:    fmt.Sprintf("%s: %s\n\n%s", p.AllowedAction, p.SafetyCheckSummary, out.Final.Content),
		AuthorType:   a.AuthorType,
		Scope:        ora.Scope{AllowedOperations: a.AllowedOperations, ForbiddenPaths: a.ForbiddenPaths},
		Tier:         tier,
		Timestamp:    now.UTC(),
		PacketDigest: in.Packet.Digest,
		Model:        &trace,
	}
}
