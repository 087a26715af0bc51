package reason

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// Kernel modes: pipeline runs the wave's program; diagnostic runs only
// GuardFailureInterpreter and records the others BLOCKED.
const (
	ModePipeline   = "pipeline"
	ModeDiagnostic = "diagnostic"
)

// RealityConfig says when the kernel is green (reality_green): the operator
// has no open critical incident, no more paused waves than MaxPausedWaves,
// and no more than MaxFailingValidatorWaves of the latest ValidatorWaves
// waves failed a validator. A zero field takes its default.
type RealityConfig struct {
	// MaxPausedWaves is how many waves may wait for an operator before the
	// kernel is not green. Default DefaultMaxPausedWaves.
	MaxPausedWaves int `yaml:"max_paused_waves,omitempty" json:"max_paused_waves,omitempty"`
	// ValidatorWaves is how many of the latest finished waves are weighed
	// for failing validators. Default DefaultValidatorWaves.
	ValidatorWaves int `yaml:"validator_waves,omitempty" json:"validator_waves,omitempty"`
	// MaxFailingValidatorWaves is how many of those may have failed a
	// validator. Default DefaultMaxFailingValidatorWaves.
	MaxFailingValidatorWaves int `yaml:"max_failing_validator_waves,omitempty" json:"max_failing_validator_waves,omitempty"`
}

// RealityConfig defaults.
const (
	DefaultMaxPausedWaves           = 5
	DefaultValidatorWaves           = 10
	DefaultMaxFailingValidatorWaves = 3
)

// withDefaults fills the zero fields.
func (c RealityConfig) withDefaults() RealityConfig {
	if c.MaxPausedWaves == 0 {
		c.MaxPausedWaves = DefaultMaxPausedWaves
	}
	if c.ValidatorWaves == 0 {
		c.ValidatorWaves = DefaultValidatorWaves
	}
	if c.MaxFailingValidatorWaves == 0 {
		c.MaxFailingValidatorWaves = DefaultMaxFailingValidatorWaves
	}
	return c
}

// Validate checks the thresholds.
func (c RealityConfig) Validate() error {
	if c.MaxPausedWaves < 0 || c.ValidatorWaves < 0 || c.MaxFailingValidatorWaves < 0 {
		return ora.Invalid("reason.reality", "thresholds must not be negative")
	}
	return nil
}

// OperatorState is the operator's state the kernel reads; *operate.Service
// is one.
type OperatorState interface {
	// Incidents returns the incidents and their KPIs. Errors: ETRANSIENT.
	Incidents(ctx context.Context) ([]operate.Incident, operate.Summary, error)
}

var _ OperatorState = (*operate.Service)(nil)

// RecentReader reads the latest entries of one kind; every ora.Ledger is one.
type RecentReader interface {
	// Recent: see ora.Ledger. Errors: EINVALID, ETRANSIENT.
	Recent(ctx context.Context, kind ora.EntryKind, from, to time.Time, limit int) ([]ora.Entry, error)
}

// CriticalIncident reports whether an incident makes the kernel not green:
// it is open (a wave waits on it) and the operator classified it motor or
// mixed, a fault of the motor (rules, prompts, model profile, validators)
// every wave under it may meet, not of one app's integration.
func CriticalIncident(inc operate.Incident) bool {
	return inc.Status == "open" && (inc.Classification == operate.ClassMotor || inc.Classification == operate.ClassMixed)
}

// validatorWindow is how far back the latest waves' verdicts are read.
const validatorWindow = 7 * 24 * time.Hour

// NewKernel returns the kernel state the Reasoner puts in its envelopes
// (Options.Kernel), read from the operator's state on every call:
// reality_summary holds reality_green and the figures it weighs (open and
// critical incidents, paused waves, failing validator waves, the
// operator's KPIs) and the reasons it is not green; oa_state the critical
// incidents' and the paused waves' ids; mode is diagnostic when not green.
// The Reasoner adds the motor version (bootstrap) and the orientation
// profile (ssot_index). Errors: the reads' (ETRANSIENT).
func NewKernel(state OperatorState, ledger RecentReader, cfg RealityConfig, now func() time.Time) func(context.Context) (ora.KernelStateRef, error) {
	cfg = cfg.withDefaults()
	if now == nil {
		now = time.Now
	}
	return func(ctx context.Context) (ora.KernelStateRef, error) {
		incs, sum, err := state.Incidents(ctx)
		if err != nil {
			return ora.KernelStateRef{}, fmt.Errorf("kernel: incidents: %w", err)
		}
		critical, paused := []string{}, []string{}
		for _, inc := range incs {
			if CriticalIncident(inc) {
				critical = append(critical, inc.ID)
			}
			for _, o := range inc.Occurrences {
				if o.Action == "pause" && o.ResumedAt.IsZero() && !slices.Contains(paused, o.WaveID) {
					paused = append(paused, o.WaveID)
				}
			}
		}
		t := now().UTC()
		verdicts, err := ledger.Recent(ctx, ora.KindFinalVerdict, t.Add(-validatorWindow), t.Add(time.Minute), cfg.ValidatorWaves)
		if err != nil {
			return ora.KernelStateRef{}, fmt.Errorf("kernel: recent verdicts: %w", err)
		}
		failing := 0
		for _, e := range verdicts {
			if failedValidator(e.Body) {
				failing++
			}
		}
		var why []string
		if len(critical) > 0 {
			why = append(why, fmt.Sprintf("%d open critical incident(s) (motor or mixed): %s", len(critical), strings.Join(critical, ", ")))
		}
		if len(paused) > cfg.MaxPausedWaves {
			why = append(why, fmt.Sprintf("%d paused waves, over the threshold of %d", len(paused), cfg.MaxPausedWaves))
		}
		if failing > cfg.MaxFailingValidatorWaves {
			why = append(why, fmt.Sprintf("%d of the last %d waves failed a validator, over the threshold of %d", failing, len(verdicts), cfg.MaxFailingValidatorWaves))
		}
		mode := ModePipeline
		if len(why) > 0 {
			mode = ModeDiagnostic
		}
		return ora.KernelStateRef{
			Mode: mode,
			RealitySummary: map[string]any{
				"reality_green":           len(why) == 0,
				"not_green_because":       why,
				"open_incidents":          sum.Open,
				"critical_incidents":      len(critical),
				"paused_waves":            len(paused),
				"failing_validator_waves": failing,
				"weighed_waves":           len(verdicts),
				"resumption_rate":         sum.ResumptionRate,
				"mttr_seconds":            sum.MTTRSeconds,
			},
			OAState: map[string]any{"critical_incident_ids": critical, "paused_wave_ids": paused},
		}, nil
	}
}

// failedValidator reports whether a final verdict's wave failed a
// validator: a validator result FAIL, or the wave failed on ValidationFailed.
func failedValidator(body json.RawMessage) bool {
	var v operate.Verdict
	if json.Unmarshal(body, &v) != nil {
		return false
	}
	if v.Error == "ValidationFailed" {
		return true
	}
	var results []ora.ValidatorResult
	_ = json.Unmarshal(v.Validators, &results)
	for _, r := range results {
		if r.Verdict == ora.Fail {
			return true
		}
	}
	return false
}

// notGreen returns why the kernel is not green, in words.
func notGreen(k ora.KernelStateRef) string {
	var why []string
	switch x := k.RealitySummary["not_green_because"].(type) {
	case []string:
		why = x
	case []any:
		for _, s := range x {
			why = append(why, fmt.Sprint(s))
		}
	}
	if len(why) == 0 {
		return "reality_green is not true"
	}
	return strings.Join(why, "; ")
}
