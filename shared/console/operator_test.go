package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/console"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// operator is a hand-written fake of httpapi.Operator: one incident whose
// wave sig-1 is paused; calls records what was asked.
type operator struct{ calls *[]string }

var seen = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func (o operator) Incidents(context.Context) ([]operate.Incident, operate.Summary, error) {
	inc, _ := o.Incident(context.Background(), "incident-0123456789abcdef")
	return []operate.Incident{inc}, operate.Summary{Incidents: 1, Open: 1, Occurrences: 1, Paused: 1, ClassificationAccuracy: 1,
		ByMotor: map[string]operate.MotorKPIs{"1.0.0": {Incidents: 1, Overridden: 1, ClassificationAccuracy: 0, Paused: 2, Resumed: 1, ResumptionRate: 0.5, MTTRSeconds: 90}}}, nil
}

func (o operator) Incident(_ context.Context, id string) (operate.Incident, error) {
	if id != "incident-0123456789abcdef" {
		return operate.Incident{}, ora.Errorf(ora.ENOTFOUND, "no incident %s", id)
	}
	return operate.Incident{ID: id, Classification: "motor", Status: "open", FirstSeen: seen, LastSeen: seen,
		Fingerprint: operate.Fingerprint{Taxonomy: "MOTOR-RULES", Stage: "Act", Error: "InternalError", MotorVersion: "1.0.0"},
		Occurrences: []operate.Occurrence{{WaveID: "sig-1", OperatorDecisionID: "op-1", Action: "pause", At: seen}}}, nil
}

func (o operator) Resume(_ context.Context, wave string, req operate.ResumeRequest) (operate.Resumed, error) {
	call := "resume " + wave + " " + req.MotorVersion + " " + req.By
	if req.AsIs {
		call += " as-is"
	}
	if p := req.Patch; p != nil {
		call += " " + p.Kind + ":" + p.Target + "=" + string(p.Value)
	}
	*o.calls = append(*o.calls, call)
	return operate.Resumed{WaveID: wave, ResumeAt: "Act", MotorVersion: "1.0.0", State: "RESUMING"}, nil
}

// learned lists one learned pattern, carried by motor 0.0.2; calls records
// the promotions asked.
type learned struct{ calls *[]string }

func (learned) List(context.Context) ([]operate.Pattern, error) {
	return []operate.Pattern{{ID: "pattern-8c41d0a2b7e95f13", Classification: "app", Taxonomy: "APP-SPEC", Stage: "Act", Error: "InvalidInput",
		Fix: "app-patch:mapping@3f2a9c0d1e7b", Confirmed: 2, Motor: "0.0.2"}}, nil
}

func (l learned) Promote(_ context.Context, id, reason, by string) (motor.Bundle, motor.Event, error) {
	*l.calls = append(*l.calls, "promote pattern "+id+" "+by+" "+reason)
	return motor.Bundle{Version: "0.0.3"}, motor.Event{Type: "promote", Version: "0.0.3", Previous: "0.0.2"}, nil
}

// Reclassify and Redrive are routes the console does not call.
func (o operator) Reclassify(context.Context, string, string, string, string) (operate.Incident, error) {
	return operate.Incident{}, ora.Errorf(ora.EINTERNAL, "the console does not reclassify")
}

func (o operator) Redrive(context.Context, string, string) (operate.Redriven, error) {
	return operate.Redriven{}, ora.Errorf(ora.EINTERNAL, "the console does not redrive")
}

func (o operator) Resolve(_ context.Context, wave string, executed bool, by, reason string) (operate.Resolution, error) {
	*o.calls = append(*o.calls, "resolve "+wave+" "+by+" "+reason)
	return operate.Resolution{Resumed: operate.Resumed{WaveID: wave, ResumeAt: "Validate"}, Executed: executed}, nil
}

// motors is a fake of httpapi.Motor: 1.0.0 current, 1.1.0 proposed and
// failing the gate on golden wave demo-high.
type motors struct{ calls *[]string }

func (m motors) Versions(context.Context) ([]motor.Version, []motor.Event, error) {
	return []motor.Version{
		{Bundle: motor.Bundle{Version: "1.1.0", Changelog: "lower the bar"}, Status: "proposed", Diff: []string{"- confidence: 0.95", "+ confidence: 0.6"}},
		{Bundle: motor.Bundle{Version: "1.0.0", Changelog: "the configured rules file"}, Status: "current"},
	}, nil, nil
}

func (m motors) Propose(_ context.Context, b motor.Bundle) (motor.Bundle, error) { return b, nil }

func (m motors) Promote(_ context.Context, v, reason, by string) (motor.Event, error) {
	*m.calls = append(*m.calls, "promote "+v+" "+by+" "+reason)
	ge := &motor.GateError{Version: v, Failing: []string{"demo-high"}}
	return motor.Event{}, &ora.Error{Code: ora.ECONFLICT, Message: ge.Error(), Existing: ge}
}

func (m motors) Canary(_ context.Context, v string, req motor.CanaryRequest, by string) (motor.Event, error) {
	*m.calls = append(*m.calls, fmt.Sprintf("canary %s %s share=%g sources=%v waves=%d duration=%s reason=%s", v, by, req.Share, req.Sources, req.Waves, req.Duration, req.Reason))
	return motor.Event{Type: motor.EventCanary, Version: v, Previous: "1.0.0"}, nil
}

func (m motors) Rollback(_ context.Context, reason, by string) (motor.Event, error) {
	return motor.Event{}, ora.Conflict(nil, "motor 1.0.0 has no previous version to roll back to")
}

// orientation is a fake of httpapi.Orientation with one pending proposal
// made by "pat" in namespace main.
type orientation struct{ calls *[]string }

func (o orientation) view() ora.ProposalView {
	return ora.ProposalView{Status: ora.ProposalPending, Proposal: ora.ProfileProposal{ID: "p-1", RequestedBy: "pat", Namespace: "main",
		BaseProfileID: "default", BaseProfileVersion: 1, EffectiveWaves: 2, HorizonPolicy: "revert", Reason: "more room"}}
}

func (o orientation) Proposal(_ context.Context, id string) (ora.ProposalView, error) {
	if id != "p-1" {
		return ora.ProposalView{}, ora.Errorf(ora.ENOTFOUND, "proposal %s", id)
	}
	return o.view(), nil
}

func (o orientation) CurrentProfile(context.Context) (ora.Profile, error) {
	return ora.Profile{ID: "default", Version: 1, TokenBudget: 1000, Bands: ora.DefaultBands(), UpdatedBy: "ora"}, nil
}

func (o orientation) Propose(_ context.Context, p ora.ProfileProposal, _ ora.Principal) (ora.ProposalView, error) {
	return ora.ProposalView{Proposal: p}, nil
}

func (o orientation) Approve(_ context.Context, id string, by ora.Principal) (ora.ProposalView, error) {
	*o.calls = append(*o.calls, "approve "+id+" "+by.Subject)
	v := o.view()
	v.Status, v.Version = ora.ProposalApproved, 2
	return v, nil
}

func (o orientation) Reject(_ context.Context, id, reason string, by ora.Principal) (ora.ProposalView, error) {
	*o.calls = append(*o.calls, "reject "+id+" "+by.Subject+" "+reason)
	v := o.view()
	v.Status = ora.ProposalRejected
	return v, nil
}

func (o orientation) Packet(_ context.Context, wave string) (ora.OrientationPacket, error) {
	return ora.OrientationPacket{WaveID: wave, ProfileID: "default", ProfileVersion: 1, TokenBudget: 1000, TokenUsed: 40, Digest: "abc"}, nil
}

func (o orientation) Feedback(context.Context, string) ([]ora.Feedback, error) { return nil, nil }

// The routes the console does not call.
func (o orientation) RecordFeedback(context.Context, ora.Feedback) error {
	return ora.Errorf(ora.EINTERNAL, "the console records no feedback")
}
func (o orientation) Verify(context.Context, string) (orient.Verification, error) {
	return orient.Verification{}, ora.Errorf(ora.EINTERNAL, "the console verifies no packet")
}
func (o orientation) Admin(context.Context) (orient.AdminView, error) {
	return orient.AdminView{}, ora.Errorf(ora.EINTERNAL, "the console reads no admin settings")
}
func (o orientation) SetAdmin(context.Context, orient.AdminSettings, ora.Principal) (orient.AdminView, error) {
	return orient.AdminView{}, ora.Errorf(ora.EINTERNAL, "the console sets no admin settings")
}

// operatorServer is server with the operator's pages, their tokens, and the
// development approver (which approves and reads only).
func operatorServer(t *testing.T) (*console.Server, *[]string) {
	t.Helper()
	s, _ := server(t, false)
	var calls []string
	s.Operator, s.Motor, s.Orientation, s.Learned = operator{&calls}, motors{&calls}, orientation{&calls}, learned{&calls}
	s.Replay = func(_ context.Context, b motor.Bundle) (motor.Report, error) {
		return motor.Report{Motor: b.Version, Failing: []string{"demo-high"}, Waves: []motor.Change{{Name: "demo-high", Changed: []string{"band"}}}}, nil
	}
	tokens := []httpapi.Token{
		{Token: "dev-approver-token", Subject: "developer", Scopes: []string{httpapi.ScopeApprove, httpapi.ScopeRead, httpapi.ScopeOperatorRead}},
		{Token: "operator-token-1", Subject: "olga", Scopes: []string{httpapi.ScopeOperate}},
		{Token: "reader-token-22", Subject: "rita", Scopes: []string{httpapi.ScopeRead}},
		{Token: "proposer-token-1", Subject: "pat", Scopes: []string{httpapi.ScopeOrientationApprove}},
		{Token: "lead-token-1", Subject: "lee", Scopes: []string{httpapi.ScopeOrientationApprove}},
		{Token: "team-b-token-1", Subject: "bo", Namespace: "team-b", Scopes: []string{httpapi.ScopeOrientationApprove}},
	}
	s.Authorize, s.Namespace, s.DevApprover = httpapi.StaticTokens(tokens), httpapi.TokenNamespaces(tokens), "dev-approver-token"
	w := s.Waves.(waves)
	paused := w["sig-1"]
	paused.Operator = &operate.OperatorState{State: operate.StatePaused, IncidentID: "incident-0123456789abcdef"}
	w["sig-1"] = paused
	s.Ledger.(ledger).entries["orientation-proposal:p-1"] = []ora.Entry{entry(t, ora.KindProfileProposal, "", orientation{}.view().Proposal, nil)}
	return s, &calls
}

func TestOperatorPagesRender(t *testing.T) {
	s, _ := operatorServer(t)
	h := s.Handler()
	tests := []struct {
		path string
		want []string
	}{
		{"/console/incidents", []string{"1 incidents (1 open)", "classification accuracy 100%", `<tr data-motor="1.0.0">`, "0% (1 corrected)", "50% (1 of 2)", `<tr data-pattern="pattern-8c41d0a2b7e95f13">`, "app-patch:mapping@3f2a9c0d1e7b", "in 0.0.2", "MOTOR-RULES", `href="/console/incidents/incident-0123456789abcdef"`, "1 paused", `href="/console/motor"`, "developer (dev)"}},
		{"/console/incidents/incident-0123456789abcdef", []string{"InternalError", "under motor 1.0.0", `action="/console/waves/sig-1/resume"`, "Bearer token with <code>ora.operate</code> (developer lacks it)"}},
		{"/console/motor", []string{"Current: <strong id=\"motor-current\">1.0.0</strong>", "fails: demo-high", "changed band", `action="/console/motor/versions/1.1.0/promote"`, "2 changes from current"}},
		{"/console/orientation", []string{"default v1", "p-1", "more room", `action="/console/orientation/proposals/p-1/approve"`, "Bearer token with <code>orientation.approve</code>", "40 / 1000"}},
		{"/console/login", []string{"Signed in as <strong>developer</strong>, the development approver", "<code>ora.operate</code>", "Cognito", "tokens:"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			code, body := get(t, h, tt.path, nil)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d", tt.path, code)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s lacks %q", tt.path, w)
				}
			}
		})
	}
	if code, _ := get(t, h, "/console/incidents/incident-nope", nil); code != http.StatusNotFound {
		t.Errorf("an unknown incident: %d, want 404", code)
	}
}

// The operator's forms make the checks of the API's routes: the session's
// form token, the route's scope (the development approver has none of
// them), the proposal's namespace and separation of duties; a refused token
// brings the form back with what was typed.
func TestOperatorForms(t *testing.T) {
	tests := []struct {
		name, path string
		form       url.Values
		code       int
		call       string   // what the service was asked, "" nothing
		body       []string // in the answer
	}{
		{"resume as the dev approver", "/console/waves/sig-1/resume", url.Values{"incident": {"incident-0123456789abcdef"}}, http.StatusForbidden, "",
			[]string{"the token lacks scope ora.operate", `id="retry"`, `name="incident" value="incident-0123456789abcdef"`}},
		{"resume with a wrong token", "/console/waves/sig-1/resume", url.Values{"token": {"nobody-token"}, "motor": {"1.0.0"}}, http.StatusUnauthorized, "",
			[]string{"unknown bearer token", `name="motor" value="1.0.0"`}},
		{"resume", "/console/waves/sig-1/resume", url.Values{"token": {"operator-token-1"}, "incident": {"incident-0123456789abcdef"}}, http.StatusSeeOther, "resume sig-1  olga", nil},
		{"resume as is", "/console/waves/sig-1/resume", url.Values{"token": {"operator-token-1"}, "as_is": {"yes"}}, http.StatusSeeOther, "resume sig-1  olga as-is", nil},
		{"resume with a patch", "/console/waves/sig-1/resume", url.Values{"token": {"operator-token-1"}, "patch_kind": {"input"}, "patch_target": {"issue.title"}, "patch_value": {`"Wave stuck"`}}, http.StatusSeeOther, `resume sig-1  olga input:issue.title="Wave stuck"`, nil},
		{"resume with a motor version", "/console/waves/sig-1/resume", url.Values{"token": {"operator-token-1"}, "motor": {"1.1.0"}}, http.StatusSeeOther, "resume sig-1 1.1.0 olga", nil},
		{"resolve without an answer", "/console/waves/sig-1/resolve", url.Values{"token": {"operator-token-1"}}, http.StatusBadRequest, "", []string{"executed"}},
		{"resolve", "/console/waves/sig-1/resolve", url.Values{"token": {"operator-token-1"}, "executed": {"no"}, "reason": {"never sent"}}, http.StatusSeeOther, "resolve sig-1 olga never sent", nil},
		{"promote failing the gate", "/console/motor/versions/1.1.0/promote", url.Values{"token": {"operator-token-1"}, "reason": {"try it"}}, http.StatusConflict, "promote 1.1.0 olga try it",
			[]string{"failed the gate", "<li>demo-high</li>", `value="try it"`}},
		{"promote as the dev approver keeps the reason", "/console/motor/versions/1.1.0/promote", url.Values{"reason": {"ship it"}}, http.StatusForbidden, "",
			[]string{`id="retry-reason" name="reason" type="text" value="ship it"`}},
		{"canary", "/console/motor/versions/1.1.0/canary", url.Values{"token": {"operator-token-1"}, "share": {"10"}, "sources": {"github, demo"}, "waves": {"50"}, "duration": {"24h"}, "reason": {"a tenth first"}},
			http.StatusSeeOther, "canary 1.1.0 olga share=0.1 sources=[github demo] waves=50 duration=24h reason=a tenth first", nil},
		{"canary as the dev approver keeps the share", "/console/motor/versions/1.1.0/canary", url.Values{"share": {"10"}}, http.StatusForbidden, "",
			[]string{`name="share" value="10"`}},
		{"promote a pattern", "/console/patterns/pattern-8c41d0a2b7e95f13/promote", url.Values{"token": {"operator-token-1"}, "reason": {"seen twice"}}, http.StatusSeeOther,
			"promote pattern pattern-8c41d0a2b7e95f13 olga seen twice", nil},
		{"rollback with nothing to roll back to", "/console/motor/rollback", url.Values{"token": {"operator-token-1"}}, http.StatusConflict, "", []string{"no previous version"}},
		{"approve a proposal", "/console/orientation/proposals/p-1/approve", url.Values{"token": {"lead-token-1"}}, http.StatusSeeOther, "approve p-1 lee", nil},
		{"approve one's own proposal", "/console/orientation/proposals/p-1/approve", url.Values{"token": {"proposer-token-1"}}, http.StatusForbidden, "", []string{"cannot approve it too"}},
		{"reject one's own proposal", "/console/orientation/proposals/p-1/reject", url.Values{"token": {"proposer-token-1"}, "reason": {"withdrawn"}}, http.StatusSeeOther, "reject p-1 pat withdrawn", nil},
		{"approve another namespace's proposal", "/console/orientation/proposals/p-1/approve", url.Values{"token": {"team-b-token-1"}}, http.StatusForbidden, "", []string{"namespace main"}},
		{"approve as the dev approver", "/console/orientation/proposals/p-1/approve", url.Values{}, http.StatusForbidden, "", []string{"orientation.approve"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, calls := operatorServer(t)
			h := s.Handler()
			cookie, token := formSession(t, h)
			tt.form.Set("csrf", token)
			req := httptest.NewRequest(http.MethodPost, tt.path, strings.NewReader(tt.form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Cookie", cookie)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if got := strings.Join(*calls, ","); rec.Code != tt.code || got != tt.call {
				t.Fatalf("got %d, calls %q; want %d, %q\n%s", rec.Code, got, tt.code, tt.call, rec.Body.String())
			}
			for _, w := range tt.body {
				if !strings.Contains(rec.Body.String(), w) {
					t.Errorf("the answer lacks %q", w)
				}
			}
		})
	}
	t.Run("without the form token", func(t *testing.T) {
		s, calls := operatorServer(t)
		req := httptest.NewRequest(http.MethodPost, "/console/waves/sig-1/resume", strings.NewReader("token=operator-token-1"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || len(*calls) != 0 {
			t.Errorf("got %d, calls %v; want 403 and none", rec.Code, *calls)
		}
	})
}

// Off loopback the incidents and motor pages need ora.read, the
// orientation page orientation.read everywhere; the sign-in page says which.
func TestOperatorPagesNeedTheirScope(t *testing.T) {
	s, _ := operatorServer(t)
	s.ReadAuth, s.DevApprover = true, ""
	h := s.Handler()
	for _, path := range []string{"/console/incidents", "/console/motor", "/console/orientation"} {
		code, body := get(t, h, path, http.Header{"Authorization": {"Bearer reader-token-22"}})
		if path == "/console/orientation" {
			if code != http.StatusOK {
				t.Errorf("GET %s with orientation.read: %d, want 200", path, code)
			}
			continue
		}
		if code != http.StatusForbidden || !strings.Contains(body, "needs a bearer token with <code>ora.read</code>") {
			t.Errorf("GET %s without ora.read: %d, want 403 and the sign-in page naming ora.read", path, code)
		}
	}
}
