package handler

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/ora"
)

// A decision whose action could not run with its parameters (a required one
// came out null) is recorded and goes to a human (the low band), never to an
// Act that fails; what the actor's allow-lists judge is left to the actor.
func TestInvalidParametersEscalate(t *testing.T) {
	tests := []struct {
		name    string
		actions []ora.Action
		band    string
		problem string
	}{
		{"notify message null", []ora.Action{{Type: "notify", Parameters: json.RawMessage(`{"subject":"paid","message":null}`)}},
			"low", "action 0 (notify): notify.parameters.message: required"},
		{"second action without its url", []ora.Action{
			{Type: "notify", Parameters: json.RawMessage(`{"message":"m"}`)},
			{Type: "http.request", Parameters: json.RawMessage(`{"method":"POST"}`), DependsOn: []int{0}}},
			"low", "action 1 (http.request): http.request.parameters.url: required"},
		{"valid", []ora.Action{{Type: "notify", Parameters: json.RawMessage(`{"message":"m"}`)}}, "high", ""},
		{"a host no allow-list holds is the actor's to refuse", []ora.Action{{Type: "http.request", Parameters: json.RawMessage(`{"url":"https://not-allow-listed.invalid/x"}`)}}, "high", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openLedger(t)
			oriented(t, db, "sig-1", `{}`)
			ops := make([]string, len(tt.actions))
			for i, a := range tt.actions {
				ops[i] = a.Type
			}
			h := Handler{Ledger: db, Parameters: act.StandardParameters(), Reasoner: reasonerFunc(func(context.Context, ora.ReasonerInput) (ora.ReasonerDecision, error) {
				return ora.ReasonerDecision{
					ID: "dec-1", SignalID: "sig-1", ActionType: tt.actions[0].Type, Parameters: tt.actions[0].Parameters, Actions: tt.actions,
					Confidence: 0.95, Reasoning: "the model's", AuthorType: ora.AuthorAuditor,
					Scope: ora.Scope{AllowedOperations: ops}, Tier: 1, Timestamp: at,
				}, nil
			})}
			got, err := invoke(t, h, `{"signal_id":"sig-1"}`)
			if err != nil {
				t.Fatalf("reason: %v, want the decision recorded", err)
			}
			if got.Band != tt.band {
				t.Errorf("band = %s (confidence %v), want %s", got.Band, got.Confidence, tt.band)
			}
			stored := decisions(t, db, "sig-1")
			if len(stored) != 1 {
				t.Fatalf("%d decisions recorded, want 1", len(stored))
			}
			var d ora.ReasonerDecision
			if err := json.Unmarshal(stored[0].Body, &d); err != nil {
				t.Fatal(err)
			}
			if tt.problem == "" {
				if d.Confidence != 0.95 || d.Reasoning != "the model's" {
					t.Errorf("decision changed: %v %q", d.Confidence, d.Reasoning)
				}
				return
			}
			if d.Confidence != InvalidParametersConfidence || !strings.HasPrefix(d.Reasoning, "Invalid parameters") ||
				!strings.Contains(d.Reasoning, tt.problem) || !strings.Contains(d.Reasoning, "\n\nthe model's") {
				t.Errorf("decision %v %q; want %v and the problem %q first", d.Confidence, d.Reasoning, InvalidParametersConfidence, tt.problem)
			}
			state, err := db.Decision(context.Background(), "dec-1")
			if err != nil || state.Status != ora.StatusDecided {
				t.Errorf("status %+v, %v; want decided (Route escalates it)", state, err)
			}
		})
	}
}
