package console_test

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	defaultrules "github.com/ora-runtime/ora/rules"
)

// consoleClient is a browser-like client of the console: it keeps the
// session cookie and posts forms with the form token of the page it read.
type consoleClient struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

var csrfValue = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func newConsoleClient(t *testing.T, base, page string) *consoleClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	cc := &consoleClient{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	_, body := cc.do(http.MethodGet, page, nil)
	m := csrfValue.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no form token on %s:\n%s", page, body)
	}
	cc.csrf = m[1]
	return cc
}

func (cc *consoleClient) do(method, path string, form url.Values) (int, string) {
	cc.t.Helper()
	var body io.Reader
	if form != nil {
		form.Set("csrf", cc.csrf)
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, cc.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := cc.c.Do(req)
	if err != nil {
		cc.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The refusals of the real operator, motor registry, gate, learner,
// verdicts and orientation behind `ora dev`: each form the API refuses
// (same request, same status) shows the API's reason on the page the form
// was sent from, the values kept in the form (where the page still has
// it); a gate failure names its golden case.
func TestRefusalsFromTheRealOperator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ora dev; skipped with -short")
	}
	base := startDev(t, operatorExtra)
	wave := send(t, base, `{"confidence":"high","note":"paused by the refusal drill"}`)
	waveState(t, base, wave, "PAUSED")
	var w struct {
		Operator struct {
			IncidentID string `json:"incident_id"`
		}
	}
	api(t, http.MethodGet, base+"/waves/"+wave, "", "", &w)
	inc := w.Operator.IncidentID
	// A version the gate refuses: test-high decides at 0.6, so golden wave
	// demo-high changes band.
	rulesText := regexp.MustCompile(`(?m)^version: .*$`).ReplaceAllString(string(defaultrules.Default), `version: "1.0.2"`)
	rulesText = strings.Replace(rulesText, "confidence: 0.95", "confidence: 0.6", 1)
	bundle, _ := json.Marshal(map[string]any{"version": "1.0.2", "rules": rulesText, "model": map[string]string{"profile": "rules"},
		"orientation": map[string]int{"token_budget": 150000}, "changelog": "a lower bar for test signals"})
	if code := api(t, http.MethodPost, base+"/motor/versions", operatorToken, string(bundle), nil); code != http.StatusCreated {
		t.Fatalf("propose motor 1.0.2: %d", code)
	}

	cc := newConsoleClient(t, base, "/console/incidents/"+inc)
	tests := []struct {
		name       string
		form, api  string // the console's form path and the API's route
		token      string
		values     url.Values
		body       string   // the API's JSON body for the same request
		page, kept []string // on the console's answer
	}{
		{"bare resume of a motor incident", "/console/waves/" + wave + "/resume", "/waves/" + wave + "/resume", operatorToken,
			url.Values{"incident": {inc}}, `{}`, []string{"<h1>Incident"}, nil},
		{"input patch at Act", "/console/waves/" + wave + "/resume", "/waves/" + wave + "/resume", operatorToken,
			url.Values{"incident": {inc}, "patch_kind": {"input"}, "patch_target": {"$.note"}, "patch_value": {`{"note":"fixed"}`}},
			`{"patch":{"kind":"input","target":"$.note","value":{"note":"fixed"}}}`, []string{"<h1>Incident"},
			[]string{`<option value="input" selected>`, `value="$.note"`, html.EscapeString(`{"note":"fixed"}`) + "</textarea>"}},
		{"resume under a version the gate refuses", "/console/waves/" + wave + "/resume", "/waves/" + wave + "/resume", operatorToken,
			url.Values{"incident": {inc}, "motor": {"1.0.2"}}, `{"motor_version":"1.0.2"}`, []string{"<h1>Incident", "<li>demo-high</li>"}, []string{`value="1.0.2"`}},
		{"promote a version the gate refuses", "/console/motor/versions/1.0.2/promote", "/motor/versions/1.0.2/promote", operatorToken,
			url.Values{"reason": {"lower the bar"}}, `{"reason":"lower the bar"}`, []string{"<h1>Motor</h1>", "<li>demo-high</li>"}, []string{`value="lower the bar"`}},
		{"promote a version never proposed", "/console/motor/versions/9.9.9/promote", "/motor/versions/9.9.9/promote", operatorToken,
			url.Values{"reason": {"typo"}}, `{"reason":"typo"}`, []string{"<h1>Motor</h1>"}, nil},
		{"roll back with no previous version", "/console/motor/rollback", "/motor/rollback", operatorToken,
			url.Values{"reason": {"undo"}}, `{"reason":"undo"}`, []string{"<h1>Motor</h1>"}, nil}, // no previous: no form to keep it in
		{"canary without a share or sources", "/console/motor/versions/1.0.2/canary", "/motor/versions/1.0.2/canary", operatorToken,
			url.Values{"waves": {"20"}}, `{"waves":20}`, []string{"<h1>Motor</h1>"}, []string{`value="20"`}},
		{"canary of a version the gate refuses", "/console/motor/versions/1.0.2/canary", "/motor/versions/1.0.2/canary", operatorToken,
			url.Values{"share": {"10"}, "waves": {"20"}}, `{"share":0.1,"waves":20}`, []string{"<h1>Motor</h1>", "<li>demo-high</li>"}, []string{`value="10"`}},
		{"promote an unknown pattern", "/console/patterns/pattern-0000000000000000/promote", "/motor/patterns/pattern-0000000000000000/promote", operatorToken,
			url.Values{"reason": {"guess"}}, `{"reason":"guess"}`, []string{"<h1>Incidents</h1>"}, nil},
		{"approve an unknown decision", "/console/decisions/dec-nope/approve", "/decisions/dec-nope/approve", approverToken,
			url.Values{"from": {"approvals"}, "reason": {"fine"}}, `{"reason":"fine"}`, []string{"<h1>Approvals</h1>"}, nil},
		{"approve an unknown proposal", "/console/orientation/proposals/nope/approve", "/api/orientation/proposals/nope/approve", leadToken,
			url.Values{"reason": {"fine"}}, `{"reason":"fine"}`, []string{"<h1>Orientation</h1>"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var apiErr struct {
				Error string `json:"error"`
			}
			apiCode := api(t, http.MethodPost, base+tt.api, tt.token, tt.body, &apiErr)
			if apiCode < 400 || apiCode >= 500 || apiErr.Error == "" {
				t.Fatalf("the API answered %d %q, want a refusal", apiCode, apiErr.Error)
			}
			tt.values.Set("token", tt.token)
			code, body := cc.do(http.MethodPost, tt.form, tt.values)
			if code != apiCode {
				t.Fatalf("the console answered %d, the API %d (%s)\n%s", code, apiCode, apiErr.Error, body)
			}
			reason := strings.TrimPrefix(apiErr.Error, "resume refused, the wave stays paused: ")
			for _, want := range append(append([]string{`id="refused"`, html.EscapeString(reason)}, tt.page...), tt.kept...) {
				if !strings.Contains(body, want) {
					t.Errorf("the page lacks %q (the API said %q)", want, apiErr.Error)
				}
			}
		})
	}
	waveState(t, base, wave, "PAUSED") // every refusal left it paused
}
