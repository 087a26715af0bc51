package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/statemachines"
)

// Executions reads the history of a child execution: the wave's Express
// children (reason, act) that its Task states start. The local engine is
// one; without it the children are drawn without their run.
type Executions interface {
	// ExecutionHistory returns the execution's history events as JSON, in
	// the shape of GetExecutionHistory's events. Errors: ENOTFOUND.
	ExecutionHistory(ctx context.Context, executionArn string) ([]byte, error)
}

// Panel is the side panel of one state: what the history says of it.
type Panel struct {
	StateRun
	Key, Type string
	Child     string // the child it ran in ("" for the wave's own states)
	In, Out   httpapi.Rendering
	InURL     string // the raw input and output
	OutURL    string
	Selected  bool
}

// ChildView is one child state machine drawn inline under its parent state.
type ChildView struct {
	Name, ParentState string
	Graph             Graph
	Ran, States       int // states that ran, states drawn
	Open              bool
}

// waveRun is a wave's history read: its states, events and transitions,
// and each child's.
type waveRun struct {
	wave     httpapi.Wave
	chart    chart
	states   []StateRun
	events   []EventRow
	taken    Transitions
	children []childRun
}

type childRun struct {
	child  statemachines.Child
	chart  chart
	states []StateRun
	taken  Transitions
}

// readRun reads wave id and its children's runs.
func (s *Server) readRun(ctx context.Context, id string) (waveRun, error) {
	wave, err := s.Waves.Wave(ctx, id)
	if err != nil {
		return waveRun{}, err
	}
	return s.runOf(ctx, wave)
}

// StatusExpired is the status the console shows for a wave whose final
// verdict the ledger holds and whose execution the engine no longer has:
// its history was removed by retention.
const StatusExpired = "EXPIRED"

// unexecuted is the status of a wave the ledger holds and the engine does
// not: expired when it has a final verdict, else not started yet (the
// outbox starts it).
func unexecuted(hasVerdict bool) string {
	if hasVerdict {
		return StatusExpired
	}
	return "NOT_STARTED"
}

// runOf reads the children's runs of wave.
func (s *Server) runOf(ctx context.Context, wave httpapi.Wave) (waveRun, error) {
	c, err := parseChart(s.Definition)
	if err != nil {
		return waveRun{}, err
	}
	states, events, taken, err := runs(wave.History, wave.Status, c.follows)
	if err != nil {
		return waveRun{}, err
	}
	wr := waveRun{wave: wave, chart: c, states: states, events: events, taken: taken}
	for _, ch := range s.Children {
		cc, err := parseChart(ch.Definition)
		if err != nil {
			return waveRun{}, err
		}
		cr := childRun{child: ch, chart: cc}
		var parent StateRun
		for _, st := range states {
			if st.Name == ch.ParentState {
				parent = st
			}
		}
		if parent.Execution != "" && s.Executions != nil {
			if h, err := s.Executions.ExecutionHistory(ctx, parent.Execution); err == nil {
				status := "SUCCEEDED"
				switch parent.Status {
				case "running":
					status = "RUNNING"
				case "failed", "caught":
					status = "FAILED"
				}
				cr.states, _, cr.taken, _ = runs(h, status, cc.follows)
			} else if ora.ErrorCode(err) != ora.ENOTFOUND {
				s.Logger.WarnContext(ctx, "console: child history", "execution", parent.Execution, "err", err)
			}
		}
		wr.children = append(wr.children, cr)
	}
	return wr, nil
}

// state finds a state by its key: its name, or "child/name".
func (wr waveRun) state(key string) (StateRun, string, bool) {
	for _, cr := range wr.children {
		if name, ok := strings.CutPrefix(key, cr.child.Name+"/"); ok {
			for _, st := range cr.states {
				if st.Name == name {
					return st, cr.child.Name, true
				}
			}
		}
	}
	for _, st := range wr.states {
		if st.Name == key {
			return st, "", true
		}
	}
	return StateRun{}, "", false
}

func byName(states []StateRun) map[string]StateRun {
	m := make(map[string]StateRun, len(states))
	for _, st := range states {
		m[st.Name] = st
	}
	return m
}

func (s *Server) wave(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PathValue("id")
	entries, err := s.Ledger.Entries(ctx, id)
	if err != nil && ora.ErrorCode(err) != ora.ENOTFOUND {
		return err
	}
	wr, err := s.readRun(ctx, id)
	if ora.ErrorCode(err) == ora.ENOTFOUND && len(entries) > 0 {
		// The ledger keeps what the engine's retention removed.
		verdict := slices.ContainsFunc(entries, func(e ora.Entry) bool { return e.Kind == ora.KindFinalVerdict })
		wr, err = s.runOf(ctx, httpapi.Wave{WaveID: id, Status: unexecuted(verdict)})
	}
	if err != nil {
		return err
	}
	var pending []Approval
	for _, e := range entries {
		if e.Kind == ora.KindArchitectIntent {
			if st, err := s.Ledger.Decision(ctx, e.Meta["decision_id"]); err == nil && st.Status == ora.StatusAwaitingApproval {
				if len(pending) == 0 || pending[0].DecisionID != st.DecisionID {
					pending = []Approval{{DecisionID: st.DecisionID, SignalID: id, Since: e.CreatedAt}}
				}
			}
		}
	}
	q := r.URL.Query()
	selected := q.Get("state")
	if _, _, ok := wr.state(selected); !ok {
		selected = defaultState(wr.states)
	}
	graph := wr.chart.layout("", byName(wr.states), wr.taken)
	graph.ID, graph.Selected = "wave", selected
	for i, n := range graph.Nodes {
		for _, ch := range s.Children {
			if ch.ParentState == n.Name {
				graph.Nodes[i].Child = ch.Name
			}
		}
	}
	types := map[string]string{}
	for _, n := range graph.Nodes {
		types[n.Key] = n.Type
	}
	var kids []ChildView
	for _, cr := range wr.children {
		g := cr.chart.layout(cr.child.Name+"/", byName(cr.states), cr.taken)
		g.ID, g.Selected = "child-"+cr.child.Name, selected
		for _, n := range g.Nodes {
			types[n.Key] = n.Type
		}
		kids = append(kids, ChildView{Name: cr.child.Name, ParentState: cr.child.ParentState, Graph: g, Ran: len(cr.states), States: len(g.Nodes),
			Open: q.Get("expand") == cr.child.Name || strings.HasPrefix(selected, cr.child.Name+"/")})
	}
	var panels []Panel
	add := func(child string, st StateRun) {
		key := st.Name
		if child != "" {
			key = child + "/" + st.Name
		}
		raw := "/console/waves/" + url.PathEscape(id) + "/raw?state=" + url.QueryEscape(key) + "&part="
		panels = append(panels, Panel{StateRun: st, Key: key, Type: types[key], Child: child, In: pretty([]byte(st.Input)), Out: pretty([]byte(st.Output)),
			InURL: raw + "input", OutURL: raw + "output", Selected: key == selected})
	}
	for _, st := range wr.states {
		add("", st)
		for _, cr := range wr.children {
			if cr.child.ParentState == st.Name {
				for _, cst := range cr.states {
					add(cr.child.Name, cst)
				}
			}
		}
	}
	sum := summarize(entries, wr, s.Now())
	s.render(w, r, "wave", map[string]any{
		"Title": "Wave " + id, "Nav": "waves", "Wave": wr.wave, "Graph": graph, "Children": kids, "Events": wr.events,
		"Panels": panels, "Selected": selected, "Summary": sum, "Cards": cards(id, entries, s.Objects != nil),
		"Pending": pending, "Live": wr.wave.Status == "RUNNING", "Settled": q.Get("settled"),
		"Short": short(id),
	})
	return nil
}

// defaultState is the state the panel shows first: the last that failed,
// else the last entered.
func defaultState(states []StateRun) string {
	name := ""
	for _, st := range states {
		if st.Status == "failed" || st.Status == "caught" {
			name = st.Name
		}
	}
	if name == "" && len(states) > 0 {
		name = states[len(states)-1].Name
	}
	return name
}

// short shortens an id for display: the full one goes in a title.
func short(id string) string {
	if len(id) <= 16 {
		return id
	}
	return id[:12] + "…"
}

// raw serves one body of a wave as it is stored, compact, secrets blanked:
// ?entry=N is its Nth ledger entry (from 0), ?state=NAME&part=input|output
// a state's input or output (a child's state: child/NAME). It is the link
// a truncated rendering points to.
func (s *Server) raw(w http.ResponseWriter, r *http.Request) error {
	ctx, id, q := r.Context(), r.PathValue("id"), r.URL.Query()
	var body []byte
	switch {
	case q.Has("entry"):
		n, err := strconv.Atoi(q.Get("entry"))
		if err != nil || n < 0 {
			return ora.Invalid("entry", "%q is not an entry's index", q.Get("entry"))
		}
		entries, err := s.Ledger.Entries(ctx, id)
		if err != nil {
			return err
		}
		if n >= len(entries) {
			return ora.Errorf(ora.ENOTFOUND, "wave %s has %d entries", id, len(entries))
		}
		body = entries[n].Body
	case q.Has("state"):
		wr, err := s.readRun(ctx, id)
		if err != nil {
			return err
		}
		st, _, ok := wr.state(q.Get("state"))
		if !ok {
			return ora.Errorf(ora.ENOTFOUND, "wave %s has no state %q", id, q.Get("state"))
		}
		body = []byte(st.Input)
		if q.Get("part") == "output" {
			body = []byte(st.Output)
		}
	default:
		return ora.Invalid("entry", "name an entry (?entry=N) or a state (?state=NAME&part=input|output)")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(s.Secrets.Redact(rawBody(body)))
	return nil
}

// waveDuration is how long the wave ran: its history's first event to its
// last, or to now while it runs.
func waveDuration(history []byte, status string, now time.Time) string {
	first, last := historySpan(history)
	if first.IsZero() {
		return ""
	}
	if status == "RUNNING" {
		return duration(now.Sub(first).Truncate(time.Second)) + " so far"
	}
	return duration(last.Sub(first))
}

// historySpan is the time of a history's first and last events.
func historySpan(history []byte) (first, last time.Time) {
	var evs []struct {
		Timestamp time.Time `json:"timestamp"`
	}
	if json.Unmarshal(history, &evs) != nil || len(evs) == 0 {
		return
	}
	return evs[0].Timestamp, evs[len(evs)-1].Timestamp
}
