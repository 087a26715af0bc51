package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"

	"github.com/ora-runtime/ora/shared/ora"
)

// The console's forms (sign-in, approve, reject) carry a per-session token:
// a session cookie holds a random id, each form the HMAC of it under a key
// of the process, and a post whose token does not match is refused. A page
// on another site can neither read the cookie nor compute the token, so it
// cannot post a form in the user's name (cross-site request forgery); the
// Origin check (httpapi.SameOrigin) refuses such posts before that.
const (
	sessionCookie = "ora_console_session"
	csrfField     = "csrf"
)

type csrfKey struct{}

// session ensures r has a console session, setting its cookie on w when it
// has none, and returns r carrying the session's form token. Call it before
// writing the status.
func (s *Server) session(w http.ResponseWriter, r *http.Request) *http.Request {
	id := ""
	if c, err := r.Cookie(sessionCookie); err == nil && len(c.Value) == 32 {
		id = c.Value
	} else {
		id = rand.Text()[:26] + rand.Text()[:6]
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/console/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	return r.WithContext(context.WithValue(r.Context(), csrfKey{}, s.formToken(id)))
}

// formToken is the form token of session id.
func (s *Server) formToken(id string) string {
	m := hmac.New(sha256.New, s.csrfSecret)
	m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil))
}

// csrf is the form token r carries (after session), "" without one.
func csrf(r *http.Request) string {
	t, _ := r.Context().Value(csrfKey{}).(string)
	return t
}

// checkForm parses a posted form and refuses it (EFORBIDDEN) when its token
// is not its session's. Errors: EINVALID (not a form), EFORBIDDEN.
func (s *Server) checkForm(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return ora.Invalid("form", "%v", err)
	}
	c, err := r.Cookie(sessionCookie)
	got := r.PostForm.Get(csrfField)
	if err != nil || got == "" || !hmac.Equal([]byte(got), []byte(s.formToken(c.Value))) {
		return ora.Errorf(ora.EFORBIDDEN, "this form is stale or was sent from another site: reload the console's page and submit it again")
	}
	return nil
}

// newSecret is a random key for the form tokens of one process.
func newSecret() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}
