package console_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// The fakes below answer every form's call with err, as the operator, the
// motor registry, the learner, the verdicts and orientation would refuse
// it; the pages' reads are the operator fakes'.
type refusingOperator struct {
	operator
	err error
}

func (o refusingOperator) Resume(context.Context, string, operate.ResumeRequest) (operate.Resumed, error) {
	return operate.Resumed{}, o.err
}

func (o refusingOperator) Resolve(context.Context, string, bool, string, string) (operate.Resolution, error) {
	return operate.Resolution{}, o.err
}

type refusingMotors struct {
	motors
	err error
}

func (m refusingMotors) Promote(context.Context, string, string, string) (motor.Event, error) {
	return motor.Event{}, m.err
}

func (m refusingMotors) Rollback(context.Context, string, string) (motor.Event, error) {
	return motor.Event{}, m.err
}

func (m refusingMotors) Canary(context.Context, string, motor.CanaryRequest, string) (motor.Event, error) {
	return motor.Event{}, m.err
}

type refusingLearned struct{ err error }

// List has one candidate pattern, which the incidents page offers to
// promote.
func (l refusingLearned) List(context.Context) ([]operate.Pattern, error) {
	return []operate.Pattern{{ID: "pattern-8c41d0a2b7e95f13", Classification: "app", Taxonomy: "APP-SPEC", Stage: "Act", Error: "InvalidInput",
		Fix: "app-patch:mapping@3f2a9c0d1e7b", Confirmed: 2}}, nil
}

func (l refusingLearned) Promote(context.Context, string, string, string) (motor.Bundle, motor.Event, error) {
	return motor.Bundle{}, motor.Event{}, l.err
}

type refusingVerdicts struct{ err error }

func (v refusingVerdicts) Settle(context.Context, string, bool, string, string) (ora.DecisionState, error) {
	return ora.DecisionState{}, v.err
}

type refusingOrientation struct {
	orientation
	err error
}

func (o refusingOrientation) Approve(context.Context, string, ora.Principal) (ora.ProposalView, error) {
	return ora.ProposalView{}, o.err
}

func (o refusingOrientation) Reject(context.Context, string, string, ora.Principal) (ora.ProposalView, error) {
	return ora.ProposalView{}, o.err
}

// gateRefusal is the ECONFLICT the motor registry answers when the gate
// fails, carrying the *motor.GateError.
func gateRefusal(v string, failing ...string) error {
	ge := &motor.GateError{Version: v, Failing: failing}
	return &ora.Error{Code: ora.ECONFLICT, Message: ge.Error(), Existing: ge}
}

// post sends a console form with the session's form token and returns the
// answer.
func post(t *testing.T, h http.Handler, path string, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	cookie, token := formSession(t, h)
	form.Set("csrf", token)
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", cookie)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Each operator action refused by the service behind it (every refusal
// that service documents, in its own words) answers the page the form was
// sent from, under the refusal's status, naming what was refused and why,
// the values typed back in the form; the gate's failing cases are listed.
func TestRefusalsShowOnThePage(t *testing.T) {
	const incident = "incident-0123456789abcdef"
	resume := url.Values{"token": {"operator-token-1"}, "incident": {incident}, "motor": {"1.1.0"}, "patch_kind": {"input"},
		"patch_target": {"issue.titel"}, "patch_value": {`"Wave stuck"`}}
	resumeKept := []string{`<h1>Incident`, `value="1.1.0"`, `<option value="input" selected>`, `value="issue.titel"`, `&#34;Wave stuck&#34;</textarea>`}
	resolve := url.Values{"token": {"operator-token-1"}, "incident": {incident}, "executed": {"yes"}, "reason": {"saw it in the tracker"}}
	resolveKept := []string{`<h1>Incident`, `value="yes" required checked`, `value="saw it in the tracker"`}
	promote := url.Values{"token": {"operator-token-1"}, "reason": {"ship the fix"}}
	canary := url.Values{"token": {"operator-token-1"}, "share": {"10"}, "sources": {"github"}, "waves": {"50"}, "reason": {"try it on a tenth"}}
	canaryKept := []string{`id="share-1.1.0" name="share" type="text" inputmode="decimal" value="10"`, `value="github"`, `value="50"`, `value="try it on a tenth"`, `<details class="canary" open>`}
	pattern := url.Values{"token": {"operator-token-1"}, "reason": {"seen twice"}}
	settle := url.Values{"token": {"dev-approver-token"}, "reason": {"looks right"}}
	proposal := url.Values{"token": {"lead-token-1"}, "reason": {"more room, fine"}}

	type row struct {
		name, path string
		form       url.Values
		err        error
		code       int
		what       string
		want       []string
	}
	var rows []row
	add := func(action, path string, form url.Values, what string, kept []string, refusals map[string]error) {
		for name, err := range refusals {
			rows = append(rows, row{action + "/" + name, path, form, err, 0, what, append([]string{ora.ErrorMessage(err)}, kept...)})
		}
	}
	add("resume", "/console/waves/sig-1/resume", resume, "resume wave sig-1", resumeKept, map[string]error{
		"bare resume of a motor incident": ora.Invalid("motor_version", "incident %s is classified motor (MOTOR-RULES): %s", incident, "a motor failure resumes under a new motor version: propose one with the fix and give it"),
		"patch path not in the payload":   ora.Invalid("patch.value", "$.issue.titel is not in the signal's payload"),
		"no such wave":                    ora.Errorf(ora.ENOTFOUND, "no wave %q", "sig-1"),
		"not paused":                      ora.Conflict(nil, "wave sig-1 is not paused"),
		"the gate refused the version":    gateRefusal("1.1.0", "demo-high", "incident-act-timeout"),
	})
	add("resolve", "/console/waves/sig-1/resolve", resolve, "resolve wave sig-1", resolveKept, map[string]error{
		"no such wave":      ora.Errorf(ora.ENOTFOUND, "no wave %q", "sig-1"),
		"not on an unknown": ora.Conflict(nil, "wave sig-1 did not pause on an unknown outcome"),
		"bad reason":        ora.Invalid("reason", "at most 500 characters"),
	})
	add("promote", "/console/motor/versions/1.1.0/promote", promote, "promote motor 1.1.0", []string{`<h1>Motor</h1>`, `value="ship the fix"`}, map[string]error{
		"not proposed":    ora.Errorf(ora.ENOTFOUND, "no proposed motor %q", "1.1.0"),
		"the gate failed": gateRefusal("1.1.0", "demo-high"),
	})
	add("rollback", "/console/motor/rollback", url.Values{"token": {"operator-token-1"}, "reason": {"too eager"}}, "roll back the motor", []string{`<h1>Motor</h1>`}, map[string]error{
		"nothing to roll back to": ora.Conflict(nil, "motor 1.0.0 has no previous version to roll back to"),
	})
	add("canary", "/console/motor/versions/1.1.0/canary", canary, "start a canary of motor 1.1.0", canaryKept, map[string]error{
		"share out of range": ora.Invalid("share", "%v is not a fraction between 0 and 1", 1.5),
		"not proposed":       ora.Errorf(ora.ENOTFOUND, "no proposed motor %q", "1.1.0"),
		"already current":    ora.Conflict(nil, "motor %s is already current", "1.1.0"),
		"one running":        ora.Conflict(nil, "a canary of motor %s is running: wait for its end", "1.0.1"),
		"the gate failed":    gateRefusal("1.1.0", "demo-high"),
	})
	const pat = "pattern-8c41d0a2b7e95f13"
	add("pattern promote", "/console/patterns/"+pat+"/promote", pattern, "promote learned pattern "+pat, []string{`<h1>Incidents</h1>`, `value="seen twice"`}, map[string]error{
		"no such pattern": ora.Errorf(ora.ENOTFOUND, "no learned pattern %s", pat),
		"carried already": ora.Conflict(nil, "motor 0.0.2 carries pattern %s already", pat),
		"the gate failed": gateRefusal("0.0.3", "incident-act-timeout"),
		"invalid":         ora.Invalid("learned[0].taxonomy", "%q is not a class of %q", "APP-SPEC", "motor"),
	})
	for _, v := range []string{"approve", "reject"} {
		add(v+" decision", "/console/decisions/dec-1/"+v, settle, v+" decision dec-1", []string{`<h1>Wave`, `value="looks right"`}, map[string]error{
			"settled already": ora.Conflict(nil, "decision dec-1 is approved, not awaiting approval"),
			"no decision":     ora.Errorf(ora.ENOTFOUND, "no decision %s", "dec-1"),
		})
		add(v+" decision from the approvals", "/console/decisions/dec-1/"+v, url.Values{"token": {"dev-approver-token"}, "reason": {"looks right"}, "from": {"approvals"}},
			v+" decision dec-1", []string{`<h1>Approvals</h1>`, `value="looks right"`}, map[string]error{
				"settled already": ora.Conflict(nil, "decision dec-1 is approved, not awaiting approval"),
			})
		add(v+" proposal", "/console/orientation/proposals/p-1/"+v, proposal, v+" proposal p-1", []string{`<h1>Orientation</h1>`, `value="more room, fine"`}, map[string]error{
			"decided already": ora.Conflict(nil, "proposal p-1 is approved already"),
			"invalid change":  ora.Invalid("change.bands", "band identity: min above max"),
			"forbidden":       ora.Errorf(ora.EFORBIDDEN, "the proposal is in namespace team-b"),
		})
	}
	// The console's own refusals, before any service call.
	rows = append(rows,
		row{"resolve/without an answer", "/console/waves/sig-1/resolve", url.Values{"token": {"operator-token-1"}, "incident": {incident}, "reason": {"kept"}}, nil, http.StatusBadRequest,
			"resolve wave sig-1", []string{"executed: required: say whether the action ran", `value="kept"`}},
		row{"canary/share not a number", "/console/motor/versions/1.1.0/canary", url.Values{"token": {"operator-token-1"}, "share": {"a tenth"}}, nil, http.StatusBadRequest,
			"start a canary of motor 1.1.0", []string{`share: &#34;a tenth&#34; is not a percentage`, `value="a tenth"`}},
		row{"approve proposal/one's own", "/console/orientation/proposals/p-1/approve", url.Values{"token": {"proposer-token-1"}, "reason": {"mine"}}, nil, http.StatusForbidden,
			"approve proposal p-1", []string{"cannot approve it too", `value="mine"`}},
		row{"resume/from an incident gone", "/console/waves/sig-1/resume", url.Values{"token": {"operator-token-1"}, "incident": {"incident-nope"}}, ora.Conflict(nil, "wave sig-1 is not paused"), 0,
			"", []string{"Error 409", "wave sig-1 is not paused"}},
	)
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := operatorServer(t)
			if strings.HasSuffix(tt.path, "/resolve") {
				// sig-1 paused on an action whose outcome is unknown: its
				// incident's page shows the Resolve form.
				l := s.Ledger.(ledger)
				l.entries["sig-1"] = append(l.entries["sig-1"], entry(t, ora.KindOperatorDecision, "op/op-1",
					operate.Record{Failure: operate.Failure{Error: "OutcomeUnknown"}}, nil))
			}
			s.Operator = refusingOperator{s.Operator.(operator), tt.err}
			s.Motor = refusingMotors{s.Motor.(motors), tt.err}
			s.Learned = refusingLearned{err: tt.err}
			s.Orientation = refusingOrientation{s.Orientation.(orientation), tt.err}
			if tt.err != nil {
				s.Verdicts = refusingVerdicts{tt.err}
			}
			code := tt.code
			if code == 0 {
				code = map[string]int{ora.EINVALID: 400, ora.EFORBIDDEN: 403, ora.ENOTFOUND: 404, ora.ECONFLICT: 409}[ora.ErrorCode(tt.err)]
			}
			rec := post(t, s.Handler(), tt.path, tt.form)
			body := rec.Body.String()
			if rec.Code != code {
				t.Fatalf("status %d, want %d\n%s", rec.Code, code, body)
			}
			want := tt.want
			if tt.what != "" {
				want = append(want, `id="refused"`, "Refused: "+tt.what)
			}
			if ge, ok := ora.Existing[*motor.GateError](tt.err); ok {
				for _, f := range ge.Failing {
					want = append(want, "<li>"+f+"</li>")
				}
			}
			for _, w := range want {
				if !strings.Contains(body, htmlText(w)) {
					t.Errorf("the page lacks %q", w)
				}
			}
			if tt.what != "" && strings.Contains(body, `data-live="true"`) {
				t.Errorf("the page reloads itself live: the banner and the values would go")
			}
			if strings.Contains(body, "operator-token-1") || strings.Contains(body, "Error 500") {
				t.Errorf("the page shows the token or an error page")
			}
		})
	}
}

// htmlText is s as html/template escapes text: the rows' reasons are
// plain text, the kept values already written escaped.
func htmlText(s string) string {
	if strings.ContainsAny(s, "<>") || strings.Contains(s, "&#") || strings.Contains(s, `="`) {
		return s
	}
	return strings.NewReplacer(`"`, "&#34;", "'", "&#39;", "&", "&amp;").Replace(s)
}

// An internal error (5xx) behind any form answers the generic error page:
// no detail of the error, a request id, and the same id in the log with
// the error.
func TestInternalErrorsStayGeneric(t *testing.T) {
	internal := []error{
		ora.Errorf(ora.EINTERNAL, "ledger: put at arn:aws:dynamodb:eu-west-1:123456789012:table/ora-ledger: broken pipe"),
		ora.Errorf(ora.ETRANSIENT, "ledger: ProvisionedThroughputExceededException on table ora-ledger"),
	}
	forms := []struct{ name, path string }{
		{"resume", "/console/waves/sig-1/resume"},
		{"resolve", "/console/waves/sig-1/resolve"},
		{"promote", "/console/motor/versions/1.1.0/promote"},
		{"rollback", "/console/motor/rollback"},
		{"canary", "/console/motor/versions/1.1.0/canary"},
		{"pattern promote", "/console/patterns/pattern-8c41d0a2b7e95f13/promote"},
		{"approve decision", "/console/decisions/dec-1/approve"},
		{"reject proposal", "/console/orientation/proposals/p-1/reject"},
	}
	for _, err := range internal {
		for _, f := range forms {
			t.Run(ora.ErrorCode(err)+"/"+f.name, func(t *testing.T) {
				s, _ := operatorServer(t)
				var logs bytes.Buffer
				s.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
				s.Operator = refusingOperator{s.Operator.(operator), err}
				s.Motor = refusingMotors{s.Motor.(motors), err}
				s.Learned = refusingLearned{err: err}
				s.Orientation = refusingOrientation{s.Orientation.(orientation), err}
				s.Verdicts = refusingVerdicts{err}
				token := "operator-token-1"
				switch {
				case strings.Contains(f.path, "/decisions/"):
					token = "dev-approver-token"
				case strings.Contains(f.path, "/proposals/"):
					token = "lead-token-1"
				}
				rec := post(t, s.Handler(), f.path, url.Values{"token": {token}, "executed": {"no"}, "share": {"10"}, "waves": {"5"}})
				body := rec.Body.String()
				id := rec.Header().Get("X-Request-Id")
				if rec.Code < 500 || id == "" {
					t.Fatalf("status %d, request id %q; want a 5xx naming one\n%s", rec.Code, id, body)
				}
				for _, w := range []string{"internal error", "Request id <code>" + id + "</code>"} {
					if !strings.Contains(body, w) {
						t.Errorf("the page lacks %q", w)
					}
				}
				if strings.Contains(body, "ora-ledger") || strings.Contains(body, `id="refused"`) {
					t.Errorf("the page shows the error's detail:\n%s", body)
				}
				if l := logs.String(); !strings.Contains(l, `"request_id":"`+id+`"`) || !strings.Contains(l, "ora-ledger") {
					t.Errorf("the log lacks the request id and the error: %s", l)
				}
			})
		}
	}
}
