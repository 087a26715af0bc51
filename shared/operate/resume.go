package operate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Lifecycle states of a wave under the operator (seed 003 §9).
const (
	StateRunning    = "RUNNING"
	StatePaused     = "PAUSED"
	StatePatching   = "PATCHING"
	StateValidating = "VALIDATING"
	StateResuming   = "RESUMING"
	StateSuccess    = "SUCCESS"
	StateFailed     = "FAILED"
)

// waveView is what the operator reads of a wave's ledger entries.
type waveView struct {
	source       string
	payload      json.RawMessage // the signal's payload
	packetDigest string
	ops          map[string]Record              // operator decision id -> record
	pauses       map[string]pauseBody           // operator decision id -> latest pause
	steps        map[string]map[string]stepBody // operator decision id -> lifecycle step -> body
	verdict      bool
	outcome      string // the final verdict's outcome
}

// stepBody records one lifecycle step of a resume.
type stepBody struct {
	State        string   `json:"state"`
	Target       string   `json:"target,omitempty"` // motor | app | motor,app
	PatchRef     string   `json:"patch_ref,omitempty"`
	Checks       []string `json:"checks,omitempty"`
	MotorVersion string   `json:"motor_version,omitempty"`
	// Patch is the app-level patch PATCHING applied (with its digest).
	Patch *AppPatch `json:"patch,omitempty"`
	// Result says what the step did ("promoted 1.1.0 through the gate",
	// "applied mapping patch 3f2a...", "unchanged").
	Result string    `json:"result,omitempty"`
	By     string    `json:"by,omitempty"`
	At     time.Time `json:"at"`
	// Steps, on the resumed entry, lists every step of the resume with its
	// result, in order: the resume's decision record.
	Steps []StepResult `json:"steps,omitempty"`
}

func readWave(entries []ora.Entry) waveView {
	w := waveView{ops: map[string]Record{}, pauses: map[string]pauseBody{}, steps: map[string]map[string]stepBody{}}
	for _, e := range entries {
		switch e.Kind {
		case ora.KindSignalReceived:
			var sig ora.NormalizedSignal
			if json.Unmarshal(e.Body, &sig) == nil {
				w.payload = sig.Payload
				w.source = sig.Source.Name
				if w.source == "" {
					w.source = string(sig.Source.Type)
				}
			}
		case ora.KindOrientationPacket:
			w.packetDigest = e.Digest
		case ora.KindFinalVerdict:
			w.verdict = true
			var v Verdict
			if json.Unmarshal(e.Body, &v) == nil {
				w.outcome = v.Outcome
			}
		case ora.KindOperatorDecision:
			q := e.Qualifier
			switch {
			case strings.HasPrefix(q, qOp):
				var r Record
				if json.Unmarshal(e.Body, &r) == nil {
					w.ops[strings.TrimPrefix(q, qOp)] = r
				}
			case strings.HasPrefix(q, qPause):
				id, _, _ := strings.Cut(strings.TrimPrefix(q, qPause), "/")
				var p pauseBody
				if json.Unmarshal(e.Body, &p) == nil && !p.At.Before(w.pauses[id].At) {
					w.pauses[id] = p
				}
			default:
				for _, pre := range []string{qPatching, qValidate, qResuming, qResumed} {
					if strings.HasPrefix(q, pre) {
						id := strings.TrimPrefix(q, pre)
						var b stepBody
						if json.Unmarshal(e.Body, &b) == nil {
							if w.steps[id] == nil {
								w.steps[id] = map[string]stepBody{}
							}
							w.steps[id][pre] = b
						}
					}
				}
			}
		}
	}
	return w
}

// patchInForce returns the app patch of the wave's latest resume that
// supplied one, or nil.
func (w waveView) patchInForce() *AppPatch {
	var p *AppPatch
	var at time.Time
	for _, steps := range w.steps {
		if b := steps[qResumed]; b.Patch != nil && !b.At.Before(at) {
			p, at = b.Patch, b.At
		}
	}
	return p
}

// latest returns the wave's most recent operator decision.
func (w waveView) latest() (Record, bool) {
	var last Record
	found := false
	for _, r := range w.ops {
		if !found || r.At.After(last.At) || (r.At.Equal(last.At) && r.DecisionID > last.DecisionID) {
			last, found = r, true
		}
	}
	return last, found
}

// OperatorState is the operator's view of a wave, shown by GET /waves/{id}.
type OperatorState struct {
	State          string `json:"state"`
	IncidentID     string `json:"incident_id,omitempty"`
	Classification string `json:"classification,omitempty"`
	Taxonomy       string `json:"taxonomy,omitempty"`
	Stage          string `json:"stage,omitempty"`
	Target         string `json:"target,omitempty"` // what PATCHING patches: motor | app | motor,app
}

// WaveState returns the wave's lifecycle state given its execution's status
// (RUNNING, SUCCEEDED, FAILED, ...). Errors: ETRANSIENT.
func (s *Service) WaveState(ctx context.Context, waveID, execStatus string) (OperatorState, error) {
	// Only the operator's records decide the state: reading the wave's facts
	// and packet too made every GET /waves/{id} cost a wave's worth of reads.
	entries, err := ora.EntriesOfKinds(ctx, s.ledger, waveID, ora.KindOperatorDecision)
	if err != nil && ora.ErrorCode(err) != ora.ENOTFOUND {
		return OperatorState{}, fmt.Errorf("operate: read wave %s: %w", waveID, err)
	}
	w := readWave(entries)
	st := OperatorState{State: StateRunning}
	if rec, ok := w.latest(); ok {
		st.IncidentID, st.Classification, st.Taxonomy, st.Stage = rec.IncidentID, rec.Classification, rec.Taxonomy, rec.Stage
		steps := w.steps[rec.DecisionID]
		switch {
		case steps[qResumed].State != "":
			st.State = StateRunning
		case steps[qResuming].State != "":
			st.State = StateResuming
		case steps[qValidate].State != "":
			st.State = StateValidating
		case steps[qPatching].State != "":
			st.State, st.Target = StatePatching, steps[qPatching].Target
		case rec.Action == actPause:
			st.State = StatePaused
		case rec.Action == actRetry && s.o.Now().Before(rec.At.Add(time.Duration(rec.ActionPlan[0].Seconds)*time.Second)):
			st.State = StateResuming // backing off
		case rec.Action == actRetry:
			st.State = StateRunning
		case rec.Action == actFail:
			st.State = StateFailed
		}
	}
	switch execStatus {
	case "SUCCEEDED":
		st.State = StateSuccess
	case "FAILED", "ABORTED", "TIMED_OUT":
		st.State = StateFailed
	}
	return st, nil
}

// Resumed is what Resume answers: where the wave resumed, under which motor
// version, and each step of the resume with its result.
type Resumed struct {
	WaveID             string       `json:"wave_id"`
	IncidentID         string       `json:"incident_id"`
	OperatorDecisionID string       `json:"operator_decision_id"`
	ResumeAt           string       `json:"resume_at"`
	MotorVersion       string       `json:"motor_version"`
	State              string       `json:"state"`
	Steps              []StepResult `json:"steps"`
}

// StepResult is one step of a resume and what it did.
type StepResult struct {
	Step   string `json:"step"`   // promote | apply_patch | validate | resume
	Target string `json:"target"` // motor | app | pipeline
	Ref    string `json:"ref,omitempty"`
	Result string `json:"result"`
}

// resumeOutput is what the paused task returns to the state machine; the
// wave keeps it as $.operation, so the stage that runs again sees the
// app patch it resumes with (app_patch).
type resumeOutput struct {
	Action             string    `json:"action"`
	ResumeAt           string    `json:"resume_at"`
	MotorVersion       string    `json:"motor_version"`
	AppVersion         string    `json:"app_version"`
	AppPatch           *AppPatch `json:"app_patch,omitempty"`
	IncidentID         string    `json:"incident_id"`
	OperatorDecisionID string    `json:"operator_decision_id"`
	Error              string    `json:"error"`
	Cause              string    `json:"cause"`
}

// ResumeRequest is what an operator supplies with a resume (ResumePolicy
// says which pieces each classification takes).
type ResumeRequest struct {
	// MotorVersion is the proposed motor version a motor or mixed incident
	// resumes under: it is promoted through the gate first (or is already
	// current, promoted since the failure).
	MotorVersion string `json:"motor_version,omitempty"`
	// Patch is the app-level fix an app or mixed incident resumes with.
	Patch *AppPatch `json:"patch,omitempty"`
	// AsIs retries the failed stage unchanged, whatever the classification:
	// the operator judged that nothing needs patching (a passing outage, a
	// drill). It takes no motor version and no patch.
	AsIs bool `json:"as_is,omitempty"`
	// Reason is recorded with a promotion the resume makes.
	Reason string `json:"reason,omitempty"`
	// By is who resumes (the API's principal).
	By string `json:"-"`
}

// The kinds of app patch.
const (
	PatchInput   = "input"   // a new input for the failed stage: a corrected field or value
	PatchMapping = "mapping" // a source's mapping from its events to signals: refused (PatchPolicy)
	PatchSpec    = "spec"    // an action's or a source's spec: refused (PatchPolicy)
)

// MaxPatchBytes bounds an app patch's value: it travels in the wave's state.
const MaxPatchBytes = 32 << 10

// AppPatch is an app-level fix supplied with a resume: a new input, mapping
// or spec for Target (PatchPolicy says which a resume accepts: an input
// patch, before the wave's decision). The resume validates it, records it on
// the wave with its sha256 (Digest) and hands it to the stage that runs
// again, in the wave's state as operation.app_patch.
type AppPatch struct {
	Kind   string          `json:"kind"`   // input | mapping | spec
	Target string          `json:"target"` // what it patches: a field, a source, an action
	Value  json.RawMessage `json:"value"`  // the new input, mapping or spec
	Digest string          `json:"digest,omitempty"`
}

// Check validates the patch and returns it with its digest. A mapping or
// spec is a JSON object; an input any JSON value. Errors: EINVALID naming
// the field.
func (p AppPatch) Check() (AppPatch, error) {
	switch p.Kind {
	case PatchInput, PatchMapping, PatchSpec:
	case "":
		return AppPatch{}, ora.Invalid("patch.kind", "required: input, mapping or spec")
	default:
		return AppPatch{}, ora.Invalid("patch.kind", "%q is not input, mapping or spec", p.Kind)
	}
	if strings.TrimSpace(p.Target) == "" {
		return AppPatch{}, ora.Invalid("patch.target", "required: name what the %s patch replaces", p.Kind)
	}
	v := strings.TrimSpace(string(p.Value))
	switch {
	case v == "" || v == "null":
		return AppPatch{}, ora.Invalid("patch.value", "required: the new %s", p.Kind)
	case len(v) > MaxPatchBytes:
		return AppPatch{}, ora.Invalid("patch.value", "%d bytes, more than %d", len(v), MaxPatchBytes)
	case !json.Valid([]byte(v)):
		return AppPatch{}, ora.Invalid("patch.value", "is not JSON")
	case p.Kind != PatchInput && v[0] != '{':
		return AppPatch{}, ora.Invalid("patch.value", "a %s patch is a JSON object", p.Kind)
	}
	p.Value = json.RawMessage(v)
	p.Digest = ora.AppPatch(p).Sum()
	return p, nil
}

// beforeDecision are the stages a wave resumes at before its decision is
// made: an input patch takes effect when the wave resumes at one of them.
var beforeDecision = []string{stagePlan, stageFetch, stageCompile, stageReason}

// Stages of the wave an input patch reaches.
const (
	stageCompile = "Compile orientation packet"
	stageReason  = "Reason"
)

// PatchRule is one row of PatchPolicy: what a resume does with an app patch
// of Kind when the wave resumes before its decision (at Plan observations,
// Fetch observations, Compile orientation packet or Reason) or after it.
// Applied says which stages apply the patch and how; Refusal, when set, is
// the EINVALID (patch.kind) a resume answers, with nothing written.
type PatchRule struct {
	Kind           string
	BeforeDecision bool
	Applied        string
	Refusal        string
}

// The refusals of PatchPolicy.
const (
	refuseInputAfter = "an input patch changes the signal the wave decides on, and the wave resumes after its decision, which is made: an input patch applies when the wave resumes at Plan observations, Fetch observations, Compile orientation packet or Reason"
	refuseMapping    = "no stage applies a mapping patch: ora normalizes a source's events with its provider's built-in normalizer, which has no mapping to replace, and the wave's signal entry is written once; correct this wave's field with an input patch"
	refuseSpec       = "no stage applies a spec patch: an action that failed at Act failed its decision, which never runs again; correct the action's configuration and send the signal again"
)

// PatchPolicy is what a resume does with each kind of app patch, before and
// after the wave's decision; the operator's guide prints the same table. No
// patch is accepted that no stage applies.
var PatchPolicy = []PatchRule{
	{PatchInput, true, "Plan and Fetch read no field of the payload; Compile orientation packet records the patch and the patched payload's sha256 in the packet (when it compiles it); Reason decides on the signal with the field replaced, and the decision records the patch", ""},
	{PatchInput, false, "", refuseInputAfter},
	{PatchMapping, true, "", refuseMapping},
	{PatchMapping, false, "", refuseMapping},
	{PatchSpec, true, "", refuseSpec},
	{PatchSpec, false, "", refuseSpec},
}

// patchRule returns the row of PatchPolicy for kind at stage.
func patchRule(kind, stage string) PatchRule {
	before := slices.Contains(beforeDecision, stage)
	for _, r := range PatchPolicy {
		if r.Kind == kind && r.BeforeDecision == before {
			return r
		}
	}
	return PatchRule{Kind: kind, BeforeDecision: before, Refusal: fmt.Sprintf("%q is not input, mapping or spec", kind)}
}

// appliesAt checks, by PatchPolicy, that a checked patch takes effect when
// the wave resumes at stage, given the signal's payload: an input patch
// names a field the payload has and resumes before the decision; a mapping
// or spec patch is refused. Errors: EINVALID naming the field.
func (p AppPatch) appliesAt(stage string, payload json.RawMessage) error {
	if r := patchRule(p.Kind, stage); r.Refusal != "" {
		return ora.Invalid("patch.kind", "the wave resumes at %s: %s", stage, r.Refusal)
	}
	if p.Kind == PatchInput {
		if _, err := ora.AppPatch(p).ApplyInput(payload); err != nil {
			return err
		}
	}
	return nil
}

// ResumeRule is one row of ResumePolicy: a classification and the pieces a
// resume supplies, and what the resume does with them (Plan) or why it is
// refused (Refusal, an EINVALID).
type ResumeRule struct {
	Classification string // app | motor | mixed
	Version        bool   // a motor version is supplied (or one was promoted since the failure)
	Patch          bool   // an app patch is supplied
	Plan           string // the steps, in words; "" when refused
	Refusal        string
}

// ResumePolicy is what a resume does for each classification and the pieces
// supplied; the operator's guide prints the same table. Two cases come
// before it: as_is (no version, no patch) retries any wave unchanged, and
// so does a transient failure that exhausted its automatic retries. A motor
// or mixed incident resumed without a version, after a newer motor version
// was promoted, resumes under that version (the Version column).
var ResumePolicy = []ResumeRule{
	{ClassApp, false, false, "retry the failed stage under the motor version it failed under, with the app as deployed", ""},
	{ClassApp, false, true, "validate the patch, apply it, retry the failed stage with it under the motor version it failed under", ""},
	{ClassApp, true, false, "", "an app incident retries under the motor version it failed under: leave the motor version out"},
	{ClassApp, true, true, "", "an app incident retries under the motor version it failed under: leave the motor version out"},
	{ClassMotor, false, false, "", "a motor incident resumes under a new motor version: propose one and give its version (or retry as is)"},
	{ClassMotor, false, true, "", "a patch for a motor incident needs a motor version: give the proposed version, or reclassify the incident as app or mixed"},
	{ClassMotor, true, false, "promote the version through the gate, resume under it", ""},
	{ClassMotor, true, true, "", "a motor incident takes no app patch: reclassify it as MIXED-DRIFT to patch the motor, then the app"},
	{ClassMixed, false, false, "", "a mixed incident resumes under a new motor version, then the app patch: give the proposed version"},
	{ClassMixed, false, true, "", "a mixed incident resumes under a new motor version, then the app patch: give the proposed version"},
	{ClassMixed, true, false, "promote the version through the gate, resume under it with the app as deployed", ""},
	{ClassMixed, true, true, "promote the version through the gate, then validate and apply the patch, resume under it", ""},
}

// resumeRule returns the row of ResumePolicy for class and the pieces.
func resumeRule(class string, version, patch bool) ResumeRule {
	for _, r := range ResumePolicy {
		if r.Classification == class && r.Version == version && r.Patch == patch {
			return r
		}
	}
	return ResumeRule{Classification: class, Refusal: fmt.Sprintf("no resume policy for classification %q", class)}
}

// Resume resumes a paused wave at its failed stage by the classified plan
// (ResumePolicy): for an app incident, with the app patch supplied (if any)
// under the same motor version; for a motor incident, under the proposed
// motor version, promoted through the gate first; for a mixed one, the
// motor and then the app patch. PATCHING (the promotion, the patch recorded),
// VALIDATING (the gate's verdict, the patch's digest, the token, the motor
// version) and RESUMING (the task token handed back with the stage to resume
// at and the patch) are each recorded, and the resumed entry lists every
// step with its result. Bad input is refused before anything is written:
// a refused gate names the failing cases and leaves the wave paused. Safe to
// call again after a crash half-way. Errors: EINVALID (a piece the policy
// refuses, a patch that does not validate), ENOTFOUND (no such wave, no such
// motor version), ECONFLICT (not paused, already resumed, a gate that failed,
// the wave no longer waiting), ETRANSIENT.
func (s *Service) Resume(ctx context.Context, waveID string, req ResumeRequest) (Resumed, error) {
	return s.resume(ctx, waveID, req, "")
}

// resume resumes the paused wave at stage ("" : the failed stage).
func (s *Service) resume(ctx context.Context, waveID string, req ResumeRequest, stage string) (Resumed, error) {
	if waveID == "" {
		return Resumed{}, ora.Invalid("wave_id", "required")
	}
	if s.o.Resumer == nil {
		return Resumed{}, ora.Errorf(ora.EINTERNAL, "operate: no resumer configured")
	}
	entries, err := s.ledger.Entries(ctx, waveID)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return Resumed{}, ora.Errorf(ora.ENOTFOUND, "no wave %q", waveID)
	}
	if err != nil {
		return Resumed{}, fmt.Errorf("operate: read wave %s: %w", waveID, err)
	}
	w := readWave(entries)
	rec, ok := w.latest()
	if !ok || rec.Action != actPause {
		return Resumed{}, ora.Conflict(nil, "wave %s is not paused", waveID)
	}
	if b, done := w.steps[rec.DecisionID][qResumed]; done {
		return Resumed{}, ora.Conflict(nil, "wave %s was already resumed at %s (by %s)", waveID, b.At.Format(time.RFC3339), b.By)
	}
	if stage == "" && rec.Failure.Error == errOutcomeUnknown {
		return Resumed{}, ora.Conflict(nil, "wave %s paused on an action whose outcome is unknown: say whether it ran with ora resolve %s --executed|--not-executed", waveID, waveID)
	}
	if stage == "" {
		stage = rec.Stage
	}
	pause, ok := w.pauses[rec.DecisionID]
	if !ok {
		return Resumed{}, ora.Conflict(nil, "wave %s is pausing: its task token is not recorded yet, try again", waveID)
	}
	by := req.By
	if by == "" {
		by = "operator"
	}
	// Everything is checked before anything is written.
	var patch *AppPatch
	if req.Patch != nil {
		p, err := req.Patch.Check()
		if err != nil {
			return Resumed{}, err
		}
		if s.o.CheckPatch != nil {
			if err := s.o.CheckPatch(ctx, p); err != nil {
				return Resumed{}, fmt.Errorf("operate: patch for %s: %w", waveID, err)
			}
		}
		if err := p.appliesAt(stage, w.payload); err != nil {
			return Resumed{}, fmt.Errorf("operate: patch for %s: %w", waveID, err)
		}
		patch = &p
	}
	class, tax := rec.Classification, rec.Taxonomy
	switch inc, err := s.Incident(ctx, rec.IncidentID); {
	case err == nil && inc.Override != nil:
		class, tax = inc.Override.Classification, inc.Override.Taxonomy // a person corrected the classifier
	case err != nil && ora.ErrorCode(err) != ora.ENOTFOUND:
		return Resumed{}, fmt.Errorf("operate: resume wave %s: %w", waveID, err)
	}
	cur, err := s.o.Motor(ctx)
	if err != nil {
		return Resumed{}, fmt.Errorf("operate: motor version: %w", err)
	}
	asIs := req.AsIs || (req.MotorVersion == "" && patch == nil && rec.Rule == ruleTransient)
	if req.AsIs && (req.MotorVersion != "" || patch != nil) {
		return Resumed{}, ora.Invalid("as_is", "a resume as is takes no motor version and no patch")
	}
	version := req.MotorVersion
	if version == "" && !asIs && class != ClassApp && cur.Version != rec.MotorVersion {
		version = cur.Version // promoted since the failure: the motor fix
	}
	if !asIs {
		if r := resumeRule(class, version != "", patch != nil); r.Refusal != "" {
			field := "motor_version"
			if patch != nil && class == ClassMotor {
				field = "patch"
			}
			return Resumed{}, ora.Invalid(field, "incident %s is classified %s (%s): %s", rec.IncidentID, class, tax, r.Refusal)
		}
	}
	if version != "" && version == rec.MotorVersion {
		return Resumed{}, ora.Invalid("motor_version", "motor %s is the version the wave failed under: propose a new version with the fix", version)
	}
	if class == ClassApp && !asIs && cur.Version != rec.MotorVersion {
		return Resumed{}, ora.Conflict(nil, "wave %s failed under motor %s and motor %s is current: an app fix retries under the same motor version; roll the motor back, or resume as is", waveID, rec.MotorVersion, cur.Version)
	}
	var jobsCheck string
	if stage == stageFetch && s.o.JobsStaged != nil {
		staged, err := s.o.JobsStaged(ctx, waveID)
		if err != nil {
			return Resumed{}, fmt.Errorf("operate: resume wave %s: are its jobs staged: %w", waveID, err)
		}
		jobsCheck = "jobs:staged"
		if !staged {
			// The jobs expired while the wave was paused: Plan writes
			// them again under the pinned profile version first.
			stage, jobsCheck = stagePlan, "jobs:expired, re-planned under the pinned profile"
		}
	}

	// PATCHING: the motor first (promoted through the gate), then the app.
	var steps []StepResult
	target, refs := "", []string{}
	if version != "" {
		result := fmt.Sprintf("motor %s is current (promoted since the failure under %s)", version, rec.MotorVersion)
		if version != cur.Version {
			if s.o.Promote == nil {
				return Resumed{}, ora.Conflict(nil, "motor %s is not the current version (%s): promote it first", version, cur.Version)
			}
			reason := req.Reason
			if reason == "" {
				reason = fmt.Sprintf("resume of wave %s (incident %s)", waveID, rec.IncidentID)
			}
			if err := s.o.Promote(ctx, version, reason, by); err != nil {
				return Resumed{}, fmt.Errorf("resume of wave %s refused, it stays paused: %w", waveID, err)
			}
			if cur, err = s.o.Motor(ctx); err != nil {
				return Resumed{}, fmt.Errorf("operate: motor version: %w", err)
			}
			if cur.Version != version {
				return Resumed{}, ora.Conflict(nil, "motor %s was promoted but %s is current: the motor changed meanwhile, resume again", version, cur.Version)
			}
			result = fmt.Sprintf("promoted motor %s through the gate (was %s)", version, rec.MotorVersion)
		}
		steps = append(steps, StepResult{Step: "promote", Target: scopeMotor, Ref: "motor@" + version, Result: result})
		target, refs = scopeMotor, append(refs, "motor@"+version)
	}
	appRef := "app@" + s.o.AppVersion
	switch {
	case patch != nil:
		appRef += "+patch:" + patch.Digest[:12]
		effect := "Reason reads the signal with it"
		if stage != stageReason {
			effect = "Compile records it in the packet, Reason reads the signal with it"
		}
		steps = append(steps, StepResult{Step: "apply_patch", Target: scopeApp, Ref: appRef,
			Result: fmt.Sprintf("%s patch of %s recorded (sha256 %s), handed to %s: %s", patch.Kind, patch.Target, patch.Digest, stage, effect)})
	case asIs:
		steps = append(steps, StepResult{Step: "apply_patch", Target: "pipeline", Ref: appRef, Result: "nothing patched: retried as is"})
	case class != ClassMotor:
		steps = append(steps, StepResult{Step: "apply_patch", Target: scopeApp, Ref: appRef, Result: "no patch: the app as deployed"})
	}
	if class != ClassMotor || patch != nil {
		target, refs = strings.Trim(target+","+scopeApp, ","), append(refs, appRef)
	}
	if asIs {
		target = "none"
	}
	now := func() time.Time { return s.o.Now().UTC() }
	patching := stepBody{State: StatePatching, Target: target, PatchRef: strings.Join(refs, ","), Patch: patch,
		MotorVersion: cur.Version, Result: resultsOf(steps), By: by, At: now()}
	if err := s.appendPatching(ctx, waveID, rec.DecisionID, patching); err != nil {
		return Resumed{}, err
	}

	// VALIDATING: what must hold for the stage to run again.
	checks := []string{"token:recorded", "motor:current=" + cur.Version, "incident:" + rec.IncidentID}
	if jobsCheck != "" {
		checks = append(checks, jobsCheck)
	}
	switch {
	case version != "":
		checks = append(checks, "motor:changed "+rec.MotorVersion+"->"+cur.Version, "motor:gate passed")
	case cur.Version != rec.MotorVersion:
		checks = append(checks, "motor:changed "+rec.MotorVersion+"->"+cur.Version+" since the failure")
	default:
		checks = append(checks, "motor:same "+cur.Version)
	}
	if patch != nil {
		checks = append(checks, "patch:valid "+patch.Kind+" sha256="+patch.Digest)
	}
	steps = append(steps, StepResult{Step: "validate", Target: "pipeline", Result: strings.Join(checks, "; ")})
	if err := s.append(ctx, waveID, qValidate+rec.DecisionID, stepBody{State: StateValidating, Checks: checks, MotorVersion: cur.Version, Result: "passed: " + strings.Join(checks, "; "), By: by, At: now()}); err != nil {
		return Resumed{}, err
	}
	if err := s.append(ctx, waveID, qResuming+rec.DecisionID, stepBody{State: StateResuming, MotorVersion: cur.Version, By: by, At: now()}); err != nil {
		return Resumed{}, err
	}
	handed := patch
	if handed == nil {
		handed = w.patchInForce() // the wave keeps running under an earlier resume's patch
	}
	out, err := json.Marshal(resumeOutput{
		Action: "resume", ResumeAt: stage, MotorVersion: cur.Version, AppVersion: s.o.AppVersion, AppPatch: handed,
		IncidentID: rec.IncidentID, OperatorDecisionID: rec.DecisionID,
		Error: rec.Failure.Error, Cause: message(rec.Failure.Cause),
	})
	if err != nil {
		return Resumed{}, fmt.Errorf("operate: resume output: %w", err)
	}
	if err := s.o.Resumer.SendTaskSuccess(ctx, pause.Token, out); err != nil {
		if c := ora.ErrorCode(err); c == ora.ECONFLICT || c == ora.ENOTFOUND { // Step Functions: TaskTimedOut, TaskDoesNotExist
			return Resumed{}, ora.Conflict(nil, "wave %s is no longer waiting to resume: %v", waveID, err)
		}
		return Resumed{}, fmt.Errorf("operate: resume wave %s: %w", waveID, err)
	}
	at := now()
	steps = append(steps, StepResult{Step: "resume", Target: "pipeline", Ref: stage, Result: fmt.Sprintf("resumed at %s under motor %s", stage, cur.Version)})
	if err := s.append(ctx, waveID, qResumed+rec.DecisionID, stepBody{State: StateRunning, MotorVersion: cur.Version, Patch: patch, By: by, At: at, Steps: steps}); err != nil {
		return Resumed{}, err
	}
	fix := "as-is"
	switch {
	case version != "" && patch != nil:
		fix = "motor+app-patch"
	case version != "":
		fix = "motor"
	case patch != nil:
		fix = "app-patch"
	}
	rb := resumedBody{WaveID: waveID, At: at, MotorVersion: cur.Version, By: by, Fix: fix}
	if patch != nil {
		rb.PatchKind, rb.PatchDigest = patch.Kind, patch.Digest
	}
	if err := s.append(ctx, rec.IncidentID, qResumed+rec.DecisionID, rb); err != nil {
		return Resumed{}, err
	}
	s.o.Metrics.Add(MetricResumes, 1, "motor_version", rec.MotorVersion)
	s.o.Metrics.Observe(MetricTimeToResume, at.Sub(rec.At).Seconds(), "motor_version", rec.MotorVersion)
	if version != "" {
		// A motor fix: the incident is closed by the version it resumed under.
		if err := s.append(ctx, rec.IncidentID, qClosed+cur.Version, Fix{MotorVersion: cur.Version, WaveID: waveID, At: at}); err != nil {
			return Resumed{}, err
		}
	}
	return Resumed{WaveID: waveID, IncidentID: rec.IncidentID, OperatorDecisionID: rec.DecisionID, ResumeAt: stage, MotorVersion: cur.Version, State: StateRunning, Steps: steps}, nil
}

// appendPatching writes the PATCHING step once: a retry after a crash with
// the same patch finds it; one with another patch is refused.
func (s *Service) appendPatching(ctx context.Context, waveID, opID string, b stepBody) error {
	e, err := ora.NewEntry(waveID, ora.KindOperatorDecision, qPatching+opID, b)
	if err != nil {
		return fmt.Errorf("operate: %w", err)
	}
	e.CreatedAt = s.o.Now().UTC()
	if _, err := s.ledger.Append(ctx, e); err != nil {
		prev, ok := ora.Existing[ora.Entry](err)
		if !ok {
			return fmt.Errorf("ledger: append %s: %w", qPatching+opID, err)
		}
		var stored stepBody
		if json.Unmarshal(prev.Body, &stored) == nil && digestOf(stored.Patch) != digestOf(b.Patch) {
			return ora.Conflict(nil, "wave %s is being patched with another patch (%s): resume with the same one", waveID, digestOf(stored.Patch))
		}
	}
	return nil
}

func digestOf(p *AppPatch) string {
	if p == nil {
		return "none"
	}
	return p.Digest
}

func resultsOf(steps []StepResult) string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Result
	}
	return strings.Join(out, "; ")
}
