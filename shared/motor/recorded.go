package motor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// RecordedLedger is the part of ora.Ledger the recorder reads.
type RecordedLedger interface {
	// Entries: see ora.Ledger. Errors: ENOTFOUND, ETRANSIENT.
	Entries(ctx context.Context, signalID string) ([]ora.Entry, error)
	// Recent: see ora.Ledger. Errors: EINVALID, ETRANSIENT.
	Recent(ctx context.Context, kind ora.EntryKind, from, to time.Time, limit int) ([]ora.Entry, error)
}

// Recorder exports the waves the ledger recorded as golden waves, for a
// replay under another motor version (`ora replay --from-ledger`).
type Recorder struct {
	Ledger RecordedLedger
	Now    func() time.Time // default time.Now
}

// MaxRecorded bounds the waves one export returns.
const MaxRecorded = 500

// Recorded is a recorded wave: a golden wave whose Expect is what the wave
// decided then (decision, band, verdict), with the versions it ran under.
type Recorded struct {
	GoldenWave
	DecisionID   string    `json:"decision_id"`
	MotorVersion string    `json:"motor_version,omitempty"`
	AppVersion   string    `json:"app_version,omitempty"`
	At           time.Time `json:"at"`
	// FailedValidators names the validators that failed the decision.
	FailedValidators []string `json:"failed_validators,omitempty"`
	// CostUSD is the decision's model cost (0 for the rules reasoner).
	CostUSD float64 `json:"cost_usd,omitempty"`
	// LatencyMS is the time from the signal's normalization to the decision.
	LatencyMS int64 `json:"latency_ms,omitempty"`
}

// Passed reports whether the wave passed: no validator failed it and it
// was not escalated to a human.
func (w Recorded) Passed() bool {
	return len(w.FailedValidators) == 0 && w.Expect.Verdict != "escalated"
}

// Waves exports the waves whose signal arrived at or after since (newest
// first, at most limit, at most MaxRecorded), or the one wave waveID when
// it is set. A wave without a decision yet (still running, or failed before
// Reason) is left out. The recorded verdict is "escalated" when the wave
// asked a human (an architect-intent entry), else "completed". Errors:
// EINVALID (limit), ENOTFOUND (waveID has no decision), ETRANSIENT.
func (rc Recorder) Waves(ctx context.Context, since time.Time, waveID string, limit int) ([]Recorded, error) {
	if waveID != "" {
		entries, err := rc.Ledger.Entries(ctx, waveID)
		if err != nil {
			return nil, fmt.Errorf("recorded wave %s: %w", waveID, err)
		}
		w, ok, err := recordedOf(waveID, entries)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ora.Errorf(ora.ENOTFOUND, "wave %s has no recorded decision", waveID)
		}
		return []Recorded{w}, nil
	}
	if limit <= 0 || limit > MaxRecorded {
		if limit < 0 {
			return nil, ora.Invalid("limit", "%d must not be negative", limit)
		}
		limit = MaxRecorded
	}
	now := time.Now
	if rc.Now != nil {
		now = rc.Now
	}
	to := now().Add(time.Minute)
	if !since.Before(to) {
		return []Recorded{}, nil
	}
	signals, err := rc.Ledger.Recent(ctx, ora.KindSignalReceived, since, to, limit)
	if err != nil {
		return nil, fmt.Errorf("recorded waves since %s: %w", since.Format(time.RFC3339), err)
	}
	out := []Recorded{}
	for _, s := range signals {
		entries, err := rc.Ledger.Entries(ctx, s.SignalID)
		if err != nil {
			return nil, fmt.Errorf("recorded wave %s: %w", s.SignalID, err)
		}
		w, ok, err := recordedOf(s.SignalID, entries)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, w)
		}
	}
	return out, nil
}

// recordedOf reads one wave's signal, packet, decision and verdict.
func recordedOf(waveID string, entries []ora.Entry) (Recorded, bool, error) {
	var d *ora.ReasonerDecision
	escalated := false
	var failed []string
	for _, e := range entries {
		switch e.Kind {
		case ora.KindValidatorResult, ora.KindWitnessResult:
			var v ora.ValidatorResult
			if json.Unmarshal(e.Body, &v) == nil && v.Verdict == ora.Fail && !slices.Contains(failed, string(v.Validator)) {
				failed = append(failed, string(v.Validator))
			}
		case ora.KindReasonerDecision:
			var dec ora.ReasonerDecision
			if err := json.Unmarshal(e.Body, &dec); err != nil {
				return Recorded{}, false, ora.Errorf(ora.EINTERNAL, "wave %s: stored decision is malformed: %v", waveID, err)
			}
			if dec.ID != "" {
				d = &dec
			}
		case ora.KindArchitectIntent:
			escalated = true
		}
	}
	if d == nil {
		return Recorded{}, false, nil
	}
	in, err := orient.InputOf(entries)
	if err != nil {
		return Recorded{}, false, fmt.Errorf("wave %s: %w", waveID, err)
	}
	if p := d.AppPatch; p != nil && p.Kind == ora.PatchInput {
		// The decision was made on the signal as the operator's input patch
		// corrected it: the replay reads the same.
		if in.Signal.Payload, err = p.ApplyInput(in.Signal.Payload); err != nil {
			return Recorded{}, false, fmt.Errorf("wave %s: its decision's app patch %s: %w", waveID, p.Digest, err)
		}
	}
	verdict := "completed"
	if escalated {
		verdict = "escalated"
	}
	motorVersion := d.MotorVersion
	if motorVersion == "" {
		motorVersion = d.RulesVersion
	}
	var cost float64
	if d.Model != nil {
		cost = d.Model.CostUSD
	}
	var latency int64
	if !in.Signal.NormalizedAt.IsZero() && d.Timestamp.After(in.Signal.NormalizedAt) {
		latency = d.Timestamp.Sub(in.Signal.NormalizedAt).Milliseconds()
	}
	return Recorded{
		FailedValidators: failed, CostUSD: cost, LatencyMS: latency,
		GoldenWave: GoldenWave{Name: waveID, Signal: in.Signal, Packet: in.Packet,
			Expect: Expect{Action: d.ActionType, Band: string(d.Band()), Verdict: verdict}},
		DecisionID: d.ID, MotorVersion: motorVersion, AppVersion: d.AppVersion, At: d.Timestamp,
	}, true, nil
}
