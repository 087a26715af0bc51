// Package githubtest is a local fake of the two GitHub REST API endpoints the
// github-triage example calls (add labels to an issue, comment on an issue),
// for tests that run the example: in-process (shared/embedded) and through
// the built binary over HTTP (e2e).
package githubtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"
)

// Call is one request the fake accepted.
type Call struct {
	Kind          string // labels or comments
	Path, Auth    string
	Body          map[string]any
	ReportExisted bool // the triage report was on disk when the request was answered
	Together      bool // the other kind of request arrived while this one was held
}

// Server is the fake GitHub REST API. It refuses a wrong token (401 Bad
// credentials), a path or method it does not serve (404), and a body of the
// wrong shape (422), as GitHub does, and answers like GitHub: 200 with the
// issue's labels for labels, 201 with the new comment for comments. When
// Hold is set, each request waits (at most 5 s) until the other kind has
// arrived too: both answer only if they were sent in parallel.
type Server struct {
	token, report string
	hold          bool

	mu       sync.Mutex
	calls    []Call
	refused  int
	arrived  map[string]chan struct{}
	URL      string
	httpTest *httptest.Server
}

// IssuePath matches the paths the fake serves: owner, repository, issue
// number, and labels or comments.
var IssuePath = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/([0-9]+)/(labels|comments)$`)

// New starts a fake that accepts "Bearer <token>" and stops it when t ends.
// report is the path of the triage report the example's function writes:
// each answer notes whether it existed yet. hold makes the two kinds of
// request wait for each other.
func New(t testing.TB, token, report string, hold bool) *Server {
	t.Helper()
	s := &Server{token: token, report: report, hold: hold,
		arrived: map[string]chan struct{}{"labels": make(chan struct{}), "comments": make(chan struct{})}}
	s.httpTest = httptest.NewServer(s)
	s.URL = s.httpTest.URL
	t.Cleanup(s.httpTest.Close)
	return s
}

// ServeHTTP answers one request as GitHub would.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	answer := func(status int, v any) {
		if status >= 400 {
			s.mu.Lock()
			s.refused++
			s.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		answer(http.StatusUnauthorized, map[string]string{"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
		return
	}
	m := IssuePath.FindStringSubmatch(r.URL.Path)
	if m == nil || r.Method != http.MethodPost {
		answer(http.StatusNotFound, map[string]string{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
		return
	}
	call := Call{Kind: m[4], Path: r.URL.Path, Auth: r.Header.Get("Authorization")}
	raw, _ := io.ReadAll(r.Body)
	if json.Unmarshal(raw, &call.Body) != nil || !BodyOK(call.Kind, call.Body) {
		answer(http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest"})
		return
	}
	if s.hold {
		other := map[string]string{"labels": "comments", "comments": "labels"}[call.Kind]
		s.mu.Lock()
		select {
		case <-s.arrived[call.Kind]:
		default:
			close(s.arrived[call.Kind])
		}
		s.mu.Unlock()
		select {
		case <-s.arrived[other]:
			call.Together = true
		case <-time.After(5 * time.Second):
		}
		// A report function started with the requests would have written
		// its report by now: the answer checks that none is on disk.
		time.Sleep(100 * time.Millisecond)
	}
	_, existed := os.Stat(s.report)
	call.ReportExisted = existed == nil
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	issue := "https://api.github.com/repos/" + m[1] + "/" + m[2] + "/issues/" + m[3]
	if call.Kind == "labels" {
		answer(http.StatusOK, []map[string]any{{"id": 208045946, "name": "triage", "color": "f29513", "default": false,
			"url": "https://api.github.com/repos/" + m[1] + "/" + m[2] + "/labels/triage"}})
		return
	}
	answer(http.StatusCreated, map[string]any{"id": 1, "body": call.Body["body"], "issue_url": issue,
		"user": map[string]any{"login": "ora-bot", "type": "Bot"}, "created_at": time.Now().UTC().Format(time.RFC3339)})
}

// BodyOK checks the JSON shape GitHub documents for each endpoint:
// {"labels": [names...]} and {"body": "text"}.
func BodyOK(kind string, body map[string]any) bool {
	if kind == "labels" {
		labels, ok := body["labels"].([]any)
		if !ok || len(labels) == 0 || len(body) != 1 {
			return false
		}
		for _, l := range labels {
			if s, ok := l.(string); !ok || s == "" {
				return false
			}
		}
		return true
	}
	s, ok := body["body"].(string)
	return ok && s != "" && len(body) == 1
}

// Received returns the requests the fake accepted so far.
func (s *Server) Received() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Refused returns how many requests the fake refused (401, 404, 422).
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Check reports, through t, each way the requests the fake accepted differ
// from what the example must send for its issue-opened.json delivery
// (ora-runtime/ora-demo#42, opened by octocat): want counts the requests of
// each kind; each went to the issue's path with the token; the label is
// triage; the comment thanks @octocat; no report existed when a request was
// answered; and, when the fake holds requests, both kinds were in flight
// together.
func (s *Server) Check(t testing.TB, want map[string]int) []Call {
	t.Helper()
	calls := s.Received()
	got := map[string]int{}
	for _, c := range calls {
		got[c.Kind]++
		if c.Path != "/repos/ora-runtime/ora-demo/issues/42/"+c.Kind || c.Auth != "Bearer "+s.token {
			t.Errorf("%s: path %s, authorization %q", c.Kind, c.Path, c.Auth)
		}
		if c.Kind == "labels" && c.Body["labels"].([]any)[0] != "triage" {
			t.Errorf("labels body %v, want triage", c.Body)
		}
		if c.Kind == "comments" && !regexp.MustCompile(`@octocat\b`).MatchString(c.Body["body"].(string)) {
			t.Errorf("comment body %v, want it to thank @octocat", c.Body)
		}
		if c.ReportExisted {
			t.Errorf("the report was written before the %s request was answered", c.Kind)
		}
		if s.hold && !c.Together {
			t.Errorf("the %s request was not sent in parallel with the other", c.Kind)
		}
	}
	if len(got) != len(want) || got["labels"] != want["labels"] || got["comments"] != want["comments"] {
		t.Errorf("GitHub accepted %v, want %v (and refused %d)", got, want, s.Refused())
	}
	return calls
}
