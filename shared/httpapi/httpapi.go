// Package httpapi serves ora's HTTP API, the same routes in `ora dev` (net/http
// on localhost) and on AWS (API Gateway HTTP API in front of the api and
// observe-webhook functions):
//
//	POST /webhooks/{source}           a signal from a webhook source
//	GET  /signals/{id}                the signal and every ledger entry of its wave (task tokens redacted)
//	GET  /waves/{id}                  the wave's status and execution history
//	POST /decisions/{id}/approve      settle an escalated decision (scope ora.approve)
//	POST /decisions/{id}/reject       likewise
//	GET  /incidents                   the operator's incidents and KPIs (scope ora.read off loopback)
//	GET  /incidents/{id}              one incident
//	POST /waves/{id}/resume           resume a paused wave (scope ora.operate)
//	POST /incidents/{id}/classification  correct an incident's classification (scope ora.operate)
//	POST /waves/{id}/redrive          restart a failed, timed-out or aborted wave at the state that did not finish (ora.operate)
//	GET  /motor/versions              the motor's versions and its promotions (scope ora.read off loopback)
//	POST /motor/versions              propose a motor version: the body is the bundle (scope ora.operate)
//	POST /motor/versions/{v}/promote  promote it through the gate; 409 names the failing waves (ora.operate)
//	POST /motor/rollback              make the previous version current again (ora.operate)
//	POST /motor/versions/{v}/canary   let it serve a share of the waves, then promote or roll it back by policy (ora.operate)
//	GET  /motor/patterns              the learned patterns: incident fingerprints with a confirmed fix (ora.read off loopback)
//	POST /motor/patterns/{id}/promote the next motor version carrying one, through the gate (ora.operate)
//	GET  /healthz                     liveness: 503 when the stores cannot write
//
// Errors are JSON {"error": "..."} with the status the domain code maps to;
// internal errors are logged with the request id and answered "internal error".
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// ScopeApprove is the scope a bearer token needs to approve or reject.
const ScopeApprove = "ora.approve"

// ScopeRead is the scope a bearer token needs for the read routes when read
// authorization is on.
const ScopeRead = "orientation.read"

// ScopeOperate is the scope a bearer token needs to resume waves and change
// the motor.
const ScopeOperate = "ora.operate"

// ScopeOperatorRead is the scope a bearer token needs for the operator's read
// routes (incidents, motor versions) when read authorization is on.
const ScopeOperatorRead = "ora.read"

// DefaultBodyLimit is the largest webhook body accepted (256 KiB).
const DefaultBodyLimit = 256 << 10

// WebhookReceipt is what the observer answers a webhook delivery with.
type WebhookReceipt struct {
	SignalID  string `json:"signal_id,omitempty"`
	WaveID    string `json:"wave_id,omitempty"`
	Duplicate bool   `json:"duplicate"`
	Challenge string `json:"challenge,omitempty"`
	Probe     bool   `json:"probe,omitempty"` // a provider's endpoint check (Slack's ssl_check): 200, nothing captured
}

// Webhooks receives webhook deliveries.
type Webhooks interface {
	// Webhook verifies and captures one delivery. Errors: ENOTFOUND (unknown
	// source), EUNAUTHORIZED (signature), EINVALID (body; Field "body" with
	// TooLarge true for an oversized one), ETRANSIENT, EINTERNAL.
	Webhook(ctx context.Context, source string, header http.Header, body []byte) (WebhookReceipt, error)
}

// Entries reads a signal's ledger entries.
type Entries interface {
	// Entries returns every entry of a signal in order. Errors: ENOTFOUND.
	Entries(ctx context.Context, signalID string) ([]ora.Entry, error)
}

// Wave is a wave's status and history as the API shows it.
type Wave struct {
	WaveID  string          `json:"wave_id"`
	Status  string          `json:"status"`
	Output  json.RawMessage `json:"output,omitempty"`
	Error   string          `json:"error,omitempty"`
	Cause   string          `json:"cause,omitempty"`
	History json.RawMessage `json:"history"`
	// Operator is the wave's lifecycle under the operator (seed 003 §9).
	Operator *operate.OperatorState `json:"operator,omitempty"`
}

// Motor serves the motor's routes; *motor.Registry is one.
type Motor interface {
	// Versions lists the versions and the promotions. Errors: ETRANSIENT.
	Versions(ctx context.Context) ([]motor.Version, []motor.Event, error)
	// Propose stores a version. Errors: EINVALID, ECONFLICT, ETRANSIENT.
	Propose(ctx context.Context, b motor.Bundle) (motor.Bundle, error)
	// Promote makes a version current through the gate. Errors: ENOTFOUND,
	// ECONFLICT (carrying a *motor.GateError when the gate failed), ETRANSIENT.
	Promote(ctx context.Context, version, reason, by string) (motor.Event, error)
	// Rollback makes the previous version current. Errors: ECONFLICT, ETRANSIENT.
	Rollback(ctx context.Context, reason, by string) (motor.Event, error)
	// Canary starts a canary of a proposed version. Errors: EINVALID,
	// ENOTFOUND, ECONFLICT (carrying a *motor.GateError when the gate
	// failed), ETRANSIENT.
	Canary(ctx context.Context, version string, req motor.CanaryRequest, by string) (motor.Event, error)
}

// Learned lists learned patterns and promotes them into the motor;
// motor.Learner is one.
type Learned interface {
	// List returns every learned pattern. Errors: ETRANSIENT.
	List(ctx context.Context) ([]operate.Pattern, error)
	// Promote proposes the current motor with the pattern as the next
	// patch version and promotes it through the gate. Errors: ENOTFOUND,
	// ECONFLICT (carried already; a failing gate, carrying a
	// *motor.GateError), EINVALID, ETRANSIENT.
	Promote(ctx context.Context, id, reason, by string) (motor.Bundle, motor.Event, error)
}

// Recorded exports the waves the ledger recorded; motor.Recorder is one.
type Recorded interface {
	// Waves returns the waves since (or the one wave waveID), newest first.
	// Errors: EINVALID, ENOTFOUND (waveID), ETRANSIENT.
	Waves(ctx context.Context, since time.Time, waveID string, limit int) ([]motor.Recorded, error)
}

// DefaultRecordedSince is how far back GET /motor/waves looks without since.
const DefaultRecordedSince = 7 * 24 * time.Hour

// Operator serves the operator's routes; *operate.Service is one.
type Operator interface {
	// Incidents returns every incident and the KPIs. Errors: ETRANSIENT.
	Incidents(ctx context.Context) ([]operate.Incident, operate.Summary, error)
	// Incident returns one incident. Errors: ENOTFOUND, ETRANSIENT.
	Incident(ctx context.Context, id string) (operate.Incident, error)
	// Resume resumes a paused wave by its classified plan
	// (operate.ResumePolicy). Errors: EINVALID, ENOTFOUND, ECONFLICT
	// (naming the failing gate cases when the gate refused the motor
	// version), ETRANSIENT.
	Resume(ctx context.Context, waveID string, req operate.ResumeRequest) (operate.Resumed, error)
	// Resolve answers for a wave paused on an unknown outcome: the action
	// ran (executed) or not, and resumes it. Errors: EINVALID, ENOTFOUND,
	// ECONFLICT, ETRANSIENT.
	Resolve(ctx context.Context, waveID string, executed bool, by, reason string) (operate.Resolution, error)
	// Reclassify records a person's correction of an incident's
	// classification. Errors: EINVALID, ENOTFOUND, ETRANSIENT.
	Reclassify(ctx context.Context, incidentID, taxonomy, by, reason string) (operate.Incident, error)
	// Redrive restarts a wave whose execution failed, timed out or was
	// aborted before its final verdict. Errors: EINVALID, ENOTFOUND,
	// ECONFLICT (a final verdict; running or succeeded), ETRANSIENT.
	Redrive(ctx context.Context, waveID, by string) (operate.Redriven, error)
}

// Waves reads a wave's execution.
type Waves interface {
	// Wave returns the wave's status and history. Errors: ENOTFOUND.
	Wave(ctx context.Context, waveID string) (Wave, error)
}

// Verdicts settles escalated decisions.
type Verdicts interface {
	// Settle approves (approve true) or rejects the decision on behalf of by.
	// Errors: ENOTFOUND, ECONFLICT when it is already settled, EINVALID.
	Settle(ctx context.Context, decisionID string, approve bool, by, reason string) (ora.DecisionState, error)
}

// Authorizer decides whether a request carries the given scope and returns
// the principal it acts for. Errors: EUNAUTHORIZED (no or bad credentials),
// EFORBIDDEN (the scope is missing).
type Authorizer func(r *http.Request, scope string) (principal string, err error)

// Server holds the API's dependencies. A nil Webhooks leaves the webhook route
// out (on AWS the observe-webhook function serves it); a nil ReadAuth leaves
// the read routes open (ora dev on localhost).
type Server struct {
	Webhooks Webhooks
	Entries  Entries
	Waves    Waves
	Verdicts Verdicts
	Operator Operator
	Motor    Motor
	// Recorded serves GET /motor/waves (the recorded waves a replay
	// re-runs); nil leaves the route out.
	Recorded Recorded
	// Learned serves GET /motor/patterns and POST
	// /motor/patterns/{id}/promote; nil leaves them out.
	Learned   Learned
	Authorize Authorizer
	ReadAuth  bool
	BodyLimit int64
	Logger    *slog.Logger
	// Orientation serves the /api/orientation routes (orientation.go); nil
	// leaves them out.
	Orientation Orientation
	// Namespace returns the namespace of an authorized request's token; nil
	// means every principal is in "main".
	Namespace func(*http.Request) string
	// Secrets are redacted from every response body. Optional.
	Secrets *ora.Secrets
	// Health checks that the stores take a write; GET /healthz answers 503
	// when it fails. Nil: /healthz only says the process answers.
	Health func(context.Context) error
}

// Handler returns the API's http.Handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.routes(mux.HandleFunc)
	return Redacting(s.Secrets, NoDotSegments(mux))
}

// Routes lists the patterns ("METHOD /path") Handler serves with the parts
// s has set, in the order they are registered. The stack's API Gateway
// routes are tested against it, so a route added here and not there fails a
// test rather than answering 404 on AWS.
func (s *Server) Routes() []string {
	var patterns []string
	s.routes(func(pattern string, _ func(http.ResponseWriter, *http.Request)) {
		patterns = append(patterns, pattern)
	})
	return patterns
}

// handle registers a handler for a ServeMux pattern (mux.HandleFunc).
type handle func(pattern string, h func(http.ResponseWriter, *http.Request))

// routes registers every route of the parts s has set with handle.
func (s *Server) routes(handle handle) {
	handle("GET /healthz", s.healthz)
	if s.Webhooks != nil {
		handle("POST /webhooks/{source}", s.webhook)
	}
	s.orientationRoutes(handle)
	handle("GET /signals/{id}", s.signal)
	handle("GET /waves/{id}", s.wave)
	handle("POST /decisions/{id}/approve", func(w http.ResponseWriter, r *http.Request) { s.settle(w, r, true) })
	handle("POST /decisions/{id}/reject", func(w http.ResponseWriter, r *http.Request) { s.settle(w, r, false) })
	if s.Operator != nil {
		handle("GET /incidents", s.incidents)
		handle("GET /incidents/{id}", s.incident)
		handle("POST /waves/{id}/resume", s.resume)
		handle("POST /waves/{id}/resolve", s.resolve)
		handle("POST /incidents/{id}/classification", s.reclassify)
		handle("POST /waves/{id}/redrive", s.redrive)
	}
	if s.Motor != nil {
		handle("GET /motor/versions", s.motorVersions)
		handle("POST /motor/versions", s.motorPropose)
		handle("POST /motor/versions/{version}/promote", s.motorPromote)
		handle("POST /motor/rollback", s.motorRollback)
		handle("POST /motor/versions/{version}/canary", s.motorCanary)
	}
	if s.Recorded != nil {
		handle("GET /motor/waves", s.recordedWaves)
	}
	if s.Learned != nil {
		handle("GET /motor/patterns", s.patterns)
		handle("POST /motor/patterns/{id}/promote", s.promotePattern)
	}
}

// NoDotSegments answers 404 to a path with a dot segment
// ("/webhooks/../github"), which names no resource, rather than the redirect
// to the cleaned path a ServeMux would send; other requests go to h.
func NoDotSegments(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, seg := range strings.Split(r.URL.Path, "/") {
			if seg == "." || seg == ".." {
				writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// healthz answers liveness: 200 {"status":"ok"}, or 503 when Health says
// the stores cannot take a write (the cause is logged, not shown).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if s.Health != nil {
		ctx, cancel := context.WithTimeout(r.Context(), HealthTimeout)
		defer cancel()
		if err := s.Health(ctx); err != nil {
			s.logger().Error("health check failed", "err", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unhealthy", "error": "the store cannot take a write: see the log"})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// HealthTimeout bounds one health check.
const HealthTimeout = 5 * time.Second

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	limit := s.BodyLimit
	if limit <= 0 {
		limit = DefaultBodyLimit
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		s.fail(w, r, ora.Invalid("body", "cannot read: %v", err))
		return
	}
	if int64(len(body)) > limit {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "body: over the limit of " + itoa(limit) + " bytes"})
		return
	}
	rec, err := s.Webhooks.Webhook(r.Context(), r.PathValue("source"), r.Header, body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case rec.Challenge != "":
		writeJSON(w, http.StatusOK, map[string]string{"challenge": rec.Challenge})
	case rec.Probe:
		writeJSON(w, http.StatusOK, rec)
	case rec.Duplicate:
		writeJSON(w, http.StatusOK, rec)
	default:
		writeJSON(w, http.StatusAccepted, rec)
	}
}

func (s *Server) signal(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.ReadAuth {
		if _, err := s.authorizeAny(r, signalScopes(id)...); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	entries, err := s.Entries.Entries(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if s.ReadAuth && strings.HasPrefix(id, proposalPrefix) {
		if err := s.inNamespace(r, entries); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	var sig json.RawMessage
	for i, e := range entries {
		// Task tokens never leave: the digest stays the stored body's.
		entries[i].Body = bounded(redactJSON(e.Body))
		for k := range e.Meta {
			if secretKey(k) {
				e.Meta[k] = Redacted
			}
		}
		if e.Kind == ora.KindSignalReceived {
			sig = entries[i].Body
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"signal": sig, "entries": entries})
}

func (s *Server) wave(w http.ResponseWriter, r *http.Request) {
	if !s.authorizeRead(w, r) {
		return
	}
	wave, err := s.Waves.Wave(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	wave.History, wave.Output = redactJSON(wave.History), bounded(redactJSON(wave.Output))
	writeJSON(w, http.StatusOK, wave)
}

func (s *Server) settle(w http.ResponseWriter, r *http.Request, approve bool) {
	principal, err := s.authorize(r, ScopeApprove)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var in struct {
		Reason string `json:"reason"`
	}
	if r.ContentLength != 0 {
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&in); err != nil && !errors.Is(err, io.EOF) {
			s.fail(w, r, ora.Invalid("body", "not JSON: %v", err))
			return
		}
	}
	st, err := s.Verdicts.Settle(r.Context(), r.PathValue("id"), approve, principal, in.Reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) incidents(w http.ResponseWriter, r *http.Request) {
	if !s.authorizeScope(w, r, ScopeOperatorRead) {
		return
	}
	incs, sum, err := s.Operator.Incidents(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if incs == nil {
		incs = []operate.Incident{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"incidents": incs, "summary": sum})
}

func (s *Server) incident(w http.ResponseWriter, r *http.Request) {
	if !s.authorizeScope(w, r, ScopeOperatorRead) {
		return
	}
	inc, err := s.Operator.Incident(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inc)
}

// resolve answers POST /waves/{id}/resolve {"executed": true|false,
// "reason": "..."} (scope ora.operate).
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	principal, err := s.authorize(r, ScopeOperate)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var in struct {
		Executed *bool  `json:"executed"`
		Reason   string `json:"reason"`
	}
	if err := decodeOptional(r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	if in.Executed == nil {
		s.fail(w, r, ora.Invalid("executed", "required: true (the action ran) or false (it did not)"))
		return
	}
	res, err := s.Operator.Resolve(r.Context(), r.PathValue("id"), *in.Executed, principal, in.Reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// redrive answers POST /waves/{id}/redrive (scope ora.operate, no body).
func (s *Server) redrive(w http.ResponseWriter, r *http.Request) {
	principal, err := s.authorize(r, ScopeOperate)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := decodeOptional(r, &struct{}{}); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.Operator.Redrive(r.Context(), r.PathValue("id"), principal)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	principal, err := s.authorize(r, ScopeOperate)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var in operate.ResumeRequest
	if err := decodeOptional(r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	in.By = principal
	res, err := s.Operator.Resume(r.Context(), r.PathValue("id"), in)
	if ge, ok := ora.Existing[*motor.GateError](err); ok {
		// The motor version failed the gate: the wave stays paused.
		writeJSON(w, http.StatusConflict, map[string]any{"error": "resume refused, the wave stays paused: " + ge.Error(), "failing": ge.Failing})
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// reclassify answers POST /incidents/{id}/classification {"taxonomy",
// "reason"}: a person corrects the classifier (scope ora.operate).
func (s *Server) reclassify(w http.ResponseWriter, r *http.Request) {
	principal, err := s.authorize(r, ScopeOperate)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var in struct {
		Taxonomy string `json:"taxonomy"`
		Reason   string `json:"reason"`
	}
	if err := decodeOptional(r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	inc, err := s.Operator.Reclassify(r.Context(), r.PathValue("id"), in.Taxonomy, principal, in.Reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inc)
}

func (s *Server) motorVersions(w http.ResponseWriter, r *http.Request) {
	if !s.authorizeScope(w, r, ScopeOperatorRead) {
		return
	}
	vs, events, err := s.Motor.Versions(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	current := ""
	for _, v := range vs {
		if v.Status == "current" {
			current = v.Version
		}
	}
	if events == nil {
		events = []motor.Event{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"current": current, "versions": vs, "events": events})
}

// recordedWaves answers GET /motor/waves?since=RFC3339&wave=ID&limit=N:
// the recorded waves (signal, packet, decision, verdict) a replay re-runs.
func (s *Server) recordedWaves(w http.ResponseWriter, r *http.Request) {
	if !s.authorizeScope(w, r, ScopeOperatorRead) {
		return
	}
	q := r.URL.Query()
	since := time.Now().Add(-DefaultRecordedSince)
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			s.fail(w, r, ora.Invalid("since", "%q is not an RFC 3339 time", v))
			return
		}
		since = t
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.fail(w, r, ora.Invalid("limit", "%q is not a count", v))
			return
		}
		limit = n
	}
	waves, err := s.Recorded.Waves(r.Context(), since, q.Get("wave"), limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"since": since.UTC(), "waves": waves})
}

func (s *Server) motorPropose(w http.ResponseWriter, r *http.Request) {
	if _, err := s.authorize(r, ScopeOperate); err != nil {
		s.fail(w, r, err)
		return
	}
	var b motor.Bundle
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		s.fail(w, r, ora.Invalid("body", "not a motor bundle: %v", err))
		return
	}
	got, err := s.Motor.Propose(r.Context(), b)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, got)
}

func (s *Server) motorPromote(w http.ResponseWriter, r *http.Request) {
	principal, reason, ok := s.reasoned(w, r, ScopeOperate)
	if !ok {
		return
	}
	ev, err := s.Motor.Promote(r.Context(), r.PathValue("version"), reason, principal)
	s.motorAnswer(w, r, http.StatusOK, ev, err)
}

// reasoned authorizes r for scope and reads its optional {"reason"} body;
// when ok is false the error is answered.
func (s *Server) reasoned(w http.ResponseWriter, r *http.Request, scope string) (principal, reason string, ok bool) {
	principal, err := s.authorize(r, scope)
	if err != nil {
		s.fail(w, r, err)
		return "", "", false
	}
	var in struct {
		Reason string `json:"reason"`
	}
	if err := decodeOptional(r, &in); err != nil {
		s.fail(w, r, err)
		return "", "", false
	}
	return principal, in.Reason, true
}

// patterns answers GET /motor/patterns: the learned patterns (incident
// fingerprints with a confirmed fix), each with the motor version that
// carries it.
func (s *Server) patterns(w http.ResponseWriter, r *http.Request) {
	if !s.authorizeScope(w, r, ScopeOperatorRead) {
		return
	}
	ps, err := s.Learned.List(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if ps == nil {
		ps = []operate.Pattern{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"patterns": ps})
}

// promotePattern answers POST /motor/patterns/{id}/promote {"reason"}: the
// next motor version carrying the pattern, promoted through the gate.
func (s *Server) promotePattern(w http.ResponseWriter, r *http.Request) {
	principal, reason, ok := s.reasoned(w, r, ScopeOperate)
	if !ok {
		return
	}
	b, ev, err := s.Learned.Promote(r.Context(), r.PathValue("id"), reason, principal)
	if err == nil {
		writeJSON(w, http.StatusOK, map[string]any{"version": b.Version, "digest": b.Digest, "learned": b.Learned, "event": ev})
		return
	}
	s.motorAnswer(w, r, http.StatusOK, ev, err)
}

// motorAnswer writes a motor event, or the error: a failing gate answers
// 409 naming the failing waves.
func (s *Server) motorAnswer(w http.ResponseWriter, r *http.Request, status int, ev motor.Event, err error) {
	if ge, ok := ora.Existing[*motor.GateError](err); ok {
		writeJSON(w, http.StatusConflict, map[string]any{"error": ge.Error(), "failing": ge.Failing})
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, status, ev)
}

func (s *Server) motorRollback(w http.ResponseWriter, r *http.Request) {
	principal, reason, ok := s.reasoned(w, r, ScopeOperate)
	if !ok {
		return
	}
	ev, err := s.Motor.Rollback(r.Context(), reason, principal)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ev)
}

// decodeOptional decodes a small JSON body into v; an empty body leaves v as
// it is. Errors: EINVALID.
func decodeOptional(r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return ora.Invalid("body", "not the expected JSON: %v", err)
	}
	return nil
}

// authorizeScope is authorizeRead for a route of its own scope.
func (s *Server) authorizeScope(w http.ResponseWriter, r *http.Request, scope string) bool {
	if !s.ReadAuth {
		return true
	}
	if _, err := s.authorize(r, scope); err != nil {
		s.fail(w, r, err)
		return false
	}
	return true
}

func (s *Server) authorizeRead(w http.ResponseWriter, r *http.Request) bool {
	if !s.ReadAuth {
		return true
	}
	if _, err := s.authorize(r, ScopeRead); err != nil {
		s.fail(w, r, err)
		return false
	}
	return true
}

func (s *Server) authorize(r *http.Request, scope string) (string, error) {
	if s.Authorize == nil {
		// No authorizer: protected routes are refused, never opened.
		return "", ora.Errorf(ora.EUNAUTHORIZED, "no authorizer configured")
	}
	return s.Authorize(r, scope)
}

// Status maps a domain error code to its HTTP status.
func Status(code string) int {
	switch code {
	case ora.EINVALID:
		return http.StatusBadRequest
	case ora.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case ora.EFORBIDDEN:
		return http.StatusForbidden
	case ora.ENOTFOUND:
		return http.StatusNotFound
	case ora.ECONFLICT:
		return http.StatusConflict
	case ora.ETRANSIENT:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := ora.ErrorCode(err)
	status := Status(code)
	if status >= 500 {
		id := r.Header.Get("X-Request-Id")
		if id == "" {
			id = uuid.NewString()
		}
		s.logger().Error("request failed", "request_id", id, "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("X-Request-Id", id)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ora"`)
	}
	writeJSON(w, status, map[string]string{"error": ora.ErrorMessage(err)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// BearerToken returns the token of an "Authorization: Bearer ..." header.
func BearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const p = "Bearer "
	if len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return "", false
	}
	return strings.TrimSpace(h[len(p):]), true
}

// motorCanary answers POST /motor/versions/{version}/canary with the
// canary's event; the body is a motor.CanaryRequest.
func (s *Server) motorCanary(w http.ResponseWriter, r *http.Request) {
	principal, err := s.authorize(r, ScopeOperate)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var in motor.CanaryRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		s.fail(w, r, ora.Invalid("body", "not a canary request: %v", err))
		return
	}
	ev, err := s.Motor.Canary(r.Context(), r.PathValue("version"), in, principal)
	s.motorAnswer(w, r, http.StatusCreated, ev, err)
}
