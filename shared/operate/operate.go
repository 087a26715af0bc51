// Package operate is the operator of seed 003. Every stage of a wave catches
// its failures into Operate, which turns the failure into a structured event
// (§8.1), classifies it with the taxonomy of §10 and the heuristics of §11
// (Policy), files it under an incident deduplicated by fingerprint (class,
// stage, error, motor version), writes the operator decision record (§8.2)
// and answers what the wave does next: retry a transient failure after a
// backoff, pause for a patch, or fail. A paused wave waits on a task token
// (Pause); Resume walks it through PATCHING, VALIDATING and RESUMING and hands
// the token back with the stage to resume at, so finished stages never run
// again. Everything is written to the ledger once (write-once entries), so
// each step is safe to repeat.
package operate

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

// Ledger is the part of ora.Ledger the operator calls.
type Ledger interface {
	// Append: see ora.Ledger. Errors: EINVALID, ECONFLICT (with the stored Entry), ETRANSIENT.
	Append(ctx context.Context, e ora.Entry) (ora.Entry, error)
	// Entries: see ora.Ledger. Errors: ENOTFOUND, ETRANSIENT.
	Entries(ctx context.Context, signalID string) ([]ora.Entry, error)
	// Recent: see ora.Ledger. Errors: EINVALID, ETRANSIENT.
	Recent(ctx context.Context, kind ora.EntryKind, from, to time.Time, limit int) ([]ora.Entry, error)
	// Decision: see ora.Ledger. Errors: ENOTFOUND, ETRANSIENT.
	Decision(ctx context.Context, decisionID string) (ora.DecisionState, error)
	// TransitionDecision: see ora.Ledger. Errors: EINVALID, ENOTFOUND, ECONFLICT, ETRANSIENT.
	TransitionDecision(ctx context.Context, decisionID string, from, to ora.DecisionStatus, reason string) (ora.DecisionState, error)
	// Commit: see ora.Ledger. Errors: EINVALID, ENOTFOUND, ECONFLICT (with
	// the stored Entry or DecisionState), ETRANSIENT.
	Commit(ctx context.Context, s ora.Stage) (ora.Committed, error)
}

// Resumer hands a paused wave's task token back to the state machine (Step
// Functions' SendTaskSuccess, or the local engine's).
type Resumer interface {
	// SendTaskSuccess completes the task waiting on token with output (JSON).
	// Errors: ECONFLICT when the task is no longer waiting.
	SendTaskSuccess(ctx context.Context, token string, output []byte) error
}

// Motor is the motor version a wave runs under now, and the one before it.
type Motor struct {
	Version  string    `json:"version"`
	Previous string    `json:"previous,omitempty"`
	Since    time.Time `json:"since,omitzero"`
	// Learned are the learned patterns the version carries: a failure that
	// matches one is classified as its confirmed fix.
	Learned []Pattern `json:"learned,omitempty"`
}

// Failure is what a Catch hands the operator: the error name and its cause
// (for a Lambda error, a JSON object with errorMessage and errorType).
type Failure struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// Input is one failure caught by the state machine.
type Input struct {
	SignalID    string          // the wave's signal
	Wave        json.RawMessage // the execution's state at the Catch
	Failure     Failure
	ExecutionID string // the execution's ARN ($$.Execution.Id)
	EnteredAt   string // when Operate was entered ($$.State.EnteredTime): one failure, one record
	DecisionID  string // the reasoner's decision, when the wave's state does not carry it
}

// Step is one step of an operator's action plan.
type Step struct {
	Step     string `json:"step"`   // pause | apply_patch | validate | resume | retry | fail
	Target   string `json:"target"` // pipeline | motor | app
	PatchRef string `json:"patch_ref,omitempty"`
	Seconds  int    `json:"seconds,omitempty"` // a retry's backoff
}

// Event is the observers' structured event of seed 003 §8.1, built from a
// caught failure.
type Event struct {
	TraceID     string            `json:"trace_id"`
	Timestamp   time.Time         `json:"timestamp"`
	Scope       string            `json:"scope"`       // app | motor
	SignalType  string            `json:"signal_type"` // validation | error | latency | cost
	Severity    string            `json:"severity"`    // warn | error | critical
	Payload     map[string]string `json:"payload"`
	ArtifactIDs []string          `json:"artifact_ids"`
	ContextRef  map[string]string `json:"context_ref"` // app_ctx, motor_ctx as id@version
}

// Fingerprint identifies an incident: failures of one class at one stage with
// one error under one motor version are one incident.
type Fingerprint struct {
	Taxonomy     string `json:"taxonomy"`
	Stage        string `json:"stage"`
	Error        string `json:"error"`
	MotorVersion string `json:"motor_version"`
}

// ID is the incident id of the fingerprint.
func (f Fingerprint) ID() string {
	return "incident-" + ora.Digest([]byte(f.Taxonomy + "\x00" + f.Stage + "\x00" + f.Error + "\x00" + f.MotorVersion))[:16]
}

// Record is an operator decision record (seed 003 §8.2), the body of the
// operator-decision entry qualified "op/<decision id>".
type Record struct {
	DecisionID         string      `json:"decision_id"` // the operator decision's own id
	ReasonerDecisionID string      `json:"reasoner_decision_id,omitempty"`
	SignalID           string      `json:"signal_id"`
	Classification     string      `json:"classification"` // app | motor | mixed
	Taxonomy           string      `json:"taxonomy"`       // seed 003 §10
	Rule               string      `json:"rule"`           // the Policy row that matched
	Rationale          string      `json:"rationale"`
	Action             string      `json:"action"` // retry | pause | fail
	ActionPlan         []Step      `json:"action_plan"`
	SafetyChecks       []string    `json:"safety_checks"`
	Stage              string      `json:"stage"`
	IncidentID         string      `json:"incident_id"`
	Fingerprint        Fingerprint `json:"fingerprint"`
	MotorVersion       string      `json:"motor_version"`
	AppVersion         string      `json:"app_version"`
	Event              Event       `json:"event"`
	Failure            Failure     `json:"failure"`
	// FailedJobs are the observation jobs of the failed Fetch children
	// when the failure's cause names them (FailedJobsOf).
	FailedJobs []FailedJob `json:"failed_jobs,omitempty"`
	At         time.Time   `json:"at"`
}

// Verdict is the body of a final-verdict entry.
type Verdict struct {
	Outcome    string          `json:"outcome"` // completed | rejected | failed
	DecisionID string          `json:"decision_id,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Error      string          `json:"error,omitempty"`
	Validators json.RawMessage `json:"validators,omitempty"`
	At         time.Time       `json:"at"`
	// Actions lists every action's outcome of a decision that ran (some
	// action has evidence): success, failure, unknown, skipped or pending.
	Actions []act.ActionOutcome `json:"actions,omitempty"`
}

// Outcome is what Operate returns to the state machine: the action
// ("Pause or fail?" chooses on it) and what each branch needs.
type Outcome struct {
	Action string `json:"action"` // retry | pause | fail
	Error  string `json:"error"`
	Cause  string `json:"cause"` // at most MaxCause bytes
	// Failure is the caught failure as the wave keeps it from here on
	// (Trim): the state machine replaces its copy with this one, so a
	// failure never nests the ones before it.
	Failure             Failure `json:"failure"`
	OperatorDecisionID  string  `json:"operator_decision_id"`
	IncidentID          string  `json:"incident_id,omitempty"`
	Classification      string  `json:"classification"`
	Taxonomy            string  `json:"taxonomy"`
	ResumeAt            string  `json:"resume_at,omitempty"`
	BackoffSeconds      int     `json:"backoff_seconds,omitempty"`
	PauseTimeoutSeconds int     `json:"pause_timeout_seconds,omitempty"`
	// AppPatch is the app patch the wave runs under (a resume's), carried
	// into an automatic retry so the stage that runs again still sees it.
	AppPatch *AppPatch `json:"app_patch,omitempty"`
}

// Options tune a Service.
type Options struct {
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// AutoResumeTransient retries a transient failure after a backoff, at
	// most MaxAutoResumes times per stage of a wave, before pausing it.
	AutoResumeTransient bool
	// MaxAutoResumes bounds automatic retries per stage of a wave. Default 3.
	MaxAutoResumes int
	// Backoff is the wait before the nth automatic retry (n from 0). Default
	// 2s doubling, at most 60s.
	Backoff func(n int) time.Duration
	// PauseTimeout is how long a paused wave waits. Default 7 days.
	PauseTimeout time.Duration
	// FailedStage names the stage that failed in the execution; nil, or an
	// empty answer, falls back to InferStage.
	FailedStage func(ctx context.Context, executionID string) (string, error)
	// Motor answers the current motor version. Default "unversioned".
	Motor func(ctx context.Context) (Motor, error)
	// AppVersion is the app context's version (its configuration's digest).
	AppVersion string
	// Resumer hands tokens back; Resume needs it.
	Resumer Resumer
	// JobsStaged reports whether the wave's observation jobs, which Plan
	// wrote and the Fetch Map reads, are still in the job store: the jobs
	// bucket (and ora dev's jobs folder) expires them after 7 days, so a
	// wave paused longer than that finds them gone. Resume at Fetch
	// observations re-enters at Plan observations when they are gone; Plan
	// keeps the wave's pinned profile version and plans and writes the jobs
	// again. Nil: the jobs are taken as staged.
	JobsStaged func(ctx context.Context, waveID string) (bool, error)
	// Metrics receives the operator's KPI metrics (telemetry's
	// ClassificationOverrides, Resumes, TimeToResume). Default: none.
	Metrics Metrics
	// Redriver restarts a stopped wave's execution; Redrive needs it.
	Redriver Redriver
	// Promote makes a proposed motor version current through the promotion
	// gate (motor.Registry.Promote): a resume of a motor or mixed incident
	// calls it with the version supplied. Errors: ENOTFOUND (no such
	// version), ECONFLICT naming the failing gate cases. Nil: the version
	// must be current already.
	Promote func(ctx context.Context, version, reason, by string) error
	// CheckPatch validates an app patch against the app (the home's
	// configuration) beyond AppPatch.Check. Errors: EINVALID naming the
	// field. Nil: AppPatch.Check only.
	CheckPatch func(ctx context.Context, p AppPatch) error
}

// Metrics is what the operator records its KPIs through (telemetry.Metrics
// satisfies it).
type Metrics interface {
	// Add adds delta to a counter.
	Add(name string, delta float64, labels ...string)
	// Observe records one sample of a histogram.
	Observe(name string, value float64, labels ...string)
}

type nopMetrics struct{}

func (nopMetrics) Add(string, float64, ...string)     {}
func (nopMetrics) Observe(string, float64, ...string) {}

// The operator's KPI metrics, by the motor version an incident was first
// seen under (the names match shared/telemetry's catalog).
const (
	MetricClassificationOverrides = "ora_classification_overrides_total"
	MetricResumes                 = "ora_operator_resumes_total"
	MetricTimeToResume            = "ora_operator_time_to_resume_seconds"
	MetricIncidents               = "ora_operator_incidents_total"
	MetricPauses                  = "ora_operator_pauses_total"
)

// ActLockWait is how long the operator's last automatic retry of Act
// waits: the longest a crashed run's lock on an action lasts
// (act.MaxActionTimeout + act.LockMargin). Act's own retries live in the
// parent (an Express child has five minutes), so this wait is the operator's.
const ActLockWait = act.MaxActionTimeout + act.LockMargin

const stageAct = "Act"

// Service is the operator.
type Service struct {
	ledger Ledger
	o      Options
}

// New returns an operator writing to ledger.
func New(ledger Ledger, opts ...func(*Options)) *Service {
	o := Options{Now: time.Now, MaxAutoResumes: 3, PauseTimeout: 7 * 24 * time.Hour, Metrics: nopMetrics{}}
	for _, f := range opts {
		f(&o)
	}
	if o.Backoff == nil {
		o.Backoff = func(n int) time.Duration {
			d := 2 * time.Second * time.Duration(math.Pow(2, float64(n)))
			return min(d, 60*time.Second)
		}
	}
	if o.Motor == nil {
		o.Motor = func(context.Context) (Motor, error) { return Motor{Version: "unversioned"}, nil }
	}
	if o.AppVersion == "" {
		o.AppVersion = "unversioned"
	}
	return &Service{ledger: ledger, o: o}
}

// namespace derives operator decision ids from the failure, so a retry of
// Operate writes the same record.
var namespace = uuid.MustParse("5b0c36a2-4c8e-4f57-9d0e-0d8f3c7a1e11")

// Qualifier prefixes of the operator's entries in a wave.
const (
	qOp        = "op/"
	qPause     = "pause/"
	qPatching  = "patching/"
	qValidate  = "validating/"
	qResuming  = "resuming/"
	qResumed   = "resumed/"
	qIncident  = "incident"
	qOccurs    = "occurrence/"
	qClosed    = "closed/"
	actPause   = "pause"
	actRetry   = "retry"
	actFail    = "fail"
	scopeApp   = "app"
	scopeMotor = "motor"
)

// Operate handles one caught failure: it classifies it, files the incident,
// writes the decision record and says what the wave does next. A failure of a
// decision the actor already failed (it can never run again) fails the wave,
// with a final verdict; a transient one is retried after a backoff when
// AutoResumeTransient allows; any other pauses the wave. It is safe to run
// twice. Errors: EINVALID, ETRANSIENT.
func (s *Service) Operate(ctx context.Context, in Input) (Outcome, error) {
	if in.SignalID == "" {
		return Outcome{}, ora.Invalid("signal_id", "required")
	}
	f := in.Failure
	failedJobs := FailedJobsOf(f.Cause)
	childStage, carried := "", waveState{}
	if rep, inner, ok := UnwrapChild(f); ok {
		childStage, f = rep.Stage, inner // the exact stage, and its own error
		carried = parseWave(rep.Results)
	}
	if f.Error == "" {
		f.Error = "UnknownError"
	}
	msg := message(f.Cause)
	w := parseWave(in.Wave)
	decisionID := w.DecisionID
	if decisionID == "" {
		decisionID = carried.DecisionID // made inside the child that failed
	}
	if decisionID == "" {
		decisionID = in.DecisionID
	}
	key := in.EnteredAt
	if key == "" {
		key = decisionID + "/" + f.Error + "/" + f.Cause
	}
	opID := uuid.NewSHA1(namespace, []byte(in.SignalID+"/"+key)).String()

	entries, err := s.ledger.Entries(ctx, in.SignalID)
	if err != nil && ora.ErrorCode(err) != ora.ENOTFOUND {
		return Outcome{}, fmt.Errorf("operate: read wave %s: %w", in.SignalID, err)
	}
	wave := readWave(entries)
	kept := Trim(in.Failure)
	if rec, ok := wave.ops[opID]; ok {
		return s.outcome(rec, msg, kept, w.AppPatch), nil // a retry of Operate: answer as before
	}

	stage := childStage
	if stage == "" && s.o.FailedStage != nil && in.ExecutionID != "" {
		if st, err := s.o.FailedStage(ctx, in.ExecutionID); err == nil {
			stage = st
		}
	}
	if stage == "" {
		stage = InferStage(in.Wave)
	}
	motor, err := s.o.Motor(ctx)
	if err != nil {
		return Outcome{}, fmt.Errorf("operate: motor version: %w", err)
	}
	facts, err := s.facts(ctx, f, msg, stage, wave.source, motor)
	if err != nil {
		return Outcome{}, err
	}
	v := ClassifyUnder(motor, facts)
	now := s.o.Now().UTC()
	fp := Fingerprint{Taxonomy: v.Taxonomy, Stage: stage, Error: f.Error, MotorVersion: motor.Version}

	action, plan, backoff := s.plan(ctx, v, stage, decisionID, wave, motor)
	rec := Record{
		DecisionID:         opID,
		ReasonerDecisionID: decisionID,
		SignalID:           in.SignalID,
		Classification:     v.Classification,
		Taxonomy:           v.Taxonomy,
		Rule:               v.Rule,
		Rationale:          fmt.Sprintf("%s at %s classified %s (%s, rule %q): %s", f.Error, stage, v.Classification, v.Taxonomy, v.Rule, msg),
		Action:             action,
		ActionPlan:         plan,
		SafetyChecks:       safetyChecks(v),
		Stage:              stage,
		IncidentID:         fp.ID(),
		Fingerprint:        fp,
		MotorVersion:       motor.Version,
		AppVersion:         s.o.AppVersion,
		Event:              s.event(in.SignalID, decisionID, wave, f, msg, stage, v, action, motor, now, failedJobs),
		Failure:            f,
		FailedJobs:         failedJobs,
		At:                 now,
	}
	if action == actRetry {
		rec.ActionPlan[0].Seconds = int(backoff / time.Second)
	}
	if err := s.fileIncident(ctx, rec, wave.source); err != nil {
		return Outcome{}, err
	}
	if err := s.append(ctx, in.SignalID, qOp+opID, rec); err != nil {
		return Outcome{}, err
	}
	if action != actFail {
		s.o.Metrics.Add(MetricPauses, 1, "motor_version", motor.Version)
	}
	if action == actFail {
		if err := s.finish(ctx, in.SignalID, decisionID, f.Error, msg); err != nil {
			return Outcome{}, err
		}
	}
	return s.outcome(rec, msg, kept, w.AppPatch), nil
}

// plan decides the action and writes its plan (§8.2).
func (s *Service) plan(ctx context.Context, v Class, stage, decisionID string, w waveView, motor Motor) (string, []Step, time.Duration) {
	if decisionID != "" {
		if st, err := s.ledger.Decision(ctx, decisionID); err == nil && st.Status == ora.StatusFailed {
			// The actor failed the decision itself: it may never execute
			// again, so resuming cannot help; the app is patched and the
			// signal sent anew.
			return actFail, []Step{{Step: "fail", Target: "pipeline"}, {Step: "apply_patch", Target: scopeApp, PatchRef: "app@" + s.o.AppVersion}}, 0
		}
	}
	if v.Transient && s.o.AutoResumeTransient {
		n := 0
		for _, r := range w.ops {
			if r.Action == actRetry && r.Stage == stage {
				n++
			}
		}
		if n < s.o.MaxAutoResumes {
			d := s.o.Backoff(n)
			if stage == stageAct && n == s.o.MaxAutoResumes-1 {
				// Act's last automatic retry waits out the longest lock a
				// crashed run may hold on an action, so it runs the action
				// (under its key) rather than finding it still in progress.
				d = max(d, ActLockWait)
			}
			return actRetry, []Step{{Step: "retry", Target: "pipeline"}, {Step: "resume", Target: "pipeline"}}, d
		}
	}
	motorRef, appRef := "motor@"+motor.Version, "app@"+s.o.AppVersion
	steps := []Step{{Step: "pause", Target: "pipeline"}}
	switch v.Classification {
	case ClassMixed: // seed 003 §7.3: the motor first, then the app
		steps = append(steps,
			Step{Step: "apply_patch", Target: scopeMotor, PatchRef: motorRef}, Step{Step: "validate", Target: scopeMotor},
			Step{Step: "apply_patch", Target: scopeApp, PatchRef: appRef}, Step{Step: "validate", Target: scopeApp})
	case ClassMotor:
		steps = append(steps, Step{Step: "apply_patch", Target: scopeMotor, PatchRef: motorRef}, Step{Step: "validate", Target: scopeMotor})
	default:
		steps = append(steps, Step{Step: "apply_patch", Target: scopeApp, PatchRef: appRef}, Step{Step: "validate", Target: scopeApp})
	}
	return actPause, append(steps, Step{Step: "resume", Target: "pipeline"}), 0
}

func safetyChecks(v Class) []string {
	switch v.Classification {
	case ClassMotor, ClassMixed:
		return []string{"motor:golden-replay", "motor:contract-tests", "resume:current-motor"}
	}
	return []string{"app:config-valid", "resume:current-motor"}
}

func (s *Service) outcome(rec Record, msg string, kept Failure, patch *AppPatch) Outcome {
	o := Outcome{
		Action: rec.Action, Error: rec.Failure.Error, Cause: clip(msg, MaxCause), Failure: kept,
		OperatorDecisionID: rec.DecisionID, IncidentID: rec.IncidentID,
		Classification: rec.Classification, Taxonomy: rec.Taxonomy, ResumeAt: rec.Stage,
	}
	switch rec.Action {
	case actRetry:
		o.BackoffSeconds = max(rec.ActionPlan[0].Seconds, 0)
		o.AppPatch = patch // the stage runs again under the patch it failed under
	case actPause:
		o.PauseTimeoutSeconds = max(int(s.o.PauseTimeout/time.Second), 1)
	}
	return o
}

// event builds the §8.1 envelope.
func (s *Service) event(signalID, decisionID string, w waveView, f Failure, msg, stage string, v Class, action string, motor Motor, now time.Time, failed []FailedJob) Event {
	scope := scopeMotor
	if v.Classification == ClassApp {
		scope = scopeApp
	}
	typ := "error"
	switch {
	case f.Error == "ValidationFailed":
		typ = "validation"
	case v.Taxonomy == MotorPerf && !v.Transient:
		typ = "latency"
		if strings.Contains(strings.ToLower(msg), "cost") || strings.Contains(strings.ToLower(msg), "spend") {
			typ = "cost"
		}
	}
	sev := "error"
	switch action {
	case actRetry:
		sev = "warn"
	case actFail:
		sev = "critical"
	}
	ids := []string{signalID}
	if decisionID != "" {
		ids = append(ids, decisionID)
	}
	if w.packetDigest != "" {
		ids = append(ids, "packet:"+w.packetDigest)
	}
	payload := map[string]string{"error": f.Error, "details": msg, "stage": stage, "source": w.source}
	if len(failed) > 0 {
		ids := make([]string, len(failed))
		for i, j := range failed {
			ids[i] = j.ID
		}
		payload["failed_jobs"] = strings.Join(ids, ",")
		payload["failed_families"] = strings.Join(families(failed), ",")
	}
	return Event{
		TraceID: signalID, Timestamp: now, Scope: scope, SignalType: typ, Severity: sev,
		Payload:     payload,
		ArtifactIDs: ids,
		ContextRef:  map[string]string{"app_ctx": "app@" + s.o.AppVersion, "motor_ctx": "motor@" + motor.Version},
	}
}

// ActionsOf is what a final verdict lists of w's actions: every action's
// outcome once one has evidence, nothing for a decision that never ran.
func ActionsOf(w act.Wave) []act.ActionOutcome {
	if len(w.Evidence) == 0 {
		return nil
	}
	return w.Outcomes()
}

// finish records the wave's failed end: the final verdict and, for an
// executing decision, its move to failed, as one stage.
func (s *Service) finish(ctx context.Context, signalID, decisionID, errName, msg string) error {
	v := Verdict{Outcome: "failed", DecisionID: decisionID, Reason: msg, Error: errName, At: s.o.Now().UTC()}
	stage := ora.Stage{Name: "operate"}
	if decisionID != "" {
		w, err := act.LoadWave(ctx, s.ledger, signalID, decisionID)
		switch {
		case err == nil:
			v.Actions = ActionsOf(w)
		case ora.ErrorCode(err) != ora.ENOTFOUND:
			return fmt.Errorf("operate: the actions of %s: %w", decisionID, err)
		}
		st, err := s.ledger.Decision(ctx, decisionID)
		switch {
		case err == nil && st.Status == ora.StatusExecuting:
			stage.Transitions = []ora.Transition{{DecisionID: decisionID, From: ora.StatusExecuting, To: ora.StatusFailed, Reason: errName + ": " + msg}}
		case err != nil && ora.ErrorCode(err) != ora.ENOTFOUND:
			return fmt.Errorf("operate: read decision %s: %w", decisionID, err)
		}
	}
	e, err := ora.NewEntry(signalID, ora.KindFinalVerdict, "", v)
	if err != nil {
		return fmt.Errorf("operate: %w", err)
	}
	e.CreatedAt = v.At
	stage.Entries = []ora.Entry{e}
	for {
		_, err := s.ledger.Commit(ctx, stage)
		switch {
		case err == nil:
			return nil
		case ora.ErrorCode(err) != ora.ECONFLICT:
			return fmt.Errorf("operate: commit the failed verdict of %s: %w", signalID, err)
		}
		if _, ok := ora.Existing[ora.Entry](err); ok {
			return nil // a retry: the verdict stored first stays
		}
		if len(stage.Transitions) == 0 {
			return fmt.Errorf("operate: commit the failed verdict of %s: %w", signalID, err)
		}
		stage.Transitions = nil // the decision moved meanwhile (the actor failed it itself)
	}
}

// Abandon ends a paused wave nobody resumed in time: the failed verdict. Safe
// to run twice. Errors: EINVALID, ETRANSIENT.
func (s *Service) Abandon(ctx context.Context, signalID string, wave json.RawMessage, f Failure) (Outcome, error) {
	if signalID == "" {
		return Outcome{}, ora.Invalid("signal_id", "required")
	}
	if _, inner, ok := UnwrapChild(f); ok {
		f = inner
	}
	if f.Error == "" {
		f.Error = "UnknownError"
	}
	msg := "paused and not resumed in time: " + message(f.Cause)
	if err := s.finish(ctx, signalID, parseWave(wave).DecisionID, f.Error, msg); err != nil {
		return Outcome{}, err
	}
	return Outcome{Action: actFail, Error: f.Error, Cause: clip(msg, MaxCause), Failure: Trim(f)}, nil
}

// Pause records the task token a paused wave waits on, under the operator
// decision that paused it. Safe to run twice. Errors: EINVALID, ENOTFOUND (no
// such operator decision), ETRANSIENT.
func (s *Service) Pause(ctx context.Context, signalID, operatorDecisionID, token string) error {
	switch {
	case signalID == "":
		return ora.Invalid("signal_id", "required")
	case operatorDecisionID == "":
		return ora.Invalid("operator_decision_id", "required")
	case token == "":
		return ora.Invalid("task_token", "required")
	}
	entries, err := s.ledger.Entries(ctx, signalID)
	if err != nil {
		return fmt.Errorf("operate: read wave %s: %w", signalID, err)
	}
	if _, ok := readWave(entries).ops[operatorDecisionID]; !ok {
		return ora.Errorf(ora.ENOTFOUND, "wave %s has no operator decision %s", signalID, operatorDecisionID)
	}
	p := pauseBody{Token: token, At: s.o.Now().UTC()}
	return s.append(ctx, signalID, qPause+operatorDecisionID+"/"+ora.Digest([]byte(token))[:12], p)
}

type pauseBody struct {
	Token string    `json:"task_token"`
	At    time.Time `json:"at"`
}

// append writes an operator entry once; a conflict (a retry) keeps the
// stored one. kind defaults to operator-decision.
func (s *Service) append(ctx context.Context, signalID, qualifier string, body any, kind ...ora.EntryKind) error {
	k := ora.KindOperatorDecision
	if len(kind) > 0 {
		k = kind[0]
	}
	e, err := ora.NewEntry(signalID, k, qualifier, body)
	if err != nil {
		return fmt.Errorf("operate: %w", err)
	}
	e.CreatedAt = s.o.Now().UTC()
	if _, err := s.ledger.Append(ctx, e); err != nil {
		if _, ok := ora.Existing[ora.Entry](err); ok {
			return nil
		}
		return fmt.Errorf("ledger: append %s %s: %w", k, qualifier, err)
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

// waveState is what the operator reads of the state machine's state.
type waveState struct {
	DecisionID string
	AppPatch   *AppPatch // the patch the wave runs under, from a resume
}

func parseWave(raw json.RawMessage) waveState {
	var w struct {
		Decision struct {
			DecisionID string `json:"decision_id"`
		} `json:"decision"`
		Operation struct {
			AppPatch *AppPatch `json:"app_patch"`
		} `json:"operation"`
	}
	_ = json.Unmarshal(raw, &w)
	return waveState{DecisionID: w.Decision.DecisionID, AppPatch: w.Operation.AppPatch}
}
