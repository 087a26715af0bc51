package console

import (
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// page is a console page's handler: it renders, or returns the error the
// error page shows.
type page = func(http.ResponseWriter, *http.Request) error

// operatorRoutes mounts the incidents, motor and orientation pages and their
// forms, each page only when its service is configured.
func (s *Server) operatorRoutes(mux *http.ServeMux) {
	if s.Operator != nil {
		mux.HandleFunc("GET /console/incidents", s.read(s.needs(httpapi.ScopeOperatorRead, false, s.incidents)))
		mux.HandleFunc("GET /console/incidents/{id}", s.read(s.needs(httpapi.ScopeOperatorRead, false, s.incident)))
		mux.Handle("POST /console/waves/{id}/resume", httpapi.SameOrigin(http.HandlerFunc(s.resume)))
		mux.Handle("POST /console/waves/{id}/resolve", httpapi.SameOrigin(http.HandlerFunc(s.resolve)))
	}
	if s.Motor != nil {
		mux.HandleFunc("GET /console/motor", s.read(s.needs(httpapi.ScopeOperatorRead, false, s.motorPage)))
		mux.Handle("POST /console/motor/versions/{version}/promote", httpapi.SameOrigin(http.HandlerFunc(s.promote)))
		mux.Handle("POST /console/motor/rollback", httpapi.SameOrigin(http.HandlerFunc(s.rollback)))
		mux.Handle("POST /console/motor/versions/{version}/canary", httpapi.SameOrigin(http.HandlerFunc(s.canary)))
	}
	if s.Operator != nil && s.Learned != nil {
		mux.Handle("POST /console/patterns/{id}/promote", httpapi.SameOrigin(http.HandlerFunc(s.promotePattern)))
	}
	if s.Orientation != nil {
		// The orientation routes of the API need their scope on loopback
		// too; so does this page (the development approver holds it).
		mux.HandleFunc("GET /console/orientation", s.read(s.needs(httpapi.ScopeOrientationRead, true, s.orientationPage)))
		mux.Handle("POST /console/orientation/proposals/{id}/{verdict}", httpapi.SameOrigin(http.HandlerFunc(s.decideProposal)))
	}
}

// pages says which of the operator's pages the nav links.
func (s *Server) pages() map[string]bool {
	return map[string]bool{"incidents": s.Operator != nil, "motor": s.Motor != nil, "orientation": s.Orientation != nil}
}

// needs guards a page with scope, where reading needs a token (ReadAuth) or
// always: without a bearer holding it, the sign-in page says which scope.
func (s *Server) needs(scope string, always bool, h page) page {
	return func(w http.ResponseWriter, r *http.Request) error {
		if !s.ReadAuth && !always {
			return h(w, r)
		}
		tok, _ := s.bearer(r)
		if _, err := s.authorize(withBearer(r, tok), scope); err != nil {
			w.WriteHeader(httpapi.Status(ora.ErrorCode(err)))
			s.render(w, r, "signin", map[string]any{"Title": "Sign in", "Error": ora.ErrorMessage(err), "Scope": scope, "Next": r.URL.RequestURI()})
			return nil
		}
		return h(w, r)
	}
}

// MaxOccurrences bounds the occurrences an incident's page lists (the
// newest): the page stays short; the API lists them all.
const MaxOccurrences = 5

// OccurrenceView is one failure of an incident with the operator's record
// of it and what can be done now.
type OccurrenceView struct {
	operate.Occurrence
	Record *operate.Record
	// State is the wave's lifecycle under the operator (PAUSED, RUNNING...).
	State string
	// Resumable: paused and not resumed; Unknown: paused on an action whose
	// outcome is unknown (resolve, not resume).
	Resumable, Unknown bool
}

// IncidentRow is one line of the incidents list.
type IncidentRow struct {
	operate.Incident
	Paused int // occurrences paused and not resumed
}

func (s *Server) incidents(w http.ResponseWriter, r *http.Request) error {
	incs, sum, err := s.Operator.Incidents(r.Context())
	if err != nil {
		return err
	}
	sort.SliceStable(incs, func(i, j int) bool { return incs[i].LastSeen.After(incs[j].LastSeen) })
	rows := make([]IncidentRow, 0, len(incs))
	for _, inc := range incs {
		row := IncidentRow{Incident: inc}
		for _, o := range inc.Occurrences {
			if o.Action == "pause" && o.ResumedAt.IsZero() {
				row.Paused++
			}
		}
		rows = append(rows, row)
	}
	var patterns []operate.Pattern
	if s.Learned != nil {
		if patterns, err = s.Learned.List(r.Context()); err != nil {
			return err
		}
	}
	s.render(w, r, "incidents", map[string]any{"Title": "Incidents", "Nav": "incidents", "Rows": rows, "Sum": sum, "Patterns": patterns,
		"Promotes": s.Learned != nil, "Done": r.URL.Query().Get("done"),
		"MTTR": seconds(sum.MTTRSeconds), "Rate": percent(sum.ResumptionRate), "Accuracy": percent(sum.ClassificationAccuracy),
		"ByMotor": motorKPIs(sum.ByMotor)})
	return nil
}

// MotorKPIRow is one motor version's line of the KPIs table: the
// incidents first seen under it, worded.
type MotorKPIRow struct {
	Version                        string
	Incidents, Overridden          int
	Paused, Resumed                int
	Accuracy, ResumptionRate, MTTR string
}

// motorKPIs are the KPIs per motor version, newest version first.
func motorKPIs(by map[string]operate.MotorKPIs) []MotorKPIRow {
	out := make([]MotorKPIRow, 0, len(by))
	for v, k := range by {
		out = append(out, MotorKPIRow{Version: v, Incidents: k.Incidents, Overridden: k.Overridden, Paused: k.Paused, Resumed: k.Resumed,
			Accuracy: percent(k.ClassificationAccuracy), ResumptionRate: percent(k.ResumptionRate), MTTR: seconds(k.MTTRSeconds)})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Version > out[b].Version })
	return out
}

func (s *Server) incident(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	inc, err := s.Operator.Incident(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	occs := inc.Occurrences
	sort.SliceStable(occs, func(i, j int) bool { return occs[i].At.After(occs[j].At) })
	more := max(len(occs)-MaxOccurrences, 0)
	occs = occs[:min(len(occs), MaxOccurrences)]
	views := make([]OccurrenceView, 0, len(occs))
	for _, o := range occs {
		v := OccurrenceView{Occurrence: o}
		entries, err := s.Ledger.Entries(ctx, o.WaveID)
		if err != nil && ora.ErrorCode(err) != ora.ENOTFOUND {
			return err
		}
		for _, e := range entries {
			if e.Kind == ora.KindOperatorDecision && e.Qualifier == "op/"+o.OperatorDecisionID {
				var rec operate.Record
				if json.Unmarshal(e.Body, &rec) == nil {
					v.Record = &rec
				}
			}
		}
		if wave, err := s.Waves.Wave(ctx, o.WaveID); err == nil && wave.Operator != nil {
			v.State = wave.Operator.State
		}
		v.Resumable = v.State == operate.StatePaused && o.ResumedAt.IsZero()
		v.Unknown = v.Resumable && v.Record != nil && v.Record.Failure.Error == "OutcomeUnknown"
		views = append(views, v)
	}
	s.render(w, r, "incident", map[string]any{"Title": "Incident " + inc.ID, "Nav": "incidents", "Inc": inc,
		"Occurrences": views, "More": more, "MTTR": seconds(inc.MTTRSeconds), "Done": r.URL.Query().Get("done")})
	return nil
}

// back is where an operator's form returns: the incident it was sent from,
// else the wave's page.
func back(r *http.Request, waveID, done string) string {
	q := url.Values{"done": {done}}.Encode()
	if inc := r.PostForm.Get("incident"); strings.HasPrefix(inc, "incident-") {
		return "/console/incidents/" + url.PathEscape(inc) + "?" + q
	}
	return "/console/waves/" + url.PathEscape(waveID)
}

// sentFrom is the page a wave's Resume or Resolve form was sent from (the
// incident it names, else the wave's page) and that page's id.
func (s *Server) sentFrom(r *http.Request) (page, string) {
	if inc := r.PostForm.Get("incident"); strings.HasPrefix(inc, "incident-") {
		return s.incident, inc
	}
	return s.wave, r.PathValue("id")
}

// resume answers the Resume form with the checks of POST /waves/{id}/resume
// and `ora resume`: scope ora.operate, then operate's own (paused, not
// resumed, the pieces the classification takes: a motor version promoted
// through the gate, an app patch, or as is).
func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	by, ok := s.authorizeForm(w, r, httpapi.ScopeOperate)
	if !ok {
		return
	}
	id := r.PathValue("id")
	req := operate.ResumeRequest{MotorVersion: strings.TrimSpace(r.PostForm.Get("motor")), AsIs: r.PostForm.Get("as_is") == "yes", By: by.Subject}
	if kind := r.PostForm.Get("patch_kind"); kind != "" {
		req.Patch = &operate.AppPatch{Kind: kind, Target: strings.TrimSpace(r.PostForm.Get("patch_target")), Value: json.RawMessage(r.PostForm.Get("patch_value"))}
	}
	res, err := s.Operator.Resume(r.Context(), id, req)
	if err != nil {
		show, pageID := s.sentFrom(r)
		s.refuse(w, r, err, "resume wave "+id, id, show, pageID)
		return
	}
	http.Redirect(w, r, back(r, id, "wave "+res.WaveID+" resumed at "+res.ResumeAt+" under motor "+res.MotorVersion), http.StatusSeeOther)
}

// resolve answers the Resolve form as POST /waves/{id}/resolve and `ora
// resolve`: scope ora.operate, exactly one answer (the action ran, or not).
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	by, ok := s.authorizeForm(w, r, httpapi.ScopeOperate)
	if !ok {
		return
	}
	id := r.PathValue("id")
	show, pageID := s.sentFrom(r)
	var executed bool
	switch r.PostForm.Get("executed") {
	case "yes":
		executed = true
	case "no":
	default:
		s.refuse(w, r, ora.Invalid("executed", "required: say whether the action ran (yes) or not (no)"), "resolve wave "+id, id, show, pageID)
		return
	}
	res, err := s.Operator.Resolve(r.Context(), id, executed, by.Subject, r.PostForm.Get("reason"))
	if err != nil {
		s.refuse(w, r, err, "resolve wave "+id, id, show, pageID)
		return
	}
	http.Redirect(w, r, back(r, id, "wave "+res.WaveID+" resolved and resumed at "+res.ResumeAt), http.StatusSeeOther)
}

// promotePattern answers a learned pattern's Promote form as POST
// /motor/patterns/{id}/promote and `ora patterns promote`: scope
// ora.operate, then the next patch version of the current motor with the
// pattern, through the gate.
func (s *Server) promotePattern(w http.ResponseWriter, r *http.Request) {
	by, ok := s.authorizeForm(w, r, httpapi.ScopeOperate)
	if !ok {
		return
	}
	id := r.PathValue("id")
	b, ev, err := s.Learned.Promote(r.Context(), id, strings.TrimSpace(r.PostForm.Get("reason")), by.Subject)
	if err != nil {
		s.refuse(w, r, err, "promote learned pattern "+id, id, s.incidents, "")
		return
	}
	done := "pattern " + id + " promoted: motor " + b.Version + " is current (was " + ev.Previous + ")"
	http.Redirect(w, r, "/console/incidents?"+url.Values{"done": {done}}.Encode(), http.StatusSeeOther)
}

// seconds words a count of seconds as a wait ("none" for zero).
func seconds(v float64) string {
	if v <= 0 {
		return "none"
	}
	return duration(time.Duration(v * float64(time.Second)))
}

// percent words a ratio in [0, 1] as a whole percentage.
func percent(v float64) string { return strconv.Itoa(int(v*100+0.5)) + "%" }

// operatorFuncs are the template functions of operator.html.
var operatorFuncs = template.FuncMap{
	// short is an id's first 16 characters (the full id goes in a title).
	"short": func(id string) string {
		if len(id) <= 18 {
			return id
		}
		return id[:16] + "…"
	},
	"utc": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	// clip bounds a cause to a line's worth.
	"clip": func(s string) string {
		if r := []rune(s); len(r) > 200 {
			return string(r[:200]) + "…"
		}
		return s
	},
	"json": func(v any) string {
		b, _ := json.MarshalIndent(v, "", "  ")
		return string(b)
	},
	"scopes": func() any { return Scopes },
}
