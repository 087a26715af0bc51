package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	defaultrules "github.com/ora-runtime/ora/rules"
)

// The operator's tokens of the browser tests, beside the published
// development approver (which makes the console signed in on loopback).
const (
	operatorToken = "browser-operator-token"
	proposerToken = "browser-proposer-token"
	leadToken     = "browser-orientation-lead"
	operatorExtra = `  - {token: dev-approver-token, subject: developer, scopes: [ora.approve, orientation.read, ora.read]}
  - {token: ` + operatorToken + `, subject: operator, scopes: [ora.operate, ora.read]}
  - {token: ` + proposerToken + `, subject: proposer, scopes: [orientation.propose, orientation.read]}
  - {token: ` + leadToken + `, subject: lead, scopes: [orientation.approve, orientation.read]}
faults:
  - {state: Act, error: InternalError, cause: "browser drill: act down", times: 1}
`
)

// api calls the HTTP API with a bearer token and decodes the JSON answer.
func api(t *testing.T, method, url, token, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// waveState waits until the wave's operator state (GET /waves/{id}) is want.
func waveState(t *testing.T, base, wave, want string) {
	t.Helper()
	var got struct {
		Status   string
		Operator struct{ State string }
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		api(t, http.MethodGet, base+"/waves/"+wave, "", "", &got)
		if got.Operator.State == want {
			return
		}
	}
	t.Fatalf("wave %s: operator state %q (status %s), want %s", wave, got.Operator.State, got.Status, want)
}

// The incidents, orientation and motor pages through the real binary, at
// 1,280 and 390 px: a wave paused by a fault at Act is resumed from its
// incident's page (a wrong token first: the form comes back, what was typed
// kept), an orientation proposal is approved, a motor version promoted
// through the gate; the console is signed in as the development approver
// without a pasted token, and no page is wider than the screen or taller
// than three screens.
func TestOperatorPagesInBrowser(t *testing.T) {
	chrome := chromiumPath(t)
	if testing.Short() {
		t.Skip("starts ora dev and a browser; skipped with -short")
	}
	out := outputDir(t)
	base := startDev(t, operatorExtra)
	wave := send(t, base, `{"confidence":"high","note":"paused by the browser drill"}`)
	waveState(t, base, wave, "PAUSED")

	ctx := browser(t, chrome)
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		var s string
		run("read "+sel, into(&s, chromedp.Text(chromedp.CSS(sel))))
		return s
	}
	// fits checks the page at both widths: no sideways scroll, at most three
	// screens tall, and keeps a screenshot of each.
	fits := func(name string) {
		t.Helper()
		for _, vp := range []struct{ w, h int }{{1280, 800}, {390, 844}} {
			var size struct{ Width, Height, Screen int }
			run(name+" sized", chromedp.EmulateViewport(int64(vp.w), int64(vp.h)),
				ev(&size, `({Width: document.documentElement.scrollWidth, Height: document.documentElement.scrollHeight, Screen: innerHeight})`),
				chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					png, err := chromedp.FullScreenshot(100)(ctx, tg)
					if err != nil {
						return err
					}
					return os.WriteFile(filepath.Join(out, fmt.Sprintf("%s-%dpx.png", name, vp.w)), png, 0o644)
				}))
			if size.Width > vp.w {
				t.Errorf("%s at %d px is %d px wide", name, vp.w, size.Width)
			}
			if size.Height > 3*size.Screen {
				t.Errorf("%s at %d px is %d px tall, more than three screens of %d", name, vp.w, size.Height, size.Screen)
			}
		}
		run("wide again", chromedp.EmulateViewport(1280, 800))
	}

	// Signed in as the development approver, no token pasted.
	run("sign-in page", chromedp.Navigate(base+"/console/login"), chromedp.WaitVisible(chromedp.CSS(`#signed-in`)))
	if who := text(`#signed-in`); !strings.Contains(who, "developer") || !strings.Contains(who, "ora.approve") || strings.Contains(who, "ora.operate") {
		t.Errorf("sign-in page says %q, want the development approver with ora.approve and without ora.operate", who)
	}
	if who := text(`#who`); !strings.Contains(who, "developer") {
		t.Errorf("the nav says %q, want the development approver", who)
	}
	fits("signin")

	// The paused wave's incident: classification, rationale, plan; resume.
	run("incidents", chromedp.Navigate(base+"/console/incidents"), chromedp.WaitVisible(chromedp.CSS(`a.incident-link`)))
	fits("incidents")
	run("open the incident", chromedp.Click(chromedp.CSS(`a.incident-link`)),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`section.occurrence[data-wave=%q][data-state="PAUSED"] form.resume`, wave))))
	for sel, want := range map[string]string{`dl.summary`: "motor", `dd.rationale`: "InternalError at Act", `dd.plan`: "pause pipeline"} {
		if got := text(sel); !strings.Contains(got, want) {
			t.Errorf("%s says %q, want %q in it", sel, got, want)
		}
	}
	fits("incident")
	// A motor incident resumes under a new motor version or as is: the drill's fault needs no patch.
	run("retry as is", chromedp.Click(chromedp.CSS(`form.resume input[name=as_is]`)))
	run("resume with a wrong token", chromedp.SendKeys(chromedp.CSS(`form.resume input[name=token]`), "not-a-token-of-ours"),
		chromedp.Click(chromedp.CSS(`form.resume button`)), chromedp.WaitVisible(chromedp.CSS(`#retry`)))
	if msg := text(`#signin-error`); !strings.Contains(msg, "unknown bearer token") {
		t.Errorf("a wrong token shows %q, want it named unknown", msg)
	}
	run("resume with the operator's token", chromedp.SendKeys(chromedp.CSS(`#retry-token`), operatorToken),
		chromedp.Click(chromedp.CSS(`#retry button`)), chromedp.WaitVisible(chromedp.CSS(`p.note`)))
	if note := text(`p.note`); !strings.Contains(note, "resumed at Act") {
		t.Errorf("after resume the page says %q", note)
	}
	var status struct{ Status string }
	for deadline := time.Now().Add(60 * time.Second); status.Status != "SUCCEEDED" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		api(t, http.MethodGet, base+"/waves/"+wave, "", "", &status)
	}
	if status.Status != "SUCCEEDED" {
		t.Errorf("the resumed wave is %s, want SUCCEEDED", status.Status)
	}

	// An orientation proposal, approved by another subject from the page.
	proposal := `{"proposal_id":"browser-1","base_profile_id":"default","base_profile_version":1,"effective_waves":2,
		"horizon_policy":"revert","reason":"more room for diverse sources","change":{"max_source_share":0.4}}`
	if code := api(t, http.MethodPost, base+"/api/orientation/proposals", proposerToken, proposal, nil); code != http.StatusOK {
		t.Fatalf("propose: %d", code)
	}
	run("orientation", chromedp.Navigate(base+"/console/orientation"),
		chromedp.WaitVisible(chromedp.CSS(`section.proposal[data-proposal="browser-1"][data-status="pending"]`)))
	if rows := text(`#packets`); !strings.Contains(rows, "default v1") {
		t.Errorf("packets by wave: %q, want the waves' packets", rows)
	}
	fits("orientation")
	run("approve the proposal", chromedp.SendKeys(chromedp.CSS(`section.proposal input[name=token]`), leadToken),
		chromedp.SendKeys(chromedp.CSS(`section.proposal input[name=reason]`), "reviewed"),
		chromedp.Click(chromedp.CSS(`section.proposal button.approve`)),
		chromedp.WaitVisible(chromedp.CSS(`section.proposal[data-proposal="browser-1"][data-status="approved"]`)))
	if note := text(`p.note`); !strings.Contains(note, "approved: profile version 2") {
		t.Errorf("after approval the page says %q", note)
	}

	// A motor version through the gate: a wrong token keeps the reason.
	rulesText := regexp.MustCompile(`(?m)^version: .*$`).ReplaceAllString(string(defaultrules.Default), `version: "1.0.1"`)
	bundle, _ := json.Marshal(map[string]any{"version": "1.0.1", "rules": rulesText, "model": map[string]string{"profile": "rules"},
		"orientation": map[string]int{"token_budget": 150000}, "changelog": "the same rules, renumbered"})
	if code := api(t, http.MethodPost, base+"/motor/versions", operatorToken, string(bundle), nil); code != http.StatusCreated {
		t.Fatalf("propose motor 1.0.1: %d", code)
	}
	row := `tr[data-version="1.0.1"]`
	run("motor", chromedp.Navigate(base+"/console/motor"), chromedp.WaitVisible(chromedp.CSS(row+`[data-status="proposed"] form.promote`)))
	if replay := text(row + ` td.replay`); !strings.Contains(replay, "passes") {
		t.Errorf("the gate's replay of 1.0.1 says %q, want it to pass", replay)
	}
	fits("motor")
	run("promote with a wrong token", chromedp.SendKeys(chromedp.CSS(row+` input[name=reason]`), "renumbered for the release"),
		chromedp.SendKeys(chromedp.CSS(row+` input[name=token]`), "not-a-token-of-ours"),
		chromedp.Click(chromedp.CSS(row+` form.promote button`)), chromedp.WaitVisible(chromedp.CSS(`#retry`)))
	var kept string
	run("the reason is kept", ev(&kept, `document.querySelector("#retry-reason").value`))
	if kept != "renumbered for the release" {
		t.Errorf("the retried form holds the reason %q, want what was typed", kept)
	}
	run("promote with the operator's token", chromedp.SendKeys(chromedp.CSS(`#retry-token`), operatorToken),
		chromedp.Click(chromedp.CSS(`#retry button`)), chromedp.WaitVisible(chromedp.CSS(`p.note`)))
	if cur := text(`#motor-current`); cur != "1.0.1" {
		t.Errorf("current motor %q after the promotion, want 1.0.1", cur)
	}
	if events := text(`#motor-events`); !strings.Contains(events, "renumbered for the release") || !strings.Contains(events, "by operator") {
		t.Errorf("the promotions list says %q, want the reason and the operator", events)
	}
}
