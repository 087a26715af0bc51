package console

import (
	"net/http"
	"net/url"
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
	return s.renderMotor(w, r, http.StatusOK, nil)
}

// renderMotor renders the motor page; failed is a promotion or rollback the
// page reports (its status already chosen), nil for none.
func (s *Server) renderMotor(w http.ResponseWriter, r *http.Request, status int, failed error) error {
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
	if failed != nil {
		data["Failed"] = ora.ErrorMessage(failed)
		if ge, ok := ora.Existing[*motor.GateError](failed); ok {
			data["Failing"] = ge.Failing
		}
		data["Reason"] = r.PostForm.Get("reason")
	}
	if status != http.StatusOK {
		w.WriteHeader(status)
	}
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
	s.motorDone(w, r, ev, err)
}

// rollback answers the Roll back form as POST /motor/rollback.
func (s *Server) rollback(w http.ResponseWriter, r *http.Request) {
	by, ok := s.authorizeForm(w, r, httpapi.ScopeOperate)
	if !ok {
		return
	}
	ev, err := s.Motor.Rollback(r.Context(), strings.TrimSpace(r.PostForm.Get("reason")), by.Subject)
	s.motorDone(w, r, ev, err)
}

// motorDone goes back to the motor page: saying what happened, or, for a
// refusal the page can explain (a conflict, a bad version), the page again
// with it.
func (s *Server) motorDone(w http.ResponseWriter, r *http.Request, ev motor.Event, err error) {
	if err != nil {
		status := httpapi.Status(ora.ErrorCode(err))
		if status >= 500 {
			s.fail(w, r, err)
			return
		}
		r = s.session(w, r)
		if err := s.renderMotor(w, r, status, err); err != nil {
			s.fail(w, r, err)
		}
		return
	}
	done := ev.Type + ": motor " + ev.Version + " is current (was " + ev.Previous + ")"
	http.Redirect(w, r, "/console/motor?"+url.Values{"done": {done}}.Encode(), http.StatusSeeOther)
}
