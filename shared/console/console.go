package console

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/telemetry"
	"github.com/ora-runtime/ora/statemachines"
)

//go:embed templates/*.html static/*
var files embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	// cut is what a truncated rendering's marker needs: the rendering and
	// the link to the raw body (kv: the raw route's query, in pairs).
	"cut": func(r httpapi.Rendering, id string, kv ...string) map[string]any {
		q := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		return map[string]any{"R": r, "URL": "/console/waves/" + url.PathEscape(id) + "/raw?" + q.Encode()}
	},
	// settleForm is what the approve/reject form needs.
	// settleForm is what the approve/reject form needs: from names the
	// page it is on ("approvals" or "wave"), reason the reason kept from a
	// refused sending.
	"settleForm": func(decisionID, csrf string, dev bool, from, reason string) map[string]any {
		return map[string]any{"DecisionID": decisionID, "CSRF": csrf, "Dev": dev, "From": from, "Reason": reason}
	},
	// kept is a refused form's value of field, for the form of target.
	"kept": func(ref *Refusal, target, field string) string { return ref.Value(target, field) },
	// dict builds a sub-template's data from pairs (operator.html).
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
	"query": func(base url.Values, k, v string) string {
		q := url.Values{}
		for key, vals := range base {
			q[key] = vals
		}
		q.Set(k, v)
		return q.Encode()
	},
}).Funcs(operatorFuncs).ParseFS(files, "templates/*.html"))

// Metrics is what the console reads of the metrics: prom.Registry is one.
type Metrics interface {
	// Value sums a metric over the label sets matching labels.
	Value(name string, labels ...string) float64
}

// Server serves the console under /console.
type Server struct {
	Ledger     Ledger
	Waves      httpapi.Waves
	Verdicts   httpapi.Verdicts
	Authorize  httpapi.Authorizer
	ReadAuth   bool   // off loopback: reading needs a token with orientation.read
	Definition []byte // the wave's state machine (ASL JSON)
	Metrics    Metrics
	Logger     *slog.Logger
	Now        func() time.Time
	// Secrets are redacted from every page. Optional.
	Secrets *ora.Secrets

	// Statuses reads a wave's status without its history (optional).
	Statuses Statuses
	// Children are the wave's child state machines, drawn inline under the
	// states that start them; Executions reads their runs (both optional).
	Children   []statemachines.Child
	Executions Executions
	// Objects reads what object.put actions wrote, for the receipts' links
	// (optional).
	Objects Objects
	// Operator, Motor and Orientation serve the incidents, motor and
	// orientation pages (operator.go, motor.go, orientation.go) through the
	// calls the HTTP API makes; nil leaves a page out.
	Operator    httpapi.Operator
	Motor       httpapi.Motor
	Orientation httpapi.Orientation
	// Learned lists the learned patterns on the incidents page (optional).
	Learned httpapi.Learned
	// Replay re-runs the gate's golden waves under a motor version, for
	// the motor page (optional).
	Replay func(ctx context.Context, b motor.Bundle) (motor.Report, error)
	// Namespace returns the namespace of an authorized request's token
	// (httpapi.TokenNamespaces); nil: "main".
	Namespace func(*http.Request) string
	// DevApprover is a bearer token the approve and reject forms use when
	// their token field is left empty: ora dev sets it, on a loopback
	// address only and behind its Host check, to the published development
	// token, so a local developer settles without pasting it. The forms'
	// session token and the cross-origin refusal still apply. Empty: the
	// field is required.
	DevApprover string

	csrfSecret []byte // the key of the forms' tokens (csrf.go)
	index      index  // the waves list's summaries (index.go)
}

// PageSize is how many waves a page lists.
const PageSize = 20

// Handler returns the console's routes, all under /console.
func (s *Server) Handler() http.Handler {
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	if s.csrfSecret == nil {
		s.csrfSecret = newSecret()
	}
	mux := http.NewServeMux()
	static, _ := fs.Sub(files, "static")
	mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))
	mux.Handle("GET /console", http.RedirectHandler("/console/", http.StatusSeeOther))
	mux.HandleFunc("GET /console/{$}", s.read(s.waves))
	mux.HandleFunc("GET /console/waves/{id}", s.read(s.wave))
	mux.HandleFunc("GET /console/waves/{id}/raw", s.read(s.raw))
	mux.HandleFunc("GET /console/waves/{id}/object", s.read(s.object))
	mux.HandleFunc("GET /console/approvals", s.read(s.approvals))
	mux.HandleFunc("GET /console/metrics", s.read(s.metrics))
	mux.Handle("POST /console/decisions/{id}/{verdict}", httpapi.SameOrigin(http.HandlerFunc(s.settle)))
	mux.Handle("POST /console/login", httpapi.SameOrigin(http.HandlerFunc(s.login)))
	mux.HandleFunc("GET /console/login", s.read(s.signinPage))
	mux.Handle("POST /console/logout", httpapi.SameOrigin(http.HandlerFunc(s.logout)))
	s.operatorRoutes(mux)
	return mux
}

const tokenCookie = "ora_console_token"

// read guards a page with the API's read rule; off loopback the token comes
// from the Authorization header or the console's login cookie.
func (s *Server) read(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:")
		w.Header().Set("X-Frame-Options", "DENY")
		r = s.session(w, r)
		if s.ReadAuth {
			if c, err := r.Cookie(tokenCookie); err == nil && r.Header.Get("Authorization") == "" {
				r.Header.Set("Authorization", "Bearer "+c.Value)
			}
			if _, err := s.authorize(r, httpapi.ScopeRead); err != nil {
				w.WriteHeader(httpapi.Status(ora.ErrorCode(err)))
				s.render(w, r, "signin", map[string]any{"Title": "Sign in", "Error": ora.ErrorMessage(err), "Scope": httpapi.ScopeRead, "Next": r.URL.RequestURI()})
				return
			}
		}
		if err := h(w, r); err != nil {
			s.fail(w, r, err)
		}
	}
}

func (s *Server) authorize(r *http.Request, scope string) (string, error) {
	if s.Authorize == nil {
		return "", ora.Errorf(ora.EUNAUTHORIZED, "no authorizer configured")
	}
	return s.Authorize(r, scope)
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, data map[string]any) {
	data["CSRF"], data["Dev"] = csrf(r), s.DevApprover != ""
	data["Who"], data["Pages"] = s.identity(r), s.pages()
	if s.Metrics != nil {
		data["NavPending"] = int(s.Metrics.Value(telemetry.EscalationsPending))
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
	}
	ref := refusalOf(r) // a form refused from this page (refuse), or nil
	if ref != nil {
		// No live reload: it would replace the banner and what was typed.
		data["Live"] = false
		w.WriteHeader(ref.Status)
	}
	data["Refused"] = ref
	var page bytes.Buffer
	if err := pages.ExecuteTemplate(&page, name, data); err != nil {
		s.Logger.Error("console: render", "page", name, "err", err)
	}
	_, _ = w.Write(s.Secrets.Redact(page.Bytes()))
}

// ApprovalView is a pending approval with its decision.
type ApprovalView struct {
	Approval
	Age               string
	Action, Reasoning string
	Confidence        string
}

func (s *Server) approvals(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	pending, err := Pending(ctx, s.Ledger, s.Now())
	if err != nil {
		return err
	}
	var views []ApprovalView
	for _, p := range pending {
		v := ApprovalView{Approval: p, Age: duration(s.Now().Sub(p.Since))}
		entries, _ := s.Ledger.Entries(ctx, p.SignalID)
		for _, e := range entries {
			if e.Kind == ora.KindReasonerDecision && e.Qualifier == p.DecisionID {
				var d ora.ReasonerDecision
				if json.Unmarshal(e.Body, &d) == nil {
					v.Action, v.Reasoning, v.Confidence = d.ActionType, d.Reasoning, fmt.Sprintf("%.2f", d.Confidence)
				}
			}
		}
		views = append(views, v)
	}
	s.render(w, r, "approvals", map[string]any{"Title": "Approvals", "Nav": "approvals", "Approvals": views, "Live": true})
	return nil
}

// settle answers an Approve or Reject form: the console's bearer (the
// form's token field, the sign-in, or the development approver) must hold
// ora.approve, exactly as POST /decisions/{id}/approve.
func (s *Server) settle(w http.ResponseWriter, r *http.Request) {
	approve, by, ok := s.verdictForm(w, r, httpapi.ScopeApprove)
	if !ok {
		return
	}
	id := r.PathValue("id")
	st, err := s.Verdicts.Settle(r.Context(), id, approve, by.Subject, r.PostForm.Get("reason"))
	if err != nil {
		what := "reject decision " + id
		if approve {
			what = "approve decision " + id
		}
		// Back to the approvals list or the wave's page, where the form was.
		show, pageID := page(s.approvals), ""
		if r.PostForm.Get("from") != "approvals" {
			if d, derr := s.Ledger.Decision(r.Context(), id); derr == nil && d.SignalID != "" {
				show, pageID = s.wave, d.SignalID
			}
		}
		s.refuse(w, r, err, what, id, show, pageID)
		return
	}
	http.Redirect(w, r, "/console/waves/"+url.PathEscape(st.SignalID)+"?settled="+string(st.Status), http.StatusSeeOther)
}

// age words a metric in seconds as a human reads a wait: "none", "16s",
// "4m10s", "2h5m".
func age(m Metrics, name string) string {
	if m == nil {
		return "-"
	}
	secs := m.Value(name)
	if secs <= 0 {
		return "none"
	}
	d := time.Duration(secs * float64(time.Second))
	if d < time.Hour {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

// money words a metric in US dollars to the cent (a tenth of a cent below
// a dollar).
func money(m Metrics, name string) string {
	if m == nil {
		return "-"
	}
	v := m.Value(name)
	if v < 1 {
		return fmt.Sprintf("$%.3f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

// MetricRow is one number of the metrics page.
type MetricRow struct {
	Label string
	Value string
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	v := func(name string, labels ...string) string {
		if s.Metrics == nil {
			return "-"
		}
		return strconv.FormatFloat(s.Metrics.Value(name, labels...), 'f', -1, 64)
	}
	rows := []MetricRow{
		{"Waves started", v(telemetry.WavesStarted)},
		{"Waves completed", v(telemetry.Waves, "outcome", "completed")},
		{"Waves rejected", v(telemetry.Waves, "outcome", "rejected")},
		{"Waves failed", v(telemetry.Waves, "outcome", "failed")},
		{"Decisions, high band", v(telemetry.Decisions, "band", "high")},
		{"Decisions, medium band", v(telemetry.Decisions, "band", "medium")},
		{"Decisions, low band", v(telemetry.Decisions, "band", "low")},
		{"Approvals pending", v(telemetry.EscalationsPending)},
		{"Oldest pending approval", age(s.Metrics, telemetry.EscalationOldestAge)},
		{"Actions run", v(telemetry.Actions)},
		{"Validator verdicts PASS", v(telemetry.ValidatorVerdicts, "verdict", "PASS")},
		{"Validator verdicts FAIL", v(telemetry.ValidatorVerdicts, "verdict", "FAIL")},
		{"Operator incidents", v(telemetry.Incidents)},
		{"Stage failures", v(telemetry.StageFailures)},
		{"Model tokens", v(telemetry.ModelTokens)},
		{"Model cost", money(s.Metrics, telemetry.ModelCost)},
		{"Orientation jobs", v(telemetry.OrientationJobs)},
		{"Facts fetched", v(telemetry.OrientationFacts)},
	}
	s.render(w, r, "metrics", map[string]any{"Title": "Metrics", "Nav": "metrics", "Rows": rows, "Catalog": telemetry.Catalog, "Live": true})
	return nil
}
