package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

func TestApproveReject(t *testing.T) {
	tests := []struct {
		verb        string
		args        []string
		wantSettle  stubSettle
		wantStdout  []string
		wantReason  string
		wantApprove bool
	}{
		{verb: "approve", args: []string{"approve", "dec_0001", "--reason", "expected deploy"},
			wantSettle: stubSettle{"dec_0001", true, "approver", "expected deploy"},
			wantStdout: []string{"decision dec_0001: approved", "signal   sig_0001", "reason   expected deploy", "version  2, updated 2026-11-20 12:05:00.000", "ora trace sig_0001"}},
		{verb: "reject", args: []string{"reject", "--reason", "wrong channel", "dec_0002"},
			wantSettle: stubSettle{"dec_0002", false, "approver", "wrong channel"},
			wantStdout: []string{"decision dec_0002: rejected", "reason   wrong channel"}},
		{verb: "approve", args: []string{"approve", "dec_0003"},
			wantSettle: stubSettle{"dec_0003", true, "approver", ""},
			wantStdout: []string{"decision dec_0003: approved"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			api := newStubAPI(t)
			api.Settle = func(c stubSettle) (ora.DecisionState, error) {
				st := ora.DecisionState{DecisionID: c.DecisionID, SignalID: "sig_0001", Status: ora.StatusRejected, Reason: c.Reason, Version: 2,
					UpdatedAt: time.Date(2026, 11, 20, 12, 5, 0, 0, time.UTC)}
				if c.Approve {
					st.Status = ora.StatusApproved
				}
				return st, nil
			}
			code, stdout, stderr := runOra(t, append(tt.args, "--config", api.Config)...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			for _, want := range tt.wantStdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout %q, want it to contain %q", stdout, want)
				}
			}
			reqs := api.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if want := "/decisions/" + tt.wantSettle.DecisionID + "/" + tt.verb; r.Method != http.MethodPost || r.Path != want {
				t.Errorf("request %s %s, want POST %s", r.Method, r.Path, want)
			}
			// The default token is the first config token with ora.approve.
			if got := r.Header.Get("Authorization"); got != "Bearer approver-token-1" {
				t.Errorf("Authorization %q, want the approver token", got)
			}
			var body map[string]string
			if err := json.Unmarshal(r.Body, &body); err != nil || body["reason"] != tt.wantSettle.Reason || len(body) != 1 {
				t.Errorf("body %s (%v), want {\"reason\":%q}", r.Body, err, tt.wantSettle.Reason)
			}
			if got := api.Settles(); len(got) != 1 || got[0] != tt.wantSettle {
				t.Errorf("settled %+v, want [%+v]", got, tt.wantSettle)
			}
		})
	}
}

func TestApproveJSON(t *testing.T) {
	api := newStubAPI(t)
	code, stdout, stderr := runOra(t, "approve", "dec_0001", "--json", "--url", api.URL, "--token", "approver-token-1")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var st ora.DecisionState
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("stdout is not a decision state: %v\n%s", err, stdout)
	}
	if st.DecisionID != "dec_0001" || st.Status != ora.StatusApproved {
		t.Errorf("state %+v, want dec_0001 approved", st)
	}
}

func TestSettleFailures(t *testing.T) {
	api := newStubAPI(t)
	api.Settle = func(c stubSettle) (ora.DecisionState, error) {
		switch c.DecisionID {
		case "dec_settled":
			return ora.DecisionState{}, ora.Conflict(ora.DecisionState{DecisionID: c.DecisionID, Status: ora.StatusApproved}, "decision %s is approved, not awaiting approval", c.DecisionID)
		case "dec_broken":
			return ora.DecisionState{}, ora.Errorf(ora.EINTERNAL, "the store is on fire")
		}
		return ora.DecisionState{}, ora.Errorf(ora.ENOTFOUND, "no decision %s", c.DecisionID)
	}
	noApprover := writeCLIConfig(t, "sources:\n  - {name: demo, type: none}\ntokens:\n  - {token: reader-token-1, subject: reader, scopes: [orientation.read]}\n")
	tests := []struct {
		name         string
		args         []string
		wantCode     int
		wantStderr   string
		wantRequests int
	}{
		{name: "second approval", args: []string{"approve", "dec_settled", "--config", api.Config}, wantCode: 1, wantStderr: "decision dec_settled already settled: decision dec_settled is approved", wantRequests: 1},
		{name: "second rejection", args: []string{"reject", "dec_settled", "--config", api.Config}, wantCode: 1, wantStderr: "already settled", wantRequests: 1},
		{name: "unknown decision", args: []string{"approve", "dec_nope", "--config", api.Config}, wantCode: 1, wantStderr: "no decision dec_nope", wantRequests: 1},
		{name: "server error", args: []string{"reject", "dec_broken", "--config", api.Config}, wantCode: 1, wantStderr: "500 Internal Server Error: internal error", wantRequests: 1},
		{name: "token without ora.approve", args: []string{"approve", "dec_1", "--config", api.Config, "--token", "reader-token-1"}, wantCode: 1, wantStderr: "403 Forbidden: the token lacks scope ora.approve", wantRequests: 1},
		{name: "no approver token in the config", args: []string{"approve", "dec_1", "--config", noApprover, "--url", api.URL}, wantCode: 1, wantStderr: "no token"},
		{name: "no id", args: []string{"reject", "--config", api.Config}, wantCode: 2, wantStderr: "want one DECISION_ID"},
		{name: "reason without value", args: []string{"approve", "dec_1", "--reason"}, wantCode: 2, wantStderr: "flag needs an argument"},
		{name: "help", args: []string{"reject", "-h"}, wantCode: 0, wantStderr: "usage: ora reject DECISION_ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(api.Requests())
			code, stdout, stderr := runOra(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr, tt.wantStderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if got := len(api.Requests()) - before; got != tt.wantRequests {
				t.Errorf("%d requests, want %d", got, tt.wantRequests)
			}
		})
	}
}
