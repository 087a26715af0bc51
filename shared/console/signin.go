package console

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
)

// Who signs the console's forms: the token of the sign-in cookie, else (on a
// loopback `ora dev` only) the development approver, which approves and
// reads and nothing more. A form may carry a token of its own, which wins.

// Scopes are the scopes the console's pages and forms ask for, in the order
// the sign-in page lists them.
var Scopes = []struct{ Scope, Use string }{
	{httpapi.ScopeRead, "read the waves, approvals and orientation pages (off loopback)"},
	{httpapi.ScopeOperatorRead, "read the incidents and motor pages (off loopback)"},
	{httpapi.ScopeApprove, "approve or reject a decision waiting for a human"},
	{httpapi.ScopeOperate, "resume or resolve a paused wave; promote, canary or roll back a motor version; promote a learned pattern"},
	{httpapi.ScopeOrientationApprove, "approve or reject an orientation proposal"},
}

// Identity is who the console acts as for a request.
type Identity struct {
	Subject string
	Scopes  []string
	Dev     bool // the development approver, no token pasted
}

// Can reports whether the identity holds scope.
func (i Identity) Can(scope string) bool { return slices.Contains(i.Scopes, scope) }

// bearer returns the token the console acts with for r: the form's token
// field (when posted and not empty), the request's Authorization header,
// the sign-in cookie, else the development approver ("" when there is
// none).
func (s *Server) bearer(r *http.Request) (tok string, dev bool) {
	if r.PostForm != nil {
		if t := strings.TrimSpace(r.PostForm.Get("token")); t != "" {
			return t, false
		}
	}
	if t, ok := httpapi.BearerToken(r); ok {
		return t, false
	}
	if c, err := r.Cookie(tokenCookie); err == nil && c.Value != "" {
		return c.Value, false
	}
	return s.DevApprover, s.DevApprover != ""
}

// withBearer returns a copy of r carrying tok as its bearer token.
func withBearer(r *http.Request, tok string) *http.Request {
	c := r.Clone(r.Context())
	c.Header.Set("Authorization", "Bearer "+tok)
	return c
}

// identity probes the scopes of r's bearer (bearer): the zero Identity when
// there is none or it is unknown.
func (s *Server) identity(r *http.Request) Identity {
	tok, dev := s.bearer(r)
	if tok == "" || s.Authorize == nil {
		return Identity{}
	}
	check := withBearer(r, tok)
	id := Identity{Dev: dev}
	for _, sc := range append(Scopes[:len(Scopes):len(Scopes)], struct{ Scope, Use string }{httpapi.ScopeOrientationAdmin, ""}) {
		if sub, err := s.Authorize(check, sc.Scope); err == nil {
			id.Subject = sub
			id.Scopes = append(id.Scopes, sc.Scope)
		}
	}
	return id
}

// authorizeForm checks a posted form (its session token) and that the
// console's bearer for it holds scope; it returns the principal. When the
// bearer is missing, unknown or lacks the scope it answers the sign-in page
// with the form again: the fields the user typed (a reason, a choice) kept,
// a token field to paste one with the scope, posting to the same action.
func (s *Server) authorizeForm(w http.ResponseWriter, r *http.Request, scope string) (ora.Principal, bool) {
	if err := s.checkForm(r); err != nil {
		s.fail(w, r, err)
		return ora.Principal{}, false
	}
	tok, _ := s.bearer(r)
	var err error
	var sub string
	if tok == "" {
		err = ora.Errorf(ora.EUNAUTHORIZED, "this needs a bearer token with scope %s", scope)
	} else {
		check := withBearer(r, tok)
		if sub, err = s.authorize(check, scope); err == nil {
			by := ora.Principal{Subject: sub, Namespace: "main"}
			if s.Namespace != nil {
				by.Namespace = s.Namespace(check)
			}
			return by, true
		}
	}
	kept := url.Values{}
	for k, v := range r.PostForm {
		if k != "token" && k != csrfField {
			kept[k] = v
		}
	}
	r = s.session(w, r)
	w.WriteHeader(httpapi.Status(ora.ErrorCode(err)))
	s.render(w, r, "signin", map[string]any{
		"Title": "Sign in", "Error": ora.ErrorMessage(err), "Scope": scope, "Action": r.URL.Path,
		"Reason": kept.Get("reason"), "Kept": keptFields(kept),
	})
	return ora.Principal{}, false
}

// keptFields are a retried form's fields other than its reason, in a stable
// order, as hidden inputs carry them.
func keptFields(v url.Values) [][2]string {
	var out [][2]string
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "reason" || k == "next" {
			continue
		}
		for _, x := range v[k] {
			out = append(out, [2]string{k, x})
		}
	}
	return out
}

// signinPage answers GET /console/login: who the console acts as, and the
// form to sign in with a token.
func (s *Server) signinPage(w http.ResponseWriter, r *http.Request) error {
	s.render(w, r, "signin", map[string]any{"Title": "Sign in", "Nav": "signin", "Next": safeNext(r.URL.Query().Get("next"))})
	return nil
}

// safeNext is next when it is a console page, else the waves list.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/console/") || strings.HasPrefix(next, "/console//") {
		return "/console/"
	}
	return next
}

// login answers the sign-in form: with its session's form token and a
// known token (one that reads, where reading needs a token), it keeps the
// token in an HttpOnly cookie and goes on to next; otherwise the form
// again, saying why.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if err := s.checkForm(r); err != nil {
		s.fail(w, r, err)
		return
	}
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	next := safeNext(r.PostForm.Get("next"))
	_, err := s.authorize(withBearer(r, tok), httpapi.ScopeRead)
	if ora.ErrorCode(err) == ora.EFORBIDDEN && !s.ReadAuth {
		err = nil // a known token: reading needs none here
	}
	if tok == "" {
		err = ora.Errorf(ora.EUNAUTHORIZED, "paste a bearer token")
	}
	if err != nil {
		r = s.session(w, r)
		w.WriteHeader(httpapi.Status(ora.ErrorCode(err)))
		s.render(w, r, "signin", map[string]any{"Title": "Sign in", "Nav": "signin", "Error": ora.ErrorMessage(err), "Next": next})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: tok, Path: "/console/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout forgets the sign-in cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if err := s.checkForm(r); err != nil {
		s.fail(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: "", Path: "/console/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

// verdictForm is authorizeForm for an Approve or Reject form, whose path
// names the verdict ({verdict}): approve reports which it is.
func (s *Server) verdictForm(w http.ResponseWriter, r *http.Request, scope string) (approve bool, by ora.Principal, ok bool) {
	verdict := r.PathValue("verdict")
	if verdict != "approve" && verdict != "reject" {
		s.fail(w, r, ora.Invalid("verdict", "%q is not approve or reject", verdict))
		return false, by, false
	}
	by, ok = s.authorizeForm(w, r, scope)
	return verdict == "approve", by, ok
}
