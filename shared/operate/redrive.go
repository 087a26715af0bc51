package operate

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Redriver restarts a wave's stopped execution from the state that did not
// finish, keeping the results of the states that did (Step Functions'
// RedriveExecution, or the local engine's).
type Redriver interface {
	// Redrive restarts the execution of the wave and returns when it runs
	// again. Errors: ENOTFOUND (no execution), ECONFLICT (not redrivable:
	// running or succeeded; the message says which), ETRANSIENT (the
	// running-execution limit, throttling).
	Redrive(ctx context.Context, waveID string) error
}

// Redriven is what Redrive answers.
type Redriven struct {
	WaveID     string    `json:"wave_id"`
	Redrive    int       `json:"redrive"` // 1 for the wave's first redrive
	By         string    `json:"by"`
	RedrivenAt time.Time `json:"redriven_at"`
}

// qRedrive prefixes the operator-decision entries that record a redrive.
const qRedrive = "redrive/"

// Redrive restarts a wave whose execution failed, timed out or was aborted
// before the wave had a final verdict: the execution continues at the state
// that did not finish (a stage whose failure no Catch handled, the operator
// itself, or the state a stop or a timeout interrupted), and states that
// finished keep their results. A stage that runs again is harmless: every
// ledger write is conditional, so an action with evidence never runs twice.
// A wave with a final verdict is refused: the verdict is written once, and
// a failed one means the operator judged the wave over (its decision failed,
// or nobody resumed it in time), so the signal is sent anew instead. The
// redrive is recorded as an operator decision ("redrive/N"). Errors:
// EINVALID, ENOTFOUND (no such wave), ECONFLICT (a final verdict; the
// execution running or succeeded), ETRANSIENT.
func (s *Service) Redrive(ctx context.Context, waveID, by string) (Redriven, error) {
	if waveID == "" {
		return Redriven{}, ora.Invalid("wave_id", "required")
	}
	if s.o.Redriver == nil {
		return Redriven{}, ora.Errorf(ora.EINTERNAL, "operate: no redriver configured")
	}
	if by == "" {
		by = "operator"
	}
	entries, err := s.ledger.Entries(ctx, waveID)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return Redriven{}, ora.Errorf(ora.ENOTFOUND, "no wave %q", waveID)
	}
	if err != nil {
		return Redriven{}, fmt.Errorf("operate: read wave %s: %w", waveID, err)
	}
	n := 1
	for _, e := range entries {
		switch {
		case e.Kind == ora.KindFinalVerdict:
			var v Verdict
			_ = json.Unmarshal(e.Body, &v)
			return Redriven{}, ora.Conflict(nil, "wave %s already has its final verdict (%s): a redrive cannot change it; send the signal again for a new wave", waveID, verdictWords(v))
		case e.Kind == ora.KindOperatorDecision && strings.HasPrefix(e.Qualifier, qRedrive):
			if k, err := strconv.Atoi(strings.TrimPrefix(e.Qualifier, qRedrive)); err == nil && k >= n {
				n = k + 1
			}
		}
	}
	if err := s.o.Redriver.Redrive(ctx, waveID); err != nil {
		return Redriven{}, fmt.Errorf("operate: redrive wave %s: %w", waveID, err)
	}
	r := Redriven{WaveID: waveID, Redrive: n, By: by, RedrivenAt: s.o.Now().UTC()}
	if err := s.append(ctx, waveID, qRedrive+strconv.Itoa(n), r); err != nil {
		return Redriven{}, err
	}
	return r, nil
}

// verdictWords says what a final verdict was, for a refusal.
func verdictWords(v Verdict) string {
	switch {
	case v.Outcome == "":
		return "recorded"
	case v.Error != "" && v.Reason != "":
		return v.Outcome + ": " + v.Error + ": " + clip(v.Reason, 200)
	case v.Reason != "":
		return v.Outcome + ": " + clip(v.Reason, 200)
	}
	return v.Outcome
}
