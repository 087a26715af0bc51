package console

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
)

// Statuses reads a wave's status alone, without its history: the runtime's
// engine is one. Optional: without it the list reads Waves.
type Statuses interface {
	// WaveStatus returns the wave's execution status. Errors: ENOTFOUND
	// (not started), ETRANSIENT.
	WaveStatus(ctx context.Context, id string) (string, error)
}

// MaxIndexed bounds the waves the list's index keeps (the newest).
const MaxIndexed = 100_000

// overlap is how far back each refresh of the index reads again, for entries
// committed a little out of their creation order.
const overlap = 5 * time.Second

// summary is one wave as the list shows it.
type summary struct {
	id, source string
	event      string // the signal's event type
	started    time.Time
	status     string // "" until read
}

// decided is what the list keeps of a wave's newest decision.
type decided struct {
	at      time.Time
	band    string
	actions []string
}

// ended is what the list keeps of a wave's final verdict.
type ended struct {
	at      time.Time
	outcome string // completed, rejected, failed
	actions []actionOutcome
}

// actionOutcome is one action of a final verdict.
type actionOutcome struct {
	Type    string `json:"type"`
	Outcome string `json:"outcome"` // success, failure, unknown, skipped, pending
}

// final reports whether a status never changes again.
func final(status string) bool {
	switch status {
	case "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", StatusExpired:
		return true
	}
	return false
}

// index is the waves list's summaries, one per wave, kept in memory and
// refreshed from the ledger by reading only what is new: the signals and
// decisions recorded since the last refresh (each entry is written once, so
// nothing read changes). A wave's status is read while it may still change
// and kept once final. A request therefore costs two small ledger reads and
// a filter over memory, whatever the number of waves.
type index struct {
	mu        sync.Mutex
	waves     []*summary // newest first
	byID      map[string]*summary
	decisions map[string]decided // signal id -> its newest decision
	verdicts  map[string]ended   // signal id -> its final verdict
	lastSig   time.Time          // newest created_at read, per kind
	lastDec   time.Time
	lastFin   time.Time
	refreshed bool
}

// refresh reads the signals and decisions recorded since the last refresh.
// Call with ix.mu held.
func (ix *index) refresh(ctx context.Context, l Ledger, now time.Time) error {
	if ix.byID == nil {
		ix.byID, ix.decisions, ix.verdicts = map[string]*summary{}, map[string]decided{}, map[string]ended{}
	}
	from := now.Add(-Lookback)
	sigFrom, decFrom, finFrom := from, from, from
	if ix.refreshed {
		sigFrom, decFrom, finFrom = maxTime(from, ix.lastSig.Add(-overlap)), maxTime(from, ix.lastDec.Add(-overlap)), maxTime(from, ix.lastFin.Add(-overlap))
	}
	to := now.Add(time.Minute)
	var added []*summary
	err := recent(ctx, l, ora.KindSignalReceived, sigFrom, to, func(e ora.Entry) {
		if _, ok := ix.byID[e.SignalID]; ok {
			return
		}
		var sig struct {
			Source struct {
				EventType string `json:"event_type"`
			} `json:"source"`
		}
		_ = json.Unmarshal(e.Body, &sig)
		s := &summary{id: e.SignalID, source: e.Meta["source"], event: sig.Source.EventType, started: e.CreatedAt}
		ix.byID[s.id] = s
		added = append(added, s)
		ix.lastSig = maxTime(ix.lastSig, e.CreatedAt)
	})
	if err != nil {
		return fmt.Errorf("console: waves: %w", err)
	}
	// The newest decision of a wave (a resumed wave may decide again) wins.
	err = recent(ctx, l, ora.KindReasonerDecision, decFrom, to, func(e ora.Entry) {
		var d struct { // the fields the list shows, no more
			ActionType string  `json:"action_type"`
			Confidence float64 `json:"confidence"`
			Actions    []struct {
				Type string `json:"type"`
			} `json:"actions"`
		}
		if old, ok := ix.decisions[e.SignalID]; (!ok || e.CreatedAt.After(old.at)) && json.Unmarshal(e.Body, &d) == nil {
			v := decided{at: e.CreatedAt, band: string(ora.BandOf(d.Confidence)), actions: []string{d.ActionType}}
			if len(d.Actions) > 0 { // as ora.ReasonerDecision.Plan reads them
				v.actions = v.actions[:0]
				for _, a := range d.Actions {
					v.actions = append(v.actions, a.Type)
				}
			}
			ix.decisions[e.SignalID] = v
		}
		ix.lastDec = maxTime(ix.lastDec, e.CreatedAt)
	})
	if err != nil {
		return fmt.Errorf("console: decisions: %w", err)
	}
	err = recent(ctx, l, ora.KindFinalVerdict, finFrom, to, func(e ora.Entry) {
		var v struct {
			Outcome string          `json:"outcome"`
			Actions []actionOutcome `json:"actions"`
		}
		if old, ok := ix.verdicts[e.SignalID]; (!ok || e.CreatedAt.After(old.at)) && json.Unmarshal(e.Body, &v) == nil {
			ix.verdicts[e.SignalID] = ended{at: e.CreatedAt, outcome: v.Outcome, actions: v.Actions}
		}
		ix.lastFin = maxTime(ix.lastFin, e.CreatedAt)
	})
	if err != nil {
		return fmt.Errorf("console: verdicts: %w", err)
	}
	if len(added) > 0 {
		ix.waves = append(added, ix.waves...)
		sort.SliceStable(ix.waves, func(i, j int) bool { return ix.waves[i].started.After(ix.waves[j].started) })
		for len(ix.waves) > MaxIndexed {
			delete(ix.byID, ix.waves[len(ix.waves)-1].id)
			delete(ix.decisions, ix.waves[len(ix.waves)-1].id)
			delete(ix.verdicts, ix.waves[len(ix.waves)-1].id)
			ix.waves = ix.waves[:len(ix.waves)-1]
		}
	}
	ix.refreshed = true
	return nil
}

// chunk is how many entries one read of the index's refresh holds: the
// first fill of a long ledger reads its waves a chunk at a time, keeping
// only their summaries.
const chunk = 500

// recent calls fn with every entry of kind created in [from, to), newest
// first, reading chunk entries at a time. Errors: the ledger's.
func recent(ctx context.Context, l Ledger, kind ora.EntryKind, from, to time.Time, fn func(ora.Entry)) error {
	seen := map[string]bool{} // entries at a chunk's boundary are read twice
	for read := 0; read < MaxIndexed; {
		es, err := l.Recent(ctx, kind, from, to, chunk)
		if err != nil {
			return err
		}
		for _, e := range es {
			if key := e.SignalID + "/" + e.Qualifier; !seen[key] {
				seen[key] = true
				fn(e)
				read++
			}
		}
		if len(es) < chunk {
			return nil
		}
		oldest := es[len(es)-1].CreatedAt
		if oldest.Add(time.Nanosecond).Equal(to) {
			to = oldest // a whole chunk at one instant: go on with older ones
		} else {
			to = oldest.Add(time.Nanosecond) // the boundary's instant again, then older ones
		}
		// Only the boundary's entries can be read again.
		clear(seen)
		for _, e := range es {
			if e.CreatedAt.Equal(oldest) {
				seen[e.SignalID+"/"+e.Qualifier] = true
			}
		}
	}
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// status returns the wave's status, read unless known final; hasVerdict
// says whether the ledger holds its final verdict.
func (s *Server) status(ctx context.Context, w *summary, hasVerdict bool) (string, error) {
	if final(w.status) {
		return w.status, nil
	}
	var st string
	var err error
	if s.Statuses != nil {
		st, err = s.Statuses.WaveStatus(ctx, w.id)
	} else {
		var wave httpapi.Wave
		wave, err = s.Waves.Wave(ctx, w.id)
		st = wave.Status
	}
	switch {
	case err == nil:
	case ora.ErrorCode(err) == ora.ENOTFOUND:
		st = unexecuted(hasVerdict)
	default:
		return "", err
	}
	w.status = st
	return st, nil
}
