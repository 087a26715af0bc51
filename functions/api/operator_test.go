package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/rules"
)

// nopResumer refuses every token: no wave waits in this test.
type nopResumer struct{}

func (nopResumer) SendTaskSuccess(context.Context, string, []byte) error {
	return ora.Conflict(nil, "no task waits")
}

// request returns the sample event as method path?query with body, its JWT
// carrying scope.
func request(t *testing.T, method, path, query, body, scope string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	ev := withScope(withPath(loadEvent(t, "approve-decision.json"), path), scope)
	ev.RequestContext.HTTP.Method, ev.RawQueryString, ev.Body = method, query, body
	ev.RouteKey = method + " " + path
	ev.Headers["content-length"] = fmt.Sprint(len(body))
	return ev
}

// The api function's replay export and resolve routes over DynamoDB Local,
// with their scopes: GET /motor/waves exports a decided wave with the motor
// and app versions it ran under; POST /waves/{id}/resolve reaches the
// operator (a wave that is not paused on an unknown outcome is a conflict).
func TestOperatorRoutesOverDynamoDB(t *testing.T) {
	ctx := context.Background()
	ledger := acttest.Dynamo(t).Ledger
	set, err := rules.Parse(defaultrules.Default)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	payload := `{"confidence":"medium"}`
	sig := ora.NormalizedSignal{ID: "w1", Source: ora.Source{Type: ora.SourceWebhook, Name: "demo", Provider: "hmac"},
		Timestamp: now, NormalizedAt: now, Payload: json.RawMessage(payload), DedupKey: "d-w1", RawDigest: ora.Digest([]byte(payload))}
	e, _ := ora.NewEntry("w1", ora.KindSignalReceived, "", sig)
	if _, err := ledger.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := orient.NewCompiler(ledger).Compile(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	in, err := orient.Input(ctx, ledger, "w1")
	if err != nil {
		t.Fatal(err)
	}
	d, err := rules.New(set).Reason(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	d.MotorVersion, d.AppVersion = set.Version(), "1.0.0+0123456789ab"
	if _, err := ledger.RecordDecision(ctx, d); err != nil {
		t.Fatal(err)
	}
	base, _ := motor.NewBase(defaultrules.Default, "default", 0)
	ops := operate.New(ledger, func(o *operate.Options) { o.Resumer = nopResumer{} })
	waves := fakeWaves{wave: func(context.Context, string) (httpapi.Wave, error) {
		return httpapi.Wave{}, ora.Errorf(ora.ENOTFOUND, "no wave")
	}}
	motors := motor.NewRegistry(ledger, base, nil)
	h := New(ledger, waves, &fakeVerdicts{}, DefaultResourceServer, nil, func(s *httpapi.Server) {
		s.Operator, s.Motor, s.Recorded = ops, motors, motor.Recorder{Ledger: ledger}
	})

	since := now.Add(-time.Hour).Format(time.RFC3339)
	tests := []struct {
		name                      string
		method, path, query, body string
		scope                     string
		want                      int
		wantBody                  string
	}{
		{"export with ora.read", "GET", "/motor/waves", "since=" + since, "", "ora/ora.read", 200, `"motor_version":"` + set.Version() + `"`},
		{"export one wave", "GET", "/motor/waves", "wave=w1", "", "ora/ora.read", 200, `"app_version":"1.0.0+0123456789ab"`},
		{"export needs ora.read", "GET", "/motor/waves", "", "", "ora/ora.approve", 403, `ora.read`},
		{"export with a bad since", "GET", "/motor/waves", "since=yesterday", "", "ora/ora.read", 400, `since`},
		{"resolve a wave not paused", "POST", "/waves/w1/resolve", "", `{"executed":true}`, "ora/ora.operate", 409, `not paused on an action whose outcome is unknown`},
		{"resolve needs ora.operate", "POST", "/waves/w1/resolve", "", `{"executed":true}`, "ora/ora.read", 403, `ora.operate`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := invoke(t, h, request(t, tt.method, tt.path, tt.query, tt.body, tt.scope))
			if resp.StatusCode != tt.want || !strings.Contains(resp.Body, tt.wantBody) {
				t.Errorf("%s %s?%s: %d %s, want %d containing %s", tt.method, tt.path, tt.query, resp.StatusCode, resp.Body, tt.want, tt.wantBody)
			}
			if tt.want == http.StatusOK && !strings.Contains(resp.Body, `"name":"w1"`) {
				t.Errorf("the export lacks wave w1: %s", resp.Body)
			}
		})
	}
}

// POST /motor/versions/{v}/canary over DynamoDB Local: it needs
// ora.operate, checks its body, starts one canary at a time, and the
// versions list shows the candidate as the canary.
func TestCanaryRouteOverDynamoDB(t *testing.T) {
	ctx := context.Background()
	ledger := acttest.Dynamo(t).Ledger
	base, _ := motor.NewBase(defaultrules.Default, "default", 0)
	motors := motor.NewRegistry(ledger, base, nil)
	text := strings.Replace(string(defaultrules.Default), `version: "`+base.Version+`"`, `version: "1.0.1"`, 1)
	if _, err := motors.Propose(ctx, motor.Bundle{Version: "1.0.1", Rules: text, Changelog: "a candidate"}); err != nil {
		t.Fatal(err)
	}
	waves := fakeWaves{wave: func(context.Context, string) (httpapi.Wave, error) {
		return httpapi.Wave{}, ora.Errorf(ora.ENOTFOUND, "no wave")
	}}
	h := New(ledger, waves, &fakeVerdicts{}, DefaultResourceServer, nil, func(s *httpapi.Server) { s.Motor = motors })
	tests := []struct {
		name, method, path, body, scope string
		want                            int
		wantBody                        string
	}{
		{"needs ora.operate", "POST", "/motor/versions/1.0.1/canary", `{"share":0.1,"waves":50}`, "ora/ora.read", 403, `ora.operate`},
		{"an unknown field", "POST", "/motor/versions/1.0.1/canary", `{"percent":10}`, "ora/ora.operate", 400, `body`},
		{"no end", "POST", "/motor/versions/1.0.1/canary", `{"share":0.1}`, "ora/ora.operate", 400, `waves`},
		{"not proposed", "POST", "/motor/versions/9.9.9/canary", `{"share":0.1,"waves":50}`, "ora/ora.operate", 404, `9.9.9`},
		{"started", "POST", "/motor/versions/1.0.1/canary", `{"share":0.1,"waves":50,"max_cost_increase":0.5}`, "ora/ora.operate", 201, `"max_cost_increase":0.5`},
		{"one at a time", "POST", "/motor/versions/1.0.1/canary", `{"share":0.1,"waves":50}`, "ora/ora.operate", 409, `a canary of motor 1.0.1 is running`},
		{"listed", "GET", "/motor/versions", "", "ora/ora.read", 200, `"status":"canary"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := invoke(t, h, request(t, tt.method, tt.path, "", tt.body, tt.scope))
			if resp.StatusCode != tt.want || !strings.Contains(resp.Body, tt.wantBody) {
				t.Errorf("%s %s: %d %s, want %d containing %s", tt.method, tt.path, resp.StatusCode, resp.Body, tt.want, tt.wantBody)
			}
		})
	}
}
