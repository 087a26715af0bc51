package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
)

// VersionView is a motor version with the gate's replay of it.
type VersionView struct {
	V motor.Version
	// Replay is the golden waves re-run under the version (nil: no replay
	// configured, or the current version); ReplayError why it could not run.
	Replay      *motor.Report
	ReplayError string
	Promotable  bool // not current: promote runs the gate
}

// MaxMotorEvents bounds the promotions and rollbacks the motor page lists
// (the newest).
const MaxMotorEvents = 8

func (s *Server) motorPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	vs, events, err := s.Motor.Versions(ctx)
	if err != nil {
		return err
	}
	views := make([]VersionView, 0, len(vs))
	current, previous := "", ""
	for _, v := range vs {
		view := VersionView{V: v, Promotable: v.Status != "current"}
		switch v.Status {
		case "current":
			current = v.Version
		case "previous":
			previous = v.Version
		}
		if s.Replay != nil && v.Status != "current" {
			rep, err := s.Replay(ctx, v.Bundle)
			if err != nil {
				view.ReplayError = ora.ErrorMessage(err)
			} else {
				view.Replay = &rep
			}
		}
		views = append(views, view)
	}
	for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 { // newest first
		events[i], events[j] = events[j], events[i]
	}
	events = events[:min(len(events), MaxMotorEvents)]
	data := map[string]any{"Title": "Motor", "Nav": "motor", "Versions": views, "Events": events,
		"Current": current, "Previous": previous, "Done": r.URL.Query().Get("done")}
	s.render(w, r, "motor", data)
	return nil
}

// promote answers the Promote form as POST /motor/versions/{v}/promote:
// scope ora.operate, then the gate; a failing gate shows the page again with
// the failing waves and the reason typed.
func (s *Server) promote(w http.ResponseWriter, r *http.Request) {
	by, ok := s.authorizeForm(w, r, httpapi.ScopeOperate)
	if !ok {
		return
	}
	v := r.PathValue("version")
	ev, err := s.Motor.Promote(r.Context(), v, strings.TrimSpace(r.PostForm.Get("reason")), by.Subject)
	s.motorDone(w, r, ev, err, "promote motor "+v, v)
}

// rollback answers the Roll back form as POST /motor/rollback.
func (s *Server) rollback(w http.ResponseWriter, r *http.Request) {
	by, ok := s.authorizeForm(w, r, httpapi.ScopeOperate)
	if !ok {
		return
	}
	ev, err := s.Motor.Rollback(r.Context(), strings.TrimSpace(r.PostForm.Get("reason")), by.Subject)
	s.motorDone(w, r, ev, err, "roll back the motor", "rollback")
}

// canary answers a version's Canary form as POST
// /motor/versions/{v}/canary and `ora motor canary`: scope ora.operate,
// then the gate; the version then serves the share of the waves (a
// percentage on the form) and the named sources until its waves or its
// duration end.
func (s *Server) canary(w http.ResponseWriter, r *http.Request) {
	by, ok := s.authorizeForm(w, r, httpapi.ScopeOperate)
	if !ok {
		return
	}
	v := r.PathValue("version")
	what := "start a canary of motor " + v
	req, err := canaryForm(r.PostForm)
	if err == nil {
		var ev motor.Event
		ev, err = s.Motor.Canary(r.Context(), v, req, by.Subject)
		if err == nil {
			done := "canary: motor " + ev.Version + " serves beside " + ev.Previous
			http.Redirect(w, r, "/console/motor?"+url.Values{"done": {done}}.Encode(), http.StatusSeeOther)
			return
		}
	}
	s.refuse(w, r, err, what, "canary-"+v, s.motorPage, "")
}

// canaryForm reads the Canary form: share in percent, sources comma
// separated, waves, duration, reason. Errors: EINVALID.
func canaryForm(f url.Values) (motor.CanaryRequest, error) {
	req := motor.CanaryRequest{Duration: strings.TrimSpace(f.Get("duration")), Reason: strings.TrimSpace(f.Get("reason"))}
	if v := strings.TrimSpace(f.Get("share")); v != "" {
		pct, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if err != nil {
			return req, ora.Invalid("share", "%q is not a percentage", v)
		}
		req.Share = pct / 100
	}
	for _, src := range strings.Split(f.Get("sources"), ",") {
		if src = strings.TrimSpace(src); src != "" {
			req.Sources = append(req.Sources, src)
		}
	}
	if v := strings.TrimSpace(f.Get("waves")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return req, ora.Invalid("waves", "%q is not a whole number of waves", v)
		}
		req.Waves = n
	}
	return req, nil
}

// motorDone goes back to the motor page saying what happened, or shows
// the page again with the refusal (what: what was refused; target: the
// form its values are kept in).
func (s *Server) motorDone(w http.ResponseWriter, r *http.Request, ev motor.Event, err error, what, target string) {
	if err != nil {
		s.refuse(w, r, err, what, target, s.motorPage, "")
		return
	}
	done := ev.Type + ": motor " + ev.Version + " is current (was " + ev.Previous + ")"
	http.Redirect(w, r, "/console/motor?"+url.Values{"done": {done}}.Encode(), http.StatusSeeOther)
}
