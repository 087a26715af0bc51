package reason_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// followUp is one entry of a SafeOPSDecision's then: typ with params at
// tier, its own scope its type, after the actions numbered deps.
func followUp(typ, params string, tier int, forbidden []string, deps ...int) map[string]any {
	var p any
	_ = json.Unmarshal([]byte(params), &p)
	return map[string]any{
		"action": map[string]any{"type": typ, "parameters": p, "tier": tier, "allowed_operations": []string{typ},
			"forbidden_paths": append([]string{}, forbidden...), "author_type": "architect"},
		"depends_on": append([]int{}, deps...),
	}
}

// withThen is a proposed payload with follow-up actions.
func withThen(p map[string]any, then ...map[string]any) map[string]any {
	p["then"] = then
	return p
}

// TestModelFollowUps: a model decision may carry follow-up actions with
// depends_on, sent through the strict fake (which refuses an answer outside
// the schema). A permitted plan becomes a decision with every action, in
// order, its tier the highest asked for, its scope the actions' types and
// every forbidden path; any action the policy does not permit, or a plan
// after none, turns the whole decision into a none a human must approve.
func TestModelFollowUps(t *testing.T) {
	rule := reason.PolicyRule{Name: "github issues", Source: "github", EventType: "issues.*",
		Actions: []string{act.TypeHTTPRequest, act.TypeObjectPut, act.TypeNotify}, MaxConfidence: ptrf(0.9), ForbiddenPaths: []string{".github/"}}
	notifyOnly := rule
	notifyOnly.Actions = []string{act.TypeNotify}
	label := `{"method":"POST","connection":"","path":"","url":"https://api.github.com/repos/o/r/issues/7/labels","body":"{\"labels\":[\"bug\"]}"}`
	del := `{"method":"DELETE","connection":"","path":"","url":"https://api.github.com/repos/o/r","body":""}`
	report := `{"key":"reports/7.md","content_type":"text/markdown","body":"# Issue 7\nlabelled bug"}`
	note := `{"subject":"issue 7","message":"labelled bug; report at reports/7.md"}`
	tests := []struct {
		name  string
		rule  reason.PolicyRule
		reply map[string]any
		check func(t *testing.T, d ora.ReasonerDecision)
	}{
		{"three actions with depends_on", rule,
			withThen(proposed("PROCEED", act.TypeHTTPRequest, label, 1, []string{act.TypeHTTPRequest}),
				followUp(act.TypeObjectPut, report, 3, []string{"reports/private/"}, 0),
				followUp(act.TypeNotify, note, 1, nil, 0, 1)),
			func(t *testing.T, d ora.ReasonerDecision) {
				want := []ora.Action{
					{Type: act.TypeHTTPRequest, Parameters: json.RawMessage(label)},
					{Type: act.TypeObjectPut, Parameters: json.RawMessage(report), DependsOn: []int{0}},
					{Type: act.TypeNotify, Parameters: json.RawMessage(note), DependsOn: []int{0, 1}},
				}
				if len(d.Actions) != len(want) {
					t.Fatalf("actions %+v: want %d", d.Actions, len(want))
				}
				for i, w := range want {
					got := d.Actions[i]
					var g, x any
					_ = json.Unmarshal(got.Parameters, &g)
					_ = json.Unmarshal(w.Parameters, &x)
					gj, _ := json.Marshal(g)
					xj, _ := json.Marshal(x)
					if got.Type != w.Type || !slices.Equal(got.DependsOn, w.DependsOn) || string(gj) != string(xj) {
						t.Errorf("action %d = %s %s after %v, want %s %s after %v", i, got.Type, got.Parameters, got.DependsOn, w.Type, w.Parameters, w.DependsOn)
					}
				}
				if d.ActionType != act.TypeHTTPRequest || d.Tier != 3 || d.Confidence != 0.9 {
					t.Errorf("decision %s tier %d confidence %v: want http.request first, tier 3 (the highest asked), confidence capped at 0.9", d.ActionType, d.Tier, d.Confidence)
				}
				if !slices.Equal(d.Scope.AllowedOperations, []string{act.TypeHTTPRequest, act.TypeObjectPut, act.TypeNotify}) {
					t.Errorf("allowed operations %v: want the three types", d.Scope.AllowedOperations)
				}
				if !slices.Contains(d.Scope.ForbiddenPaths, "reports/private/") || !slices.Contains(d.Scope.ForbiddenPaths, ".github/") {
					t.Errorf("forbidden paths %v: want the follow-up's and the rule's", d.Scope.ForbiddenPaths)
				}
			}},
		{"the policy's minimum tier covers the follow-ups", rule,
			withThen(proposed("PROCEED", act.TypeNotify, note, 1, []string{act.TypeNotify}), followUp(act.TypeObjectPut, report, 1, nil, 0)),
			func(t *testing.T, d ora.ReasonerDecision) {
				if len(d.Actions) != 2 || d.Tier != reason.DefaultMinTier {
					t.Errorf("%d actions at tier %d: want 2 at the rule's minimum %d", len(d.Actions), d.Tier, reason.DefaultMinTier)
				}
			}},
		{"a follow-up the policy does not permit escalates", notifyOnly,
			withThen(proposed("PROCEED", act.TypeNotify, note, 2, []string{act.TypeNotify}), followUp(act.TypeHTTPRequest, del, 2, nil, 0)),
			func(t *testing.T, d ora.ReasonerDecision) {
				if d.ActionType != act.TypeNone || d.Actions != nil || d.Band() != ora.BandLow || !strings.Contains(d.Reasoning, "does not permit http.request") {
					t.Errorf("decision %s with %d actions at %v (%q): want none, escalated, naming the refusal", d.ActionType, len(d.Actions), d.Confidence, d.Reasoning)
				}
			}},
		{"a follow-up outside its own allowed_operations escalates", rule,
			withThen(proposed("PROCEED", act.TypeNotify, note, 2, []string{act.TypeNotify}), func() map[string]any {
				f := followUp(act.TypeObjectPut, report, 2, nil, 0)
				f["action"].(map[string]any)["allowed_operations"] = []string{act.TypeNotify}
				return f
			}()),
			func(t *testing.T, d ora.ReasonerDecision) {
				if d.ActionType != act.TypeNone || d.Band() != ora.BandLow {
					t.Errorf("decision %s at %v: want none, escalated", d.ActionType, d.Confidence)
				}
			}},
		{"actions after none escalate", rule,
			withThen(proposed("PROCEED", act.TypeNone, `{"reason":"nothing to do"}`, 1, []string{act.TypeNone}), followUp(act.TypeNotify, note, 2, nil, 0)),
			func(t *testing.T, d ora.ReasonerDecision) {
				if d.ActionType != act.TypeNone || d.Actions != nil || d.Band() != ora.BandLow {
					t.Errorf("decision %s with %d actions at %v: want none, escalated", d.ActionType, len(d.Actions), d.Confidence)
				}
			}},
		{"ABORT runs none of the actions", rule,
			withThen(proposed("ABORT", act.TypeHTTPRequest, label, 2, []string{act.TypeHTTPRequest}), followUp(act.TypeNotify, note, 2, nil, 0)),
			func(t *testing.T, d ora.ReasonerDecision) {
				if d.ActionType != act.TypeNone || d.Actions != nil || !strings.HasPrefix(d.Reasoning, "ABORT") {
					t.Errorf("decision %s with %d actions: want none after ABORT", d.ActionType, len(d.Actions))
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Policy.Rules = []reason.PolicyRule{tc.rule}
			r, _ := reasonerWith(t, cfg, nil, stage(0.97, 3, "issue 7 reports a bug: label it, write a report, tell the operators", tc.reply))
			d, err := r.Reason(context.Background(), issueSignal("sig-plan", "search is slow"))
			if err != nil {
				t.Fatalf("Reason: %v", err)
			}
			if err := d.Validate(); err != nil {
				t.Fatalf("decision does not validate: %v", err)
			}
			tc.check(t, d)
		})
	}
}

// TestFollowUpDependsOn: depends_on names earlier actions only (0 is the
// first action); one naming itself or a later action is refused when the
// payload is decoded, as is a plan longer than MaxFollowUps.
func TestFollowUpDependsOn(t *testing.T) {
	note := `{"subject":"s","message":"m"}`
	decode := func(then ...map[string]any) error {
		raw, _ := json.Marshal(withThen(proposed("PROCEED", act.TypeNotify, note, 2, []string{act.TypeNotify}), then...))
		_, err := reason.DecodePayload(ora.ProgramSafeOPSDecision, raw)
		return err
	}
	tooMany := make([]map[string]any, reason.MaxFollowUps+1)
	for i := range tooMany {
		tooMany[i] = followUp(act.TypeNotify, note, 2, nil)
	}
	for _, tc := range []struct {
		name string
		then []map[string]any
		ok   bool
	}{
		{"none", nil, true},
		{"on the first action", []map[string]any{followUp(act.TypeNotify, note, 2, nil, 0)}, true},
		{"on an earlier follow-up", []map[string]any{followUp(act.TypeNotify, note, 2, nil, 0), followUp(act.TypeNotify, note, 2, nil, 1)}, true},
		{"on itself", []map[string]any{followUp(act.TypeNotify, note, 2, nil, 1)}, false},
		{"on a later action", []map[string]any{followUp(act.TypeNotify, note, 2, nil, 2), followUp(act.TypeNotify, note, 2, nil)}, false},
		{"on a negative number", []map[string]any{followUp(act.TypeNotify, note, 2, nil, -1)}, false},
		{"more than MaxFollowUps", tooMany, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			then := tc.then
			if then == nil {
				then = []map[string]any{}
			}
			err := decode(then...)
			if tc.ok && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tc.ok && ora.ErrorCode(err) != ora.EINVALID {
				t.Errorf("err = %v, want EINVALID", err)
			}
		})
	}
}
