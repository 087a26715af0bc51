package console

import (
	"context"
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
)

// Refusal is a form the operator, the gate or the console refused (a 4xx),
// shown on the page the form was sent from: what was refused and why, and
// the form's values, kept in the form it came from.
type Refusal struct {
	What   string // what was asked: "resume wave sig-1"
	Reason string // why it was refused, in the service's words
	// Failing are the golden cases the gate failed, when it refused.
	Failing []string
	Status  int // the answer's status
	// Target names the form the values belong to (a wave, a version, a
	// proposal, a decision or a pattern id); Form holds them, without the
	// token and the form token.
	Target string
	Form   url.Values
}

// Value is the kept value of field when target is the refused form's, else
// "". Safe on nil (a page no form was refused from).
func (f *Refusal) Value(target, field string) string {
	if f == nil || f.Target != target {
		return ""
	}
	return f.Form.Get(field)
}

// For reports whether the refused form is target's (false on nil).
func (f *Refusal) For(target string) bool { return f != nil && f.Target == target }

type refusalKey struct{}

func refusalOf(r *http.Request) *Refusal {
	ref, _ := r.Context().Value(refusalKey{}).(*Refusal)
	return ref
}

// refuse answers a form whose service call failed. A refusal (4xx) renders
// the page the form was sent from (show, given the request with path value
// id set to pageID) with the refusal's reason and the form's values, under
// the refusal's status; anything else the generic error page (fail).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error, what, target string, show page, pageID string) {
	status := httpapi.Status(ora.ErrorCode(err))
	if status >= 500 || show == nil {
		s.fail(w, r, err)
		return
	}
	form := url.Values{}
	for k, v := range r.PostForm {
		if k != "token" && k != csrfField {
			form[k] = v
		}
	}
	ref := &Refusal{What: what, Reason: ora.ErrorMessage(err), Status: status, Target: target, Form: form}
	if ge, ok := ora.Existing[*motor.GateError](err); ok {
		ref.Failing = ge.Failing
	}
	r = s.session(w, r)
	r = r.WithContext(context.WithValue(r.Context(), refusalKey{}, ref))
	if pageID != "" {
		r.SetPathValue("id", pageID)
	}
	u := *r.URL
	u.RawQuery = "" // the page as sent from, without its last answer
	r.URL = &u
	if perr := show(w, r); perr != nil {
		// The page is gone (or failing): the refusal on the error page.
		s.Logger.WarnContext(r.Context(), "console: the page of a refused form", "path", r.URL.Path, "err", perr)
		s.fail(w, r, err)
	}
}

// fail answers the error page: a refusal's status and reason; an internal
// error (5xx) is logged with a request id and answered only with that id.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := httpapi.Status(ora.ErrorCode(err))
	data := map[string]any{"Title": "Error", "Status": status, "Message": ora.ErrorMessage(err)}
	if status >= 500 {
		id := r.Header.Get("X-Request-Id")
		if id == "" {
			id = uuid.NewString()
		}
		s.Logger.ErrorContext(r.Context(), "console: request failed", "request_id", id, "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("X-Request-Id", id)
		data["Message"], data["RequestID"] = "internal error", id
	}
	w.WriteHeader(status)
	s.render(w, r.WithContext(context.WithValue(r.Context(), refusalKey{}, (*Refusal)(nil))), "error", data)
}
