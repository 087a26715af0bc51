package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// The ledger is the outbox of wave starts: capture appends signal-received
// and then starts the wave, and a crash between the two leaves a signal with
// no wave. Two mechanisms start those waves, both idempotent by the wave's
// name (the signal id):
//
//   - a sweep (StartMissing) reads the signal-received entries of a window
//     and starts the wave of every one that has none: `ora dev` sweeps the
//     lookback at start and the recent past periodically; on AWS a scheduled
//     sweep does the same and reports what it had to start (an alarm);
//   - on AWS, the ledger table's stream delivers every signal-received insert
//     to observe-table, which starts its wave (TableChanges).

// The ledger table's signal-received entries, as shared/dynamo keys them:
// PK = SignalKeyPrefix + signal id, SK = SignalReceivedSortKey. The stream
// filter of observe-table matches these.
const (
	SignalKeyPrefix       = "SIGNAL#"
	SignalReceivedSortKey = "ENTRY#signal-received#"
)

// WaveFinder reports whether a signal's wave exists. A WaveStarter that also
// implements it spares a sweep one start per signal that has its wave.
type WaveFinder interface {
	// WaveExists reports whether the wave named signalID exists, running or
	// finished. Errors: ETRANSIENT, EINTERNAL.
	WaveExists(ctx context.Context, signalID string) (bool, error)
}

// Sweep is what one outbox sweep found.
type Sweep struct {
	// Checked counts the signals of the window.
	Checked int `json:"checked"`
	// Started lists the signals that had no wave, whose wave the sweep started.
	Started []string `json:"started,omitempty"`
	// Failed maps a signal to the error that kept its wave from starting; the
	// next sweep tries again.
	Failed map[string]string `json:"failed,omitempty"`
	// Waiting lists the leaders of coalescing windows whose members are
	// still attaching: the next sweep starts them.
	Waiting []string `json:"waiting,omitempty"`
}

// StartMissing starts the wave of every signal recorded in [from, to) that has
// none. It reads the window from the ledger; a wave starter that implements
// WaveFinder is asked first, any other is asked to start every signal's wave
// (a no-op for those that exist). Errors: EINVALID (a bad window), the
// ledger's (ETRANSIENT); a wave that fails to start is in Sweep.Failed and
// does not stop the sweep.
func (o *Observer) StartMissing(ctx context.Context, from, to time.Time) (Sweep, error) {
	entries, err := o.ledger.Recent(ctx, ora.KindSignalReceived, from, to, 0)
	if err != nil {
		return Sweep{}, fmt.Errorf("outbox: read signals: %w", err)
	}
	finder, _ := o.waves.(WaveFinder)
	ended := map[string]bool{}
	if finder != nil {
		// A final verdict proves the wave ran: one range read spares a
		// finder call per finished wave (on AWS, a DescribeExecution each).
		verdicts, err := o.ledger.Recent(ctx, ora.KindFinalVerdict, from, o.opts.Now().Add(time.Minute), 0)
		if err != nil {
			return Sweep{}, fmt.Errorf("outbox: read final verdicts: %w", err)
		}
		for _, v := range verdicts {
			ended[v.SignalID] = true
		}
	}
	var sw Sweep
	fail := func(id string, err error) {
		if sw.Failed == nil {
			sw.Failed = map[string]string{}
		}
		sw.Failed[id] = err.Error()
		o.opts.Logger.ErrorContext(ctx, "outbox: wave not started", "signal_id", id, "error", err)
	}
	for _, e := range entries {
		if ctx.Err() != nil {
			return sw, fmt.Errorf("outbox: %w", ctx.Err())
		}
		sw.Checked++
		if e.Meta[MetaCoalescedInto] != "" || ended[e.SignalID] {
			continue // in its leader's wave, or its wave has ended
		}
		if finder != nil {
			ok, err := finder.WaveExists(ctx, e.SignalID)
			if err != nil {
				fail(e.SignalID, err)
				continue
			}
			if ok {
				continue
			}
		}
		// A leader whose window is open is its observer's to start.
		_, started, err := o.startRecorded(ctx, e, false)
		if errors.Is(err, errAttaching) {
			sw.Waiting = append(sw.Waiting, e.SignalID)
			continue
		}
		if err != nil {
			fail(e.SignalID, err)
			continue
		}
		if finder != nil && started {
			sw.Started = append(sw.Started, e.SignalID)
			o.opts.Logger.WarnContext(ctx, "outbox: started the wave of a signal recorded without one", "signal_id", e.SignalID,
				"recorded_at", e.CreatedAt.Format(time.RFC3339Nano))
		}
	}
	return sw, nil
}

// SweepSettle is how long after its CreatedAt a signal-received entry is
// taken to be readable: a sweep's window up to SweepSettle before it began is
// done, and the next sweep starts there.
const SweepSettle = time.Minute

// OutboxSweeper runs outbox sweeps one after another, each from where the
// last one that started every wave it found ended, so that a signal is read
// by about one sweep rather than by every sweep of a fixed lookback. Both
// homes use it: `ora dev` keeps the position in memory (a restart sweeps its
// whole lookback), the AWS sweep function in the ledger.
type OutboxSweeper struct {
	Observer *Observer
	// Positions keeps where the sweeps got to; nil: in memory.
	Positions Positions
	// Lookback bounds the window when no position is kept or it is older.
	Lookback time.Duration
	// Threshold: signals younger than it are left to their capture (and on
	// AWS to the ledger's stream); zero sweeps up to a minute ahead.
	Threshold time.Duration

	mu   sync.Mutex
	done time.Time // in memory when Positions is nil
}

// Positions keeps an outbox sweep's position, the time up to which every
// signal has a wave; LedgerCheckpoints is one.
type Positions interface {
	Checkpoint(ctx context.Context, stream, shard string) (string, error)
	SaveCheckpoint(ctx context.Context, stream, shard, seq string) error
}

// The stream and shard names of the sweep's position among checkpoints.
const (
	sweepStream = "outbox"
	sweepShard  = "sweep"
)

// SweepPositionID is the pseudo signal id under which a ledger-kept sweep
// position is appended (LedgerCheckpoints): the only partition the AWS sweep
// function may write.
func SweepPositionID() string { return CheckpointID(sweepStream, sweepShard) }

// Sweep runs one sweep at now: over [max(now-Lookback, position), now -
// Threshold), and when every wave it found started, it moves the position
// to the window's end (or SweepSettle before now, if earlier). Errors:
// StartMissing's, the position's reads and writes (ETRANSIENT).
func (s *OutboxSweeper) Sweep(ctx context.Context, now time.Time) (Sweep, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := now.Add(-s.Lookback)
	if done, err := s.position(ctx); err != nil {
		return Sweep{}, err
	} else if done.After(from) {
		from = done
	}
	to := now.Add(time.Minute)
	if s.Threshold > 0 {
		to = now.Add(-s.Threshold)
	}
	if !from.Before(to) {
		return Sweep{}, nil
	}
	sw, err := s.Observer.StartMissing(ctx, from, to)
	if err != nil || len(sw.Failed) > 0 || len(sw.Waiting) > 0 {
		return sw, err
	}
	done := to
	if settled := now.Add(-SweepSettle); settled.Before(done) {
		done = settled
	}
	if done.After(from) {
		if err := s.save(ctx, done); err != nil {
			return sw, err
		}
	}
	return sw, nil
}

func (s *OutboxSweeper) position(ctx context.Context) (time.Time, error) {
	if s.Positions == nil {
		return s.done, nil
	}
	seq, err := s.Positions.Checkpoint(ctx, sweepStream, sweepShard)
	if err != nil || seq == "" {
		return time.Time{}, err
	}
	ns, err := strconv.ParseInt(seq, 10, 64)
	if err != nil {
		return time.Time{}, ora.Errorf(ora.EINTERNAL, "outbox sweep position %q is not a time in nanoseconds", seq)
	}
	return time.Unix(0, ns).UTC(), nil
}

func (s *OutboxSweeper) save(ctx context.Context, done time.Time) error {
	if s.Positions == nil {
		s.done = done
		return nil
	}
	return s.Positions.SaveCheckpoint(ctx, sweepStream, sweepShard, strconv.FormatInt(done.UnixNano(), 10))
}

// startStreamed starts the wave of a signal whose signal-received insert the
// ledger's stream delivered. With coalescing on, the entry is read first: a
// signal attached to another's wave starts none, a leader's waits for its
// window to close.
func (o *Observer) startStreamed(ctx context.Context, id string) (Receipt, error) {
	e := ora.Entry{SignalID: id}
	if o.opts.Coalescer != nil && o.opts.Coalesce.Window > 0 {
		es, err := ora.EntriesOfKinds(ctx, o.ledger, id, ora.KindSignalReceived)
		if err != nil {
			return Receipt{}, fmt.Errorf("outbox: read signal %s: %w", id, err)
		}
		e = firstOf(es, id)
	}
	wave, _, err := o.startRecorded(ctx, e, true)
	if err != nil {
		return Receipt{}, fmt.Errorf("outbox: start wave %s: %w", id, err)
	}
	return Receipt{SignalID: id, WaveID: wave, Duplicate: true}, nil
}

// startWave starts the wave named signalID with the observer's wave input.
func (o *Observer) startWave(ctx context.Context, signalID string) error {
	input, _ := json.Marshal(waveInput{SignalID: signalID, EscalationTimeoutSeconds: int64(o.opts.EscalationTimeout / time.Second)})
	return o.waves.StartWave(ctx, signalID, input)
}

// recordedSignal returns the signal id of a DynamoDB Streams record that
// inserts a signal-received entry into the ledger table.
func recordedSignal(raw []byte) (string, bool) {
	var r struct {
		EventName string `json:"eventName"`
		DynamoDB  struct {
			Keys struct {
				PK struct {
					S string `json:"S"`
				} `json:"PK"`
				SK struct {
					S string `json:"S"`
				} `json:"SK"`
			} `json:"Keys"`
		} `json:"dynamodb"`
	}
	if json.Unmarshal(raw, &r) != nil || r.EventName != "INSERT" || r.DynamoDB.Keys.SK.S != SignalReceivedSortKey {
		return "", false
	}
	id, ok := strings.CutPrefix(r.DynamoDB.Keys.PK.S, SignalKeyPrefix)
	return id, ok && id != ""
}
