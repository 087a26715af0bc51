package console

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// WaveRow is one line of the waves list: what happened, in one line.
type WaveRow struct {
	ID, Source, Status, Band, Started string
	Event                             string          // the signal's event type
	Actions                           []ActionSummary // what the decision ran, with each outcome once known
	Outcome                           string          // completed, rejected, failed, in progress, waiting
	Duration                          string          // signal to final verdict, or so far
}

// ActionSummary is one action of a wave and its outcome ("" until known).
type ActionSummary struct {
	Type, Outcome string
}

// The outcomes the list filters on.
const (
	OutcomeCompleted  = "completed"
	OutcomeRejected   = "rejected"
	OutcomeFailed     = "failed"
	OutcomeInProgress = "in progress"
)

// listFilter is the list's query: each field empty matches every wave.
type listFilter struct {
	status, source, band, event, outcome string
}

func (s *Server) waves(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := listFilter{status: q.Get("status"), source: q.Get("source"), band: q.Get("band"), event: q.Get("event"), outcome: q.Get("outcome")}
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	rows, more, srcs, events, err := s.list(r.Context(), f, page)
	if err != nil {
		return err
	}
	data := map[string]any{
		"Title": "Waves", "Nav": "waves", "Rows": rows, "Query": q, "Status": f.status, "Source": f.source, "Band": f.band,
		"Event": f.event, "Outcome": f.outcome, "Events": events,
		"Sources": srcs, "Page": page, "Prev": page - 1, "Next": page + 1, "More": more,
		"Statuses": []string{"RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", StatusExpired},
		"Bands":    []string{"high", "medium", "low"},
		"Outcomes": []string{OutcomeCompleted, OutcomeRejected, OutcomeFailed, OutcomeInProgress},
		"Filtered": f != listFilter{},
	}
	if q.Get("fragment") == "rows" {
		s.render(w, r, "rows", data)
		return nil
	}
	s.render(w, r, "waves", data)
	return nil
}

// outcome words a wave's end: its final verdict's outcome, else what its
// status says.
func outcome(status string, v ended, ok bool) string {
	switch {
	case ok && v.outcome != "":
		return v.outcome
	case status == "RUNNING" || status == "NOT_STARTED":
		return OutcomeInProgress
	case status == "SUCCEEDED":
		return OutcomeCompleted
	}
	return OutcomeFailed
}

// list returns a page of the list's rows under f, whether more follow, and
// every source and event type seen.
func (s *Server) list(ctx context.Context, f listFilter, page int) ([]WaveRow, bool, []string, []string, error) {
	ix := &s.index
	ix.mu.Lock()
	defer ix.mu.Unlock()
	now := s.Now()
	if err := ix.refresh(ctx, s.Ledger, now); err != nil {
		return nil, false, nil, nil, err
	}
	var rows []WaveRow
	sources, events := map[string]bool{}, map[string]bool{}
	skip, more := (page-1)*PageSize, false
	for _, w := range ix.waves {
		sources[w.source], events[w.event] = true, true
		if more || (f.source != "" && w.source != f.source) || (f.event != "" && w.event != f.event) {
			continue // keep collecting the sources and events for the filters
		}
		d := ix.decisions[w.id]
		b := d.band
		if b == "" {
			b = "-"
		}
		if f.band != "" && b != f.band {
			continue
		}
		v, final := ix.verdicts[w.id]
		st, err := s.status(ctx, w, final)
		if err != nil {
			return nil, false, nil, nil, err
		}
		if f.status != "" && st != f.status {
			continue
		}
		out := outcome(st, v, final)
		if f.outcome != "" && out != f.outcome {
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
		row := WaveRow{ID: w.id, Source: w.source, Event: w.event, Status: st, Band: b, Outcome: out,
			Started: w.started.UTC().Format("2006-01-02 15:04:05")}
		if row.Event == "" {
			row.Event = w.source
		}
		row.Actions = actionSummaries(d.actions, v.actions)
		switch {
		case final:
			row.Duration = duration(v.at.Sub(w.started))
		case st == "RUNNING":
			row.Duration = duration(now.Sub(w.started).Truncate(time.Second)) + " so far"
		}
		rows = append(rows, row)
	}
	return rows, more, keys(sources), keys(events), nil
}

// actionSummaries pairs the decision's actions with the verdict's outcomes.
func actionSummaries(planned []string, done []actionOutcome) []ActionSummary {
	var out []ActionSummary
	for i, t := range planned {
		a := ActionSummary{Type: t}
		if i < len(done) && done[i].Type == t {
			a.Outcome = done[i].Outcome
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		for _, d := range done {
			out = append(out, ActionSummary(d))
		}
	}
	return out
}

// keys returns the set's non-empty keys, sorted.
func keys(set map[string]bool) []string {
	var out []string
	for k := range set {
		if strings.TrimSpace(k) != "" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// OutcomeClass is the outcome as a CSS class name.
func (r WaveRow) OutcomeClass() string { return "f-" + strings.ReplaceAll(r.Outcome, " ", "-") }
