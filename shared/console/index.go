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
	started    time.Time
	status     string // "" until read
}

// final reports whether a status never changes again.
func final(status string) bool {
	switch status {
	case "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED":
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
	bands     map[string]string // signal id -> band of its decision
	lastSig   time.Time         // newest created_at read, per kind
	lastDec   time.Time
	refreshed bool
}

// refresh reads the signals and decisions recorded since the last refresh.
// Call with ix.mu held.
func (ix *index) refresh(ctx context.Context, l Ledger, now time.Time) error {
	if ix.byID == nil {
		ix.byID, ix.bands = map[string]*summary{}, map[string]string{}
	}
	from := now.Add(-Lookback)
	sigFrom, decFrom := from, from
	if ix.refreshed {
		sigFrom, decFrom = maxTime(from, ix.lastSig.Add(-overlap)), maxTime(from, ix.lastDec.Add(-overlap))
	}
	to := now.Add(time.Minute)
	var added []*summary
	err := recent(ctx, l, ora.KindSignalReceived, sigFrom, to, func(e ora.Entry) {
		if _, ok := ix.byID[e.SignalID]; ok {
			return
		}
		s := &summary{id: e.SignalID, source: e.Meta["source"], started: e.CreatedAt}
		ix.byID[s.id] = s
		added = append(added, s)
		ix.lastSig = maxTime(ix.lastSig, e.CreatedAt)
	})
	if err != nil {
		return fmt.Errorf("console: waves: %w", err)
	}
	decided := map[string]time.Time{} // the newest decision of a wave (a resumed wave may decide again) wins
	err = recent(ctx, l, ora.KindReasonerDecision, decFrom, to, func(e ora.Entry) {
		var d struct {
			Confidence float64 `json:"confidence"`
		}
		if at, ok := decided[e.SignalID]; (!ok || e.CreatedAt.After(at)) && json.Unmarshal(e.Body, &d) == nil {
			ix.bands[e.SignalID], decided[e.SignalID] = string(ora.BandOf(d.Confidence)), e.CreatedAt
		}
		ix.lastDec = maxTime(ix.lastDec, e.CreatedAt)
	})
	if err != nil {
		return fmt.Errorf("console: decisions: %w", err)
	}
	if len(added) > 0 {
		ix.waves = append(added, ix.waves...)
		sort.SliceStable(ix.waves, func(i, j int) bool { return ix.waves[i].started.After(ix.waves[j].started) })
		for len(ix.waves) > MaxIndexed {
			delete(ix.byID, ix.waves[len(ix.waves)-1].id)
			delete(ix.bands, ix.waves[len(ix.waves)-1].id)
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

// status returns the wave's status, read unless known final.
func (s *Server) status(ctx context.Context, w *summary) (string, error) {
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
		st = "NOT_STARTED"
	default:
		return "", err
	}
	w.status = st
	return st, nil
}

// list returns a page of the list's rows under the filters, whether more
// follow, and every source seen.
func (s *Server) list(ctx context.Context, status, source, band string, page int) ([]WaveRow, bool, []string, error) {
	ix := &s.index
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.refresh(ctx, s.Ledger, s.Now()); err != nil {
		return nil, false, nil, err
	}
	var rows []WaveRow
	sources := map[string]bool{}
	skip, more := (page-1)*PageSize, false
	for _, w := range ix.waves {
		sources[w.source] = true
		if more || (source != "" && w.source != source) {
			continue // keep collecting the sources for the filter
		}
		b := ix.bands[w.id]
		if b == "" {
			b = "-"
		}
		if band != "" && b != band {
			continue
		}
		st, err := s.status(ctx, w)
		if err != nil {
			return nil, false, nil, err
		}
		if status != "" && st != status {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if len(rows) == PageSize {
			more = true
			continue
		}
		rows = append(rows, WaveRow{ID: w.id, Source: w.source, Status: st, Band: b, Started: w.started.UTC().Format("2006-01-02 15:04:05")})
	}
	var srcs []string
	for k := range sources {
		if k != "" {
			srcs = append(srcs, k)
		}
	}
	sort.Strings(srcs)
	return rows, more, srcs, nil
}
