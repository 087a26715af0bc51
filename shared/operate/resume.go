package operate

import (
	"context"
	"encoding/json"
	"fmt"
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
	packetDigest string
	ops          map[string]Record              // operator decision id -> record
	pauses       map[string]pauseBody           // operator decision id -> latest pause
	steps        map[string]map[string]stepBody // operator decision id -> lifecycle step -> body
	verdict      bool
}

// stepBody records one lifecycle step of a resume.
type stepBody struct {
	State        string    `json:"state"`
	Target       string    `json:"target,omitempty"` // motor | app | motor,app
	PatchRef     string    `json:"patch_ref,omitempty"`
	Checks       []string  `json:"checks,omitempty"`
	MotorVersion string    `json:"motor_version,omitempty"`
	By           string    `json:"by,omitempty"`
	At           time.Time `json:"at"`
}

func readWave(entries []ora.Entry) waveView {
	w := waveView{ops: map[string]Record{}, pauses: map[string]pauseBody{}, steps: map[string]map[string]stepBody{}}
	for _, e := range entries {
		switch e.Kind {
		case ora.KindSignalReceived:
			var sig ora.NormalizedSignal
			if json.Unmarshal(e.Body, &sig) == nil {
				w.source = sig.Source.Name
				if w.source == "" {
					w.source = string(sig.Source.Type)
				}
			}
		case ora.KindOrientationPacket:
			w.packetDigest = e.Digest
		case ora.KindFinalVerdict:
			w.verdict = true
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
	entries, err := s.ledger.Entries(ctx, waveID)
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

// Resumed is what Resume answers.
type Resumed struct {
	WaveID             string `json:"wave_id"`
	IncidentID         string `json:"incident_id"`
	OperatorDecisionID string `json:"operator_decision_id"`
	ResumeAt           string `json:"resume_at"`
	MotorVersion       string `json:"motor_version"`
	State              string `json:"state"`
}

// resumeOutput is what the paused task returns to the state machine.
type resumeOutput struct {
	Action             string `json:"action"`
	ResumeAt           string `json:"resume_at"`
	MotorVersion       string `json:"motor_version"`
	AppVersion         string `json:"app_version"`
	IncidentID         string `json:"incident_id"`
	OperatorDecisionID string `json:"operator_decision_id"`
	Error              string `json:"error"`
	Cause              string `json:"cause"`
}

// Resume resumes a paused wave at its failed stage under the current motor
// and app versions, through PATCHING (the patch the plan names: motor, app,
// or motor then app), VALIDATING (the safety checks) and RESUMING (the task
// token handed back); each step is recorded in the ledger. motorVersion, when
// set, must be the current motor version (promote it first). Safe to call
// again after a crash half-way. Errors: EINVALID, ENOTFOUND (no such wave),
// ECONFLICT (not paused, already resumed, a motor version that is not
// current, the wave no longer waiting), ETRANSIENT.
func (s *Service) Resume(ctx context.Context, waveID, motorVersion, by string) (Resumed, error) {
	return s.resume(ctx, waveID, motorVersion, by, "")
}

// resume resumes the paused wave at stage ("" : the failed stage).
func (s *Service) resume(ctx context.Context, waveID, motorVersion, by, stage string) (Resumed, error) {
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
	motor, err := s.o.Motor(ctx)
	if err != nil {
		return Resumed{}, fmt.Errorf("operate: motor version: %w", err)
	}
	if motorVersion != "" && motorVersion != motor.Version {
		return Resumed{}, ora.Conflict(nil, "motor %s is not the current version (%s): promote it first", motorVersion, motor.Version)
	}
	if by == "" {
		by = "operator"
	}
	target, ref := scopeApp, "app@"+s.o.AppVersion
	switch rec.Classification {
	case ClassMotor:
		target, ref = scopeMotor, "motor@"+motor.Version
	case ClassMixed:
		target, ref = "motor,app", "motor@"+motor.Version+",app@"+s.o.AppVersion
	}
	now := func() time.Time { return s.o.Now().UTC() }
	if err := s.append(ctx, waveID, qPatching+rec.DecisionID, stepBody{State: StatePatching, Target: target, PatchRef: ref, MotorVersion: motor.Version, By: by, At: now()}); err != nil {
		return Resumed{}, err
	}
	checks := []string{"token:recorded", "motor:current=" + motor.Version, "incident:" + rec.IncidentID}
	if jobsCheck != "" {
		checks = append(checks, jobsCheck)
	}
	if rec.Classification != ClassApp {
		if motor.Version != rec.MotorVersion {
			checks = append(checks, "motor:changed "+rec.MotorVersion+"->"+motor.Version)
		} else {
			checks = append(checks, "motor:unchanged "+motor.Version)
		}
	}
	if err := s.append(ctx, waveID, qValidate+rec.DecisionID, stepBody{State: StateValidating, Checks: checks, MotorVersion: motor.Version, By: by, At: now()}); err != nil {
		return Resumed{}, err
	}
	if err := s.append(ctx, waveID, qResuming+rec.DecisionID, stepBody{State: StateResuming, MotorVersion: motor.Version, By: by, At: now()}); err != nil {
		return Resumed{}, err
	}
	out, err := json.Marshal(resumeOutput{
		Action: "resume", ResumeAt: stage, MotorVersion: motor.Version, AppVersion: s.o.AppVersion,
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
	if err := s.append(ctx, waveID, qResumed+rec.DecisionID, stepBody{State: StateRunning, MotorVersion: motor.Version, By: by, At: at}); err != nil {
		return Resumed{}, err
	}
	if err := s.append(ctx, rec.IncidentID, qResumed+rec.DecisionID, resumedBody{WaveID: waveID, At: at, MotorVersion: motor.Version, By: by}); err != nil {
		return Resumed{}, err
	}
	s.o.Metrics.Add(MetricResumes, 1, "motor_version", rec.MotorVersion)
	s.o.Metrics.Observe(MetricTimeToResume, at.Sub(rec.At).Seconds(), "motor_version", rec.MotorVersion)
	if rec.Classification != ClassApp && motor.Version != rec.MotorVersion {
		// A motor fix: the incident is closed by the version it resumed under.
		if err := s.append(ctx, rec.IncidentID, qClosed+motor.Version, Fix{MotorVersion: motor.Version, WaveID: waveID, At: at}); err != nil {
			return Resumed{}, err
		}
	}
	return Resumed{WaveID: waveID, IncidentID: rec.IncidentID, OperatorDecisionID: rec.DecisionID, ResumeAt: stage, MotorVersion: motor.Version, State: StateRunning}, nil
}
