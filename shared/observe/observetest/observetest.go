// Package observetest holds in-memory stand-ins for the observer's
// dependencies, for tests of the observer and of the functions that wire it:
// a ledger that keeps signal entries under a mutex with the real conditional
// append semantics, a wave starter idempotent by name like Step Functions, and
// a debouncer.
package observetest

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Ledger is an in-memory ora.Ledger for entries only: Append and Entries
// behave like the real adapters (validation, write-once, ECONFLICT carrying
// the stored entry); the decision and commitment methods return EINTERNAL.
// AppendHook, when set, runs before each append and may fail it.
type Ledger struct {
	AppendHook func(e ora.Entry) error

	mu      sync.Mutex
	entries map[[3]string]ora.Entry
}

var _ ora.Ledger = (*Ledger)(nil)

// Append writes e once. Errors: EINVALID, ECONFLICT with the stored entry, or
// what AppendHook returns.
func (l *Ledger) Append(_ context.Context, e ora.Entry) (ora.Entry, error) {
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now().UTC()
	}
	if e.Digest == "" {
		e.Digest = ora.Digest(e.Body)
	}
	if err := e.Validate(); err != nil {
		return ora.Entry{}, err
	}
	if l.AppendHook != nil {
		if err := l.AppendHook(e); err != nil {
			return ora.Entry{}, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.entries == nil {
		l.entries = map[[3]string]ora.Entry{}
	}
	k := [3]string{e.SignalID, string(e.Kind), e.Qualifier}
	if old, ok := l.entries[k]; ok {
		return ora.Entry{}, ora.Conflict(old, "entry %s/%s/%s exists", e.SignalID, e.Kind, e.Qualifier)
	}
	l.entries[k] = e
	return e, nil
}

// Entries returns a signal's entries in ledger order. Errors: ENOTFOUND.
func (l *Ledger) Entries(_ context.Context, signalID string) ([]ora.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ora.Entry
	for _, e := range l.entries {
		if e.SignalID == signalID {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, ora.Errorf(ora.ENOTFOUND, "no entries for signal %s", signalID)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		if out[i].Kind != out[j].Kind {
			return out[i].Kind.Rank() < out[j].Kind.Rank()
		}
		return out[i].Qualifier < out[j].Qualifier
	})
	return out, nil
}

// Len returns how many entries are stored.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

func unsupported(op string) error {
	return ora.Errorf(ora.EINTERNAL, "observetest: %s is not supported", op)
}

// Recent is not supported: EINTERNAL.
func (l *Ledger) Recent(context.Context, ora.EntryKind, time.Time, time.Time, int) ([]ora.Entry, error) {
	return nil, unsupported("Recent")
}

// RecordDecision is not supported: EINTERNAL.
func (l *Ledger) RecordDecision(context.Context, ora.ReasonerDecision) (ora.Entry, error) {
	return ora.Entry{}, unsupported("RecordDecision")
}

// Decision is not supported: EINTERNAL.
func (l *Ledger) Decision(context.Context, string) (ora.DecisionState, error) {
	return ora.DecisionState{}, unsupported("Decision")
}

// TransitionDecision is not supported: EINTERNAL.
func (l *Ledger) TransitionDecision(context.Context, string, ora.DecisionStatus, ora.DecisionStatus, string) (ora.DecisionState, error) {
	return ora.DecisionState{}, unsupported("TransitionDecision")
}

// OpenCommitment is not supported: EINTERNAL.
func (l *Ledger) OpenCommitment(context.Context, ora.Commitment) (ora.Commitment, error) {
	return ora.Commitment{}, unsupported("OpenCommitment")
}

// CloseCommitment is not supported: EINTERNAL.
func (l *Ledger) CloseCommitment(context.Context, string, string) (ora.Commitment, error) {
	return ora.Commitment{}, unsupported("CloseCommitment")
}

// OpenCommitments is not supported: EINTERNAL.
func (l *Ledger) OpenCommitments(context.Context, int) ([]ora.Commitment, error) {
	return nil, unsupported("OpenCommitments")
}

// Waves is a wave starter idempotent by name, like Step Functions execution
// names: the first StartWave of a name starts it, later ones are no-ops. Fail,
// when set, runs first on every call and may fail it (the wave then does not
// start).
type Waves struct {
	Fail func(signalID string) error

	mu      sync.Mutex
	started map[string][]byte
	calls   int
}

// StartWave starts the wave signalID once. Errors: what Fail returns.
func (w *Waves) StartWave(_ context.Context, signalID string, input []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	if w.Fail != nil {
		if err := w.Fail(signalID); err != nil {
			return err
		}
	}
	if w.started == nil {
		w.started = map[string][]byte{}
	}
	if _, ok := w.started[signalID]; !ok {
		w.started[signalID] = append([]byte(nil), input...)
	}
	return nil
}

// Started returns the names of the waves started, sorted.
func (w *Waves) Started() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.started))
	for k := range w.started {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Input returns the input a wave was started with.
func (w *Waves) Input(signalID string) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in, ok := w.started[signalID]
	return in, ok
}

// WaveExists reports whether the wave signalID was started (an
// observe.WaveFinder).
func (w *Waves) WaveExists(_ context.Context, signalID string) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.started[signalID]
	return ok, nil
}

// Calls returns how many times StartWave was called.
func (w *Waves) Calls() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls
}

// Debouncer is an in-memory ora.Debouncer on the clock Now (default
// time.Now): the first call for a key in a window wins.
type Debouncer struct {
	Now func() time.Time

	mu   sync.Mutex
	last map[string]time.Time
}

var _ ora.Debouncer = (*Debouncer)(nil)

// Debounce reports whether this is the first call for key within window.
// Errors: EINVALID for an empty key or a non-positive window.
func (d *Debouncer) Debounce(_ context.Context, key string, window time.Duration) (bool, error) {
	if key == "" || window <= 0 {
		return false, ora.Invalid("debounce", "key and a positive window required")
	}
	now := time.Now()
	if d.Now != nil {
		now = d.Now()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last == nil {
		d.last = map[string]time.Time{}
	}
	if at, ok := d.last[key]; ok && now.Sub(at) < window {
		return false, nil
	}
	d.last[key] = now
	return true, nil
}

// Commit is not supported: EINTERNAL.
func (l *Ledger) Commit(context.Context, ora.Stage) (ora.Committed, error) {
	return ora.Committed{}, unsupported("Commit")
}
