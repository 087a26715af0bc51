package reason_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// TestRepeatedSignalSkipsTheModel: a signal whose payload, source and shape
// were decided before under the same motor version reuses that decision
// without a model call (the fake Converse server counts the calls),
// recorded as crystallization PatternMatch naming the source decision; a
// payload that differs, or another motor version, asks the model.
func TestRepeatedSignalSkipsTheModel(t *testing.T) {
	const title = "Checkout returns 500 when the cart is empty"
	tests := []struct {
		name      string
		payload   string // the second signal's number field
		prompts   string // the second run's prompts version
		wantCalls int
	}{
		{"the same payload again", `"number":7`, "", 0},
		{"another issue number", `"number":8`, "", 1},
		{"another motor version", `"number":7`, "next", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			patterns := &memPatterns{}
			reasoner := func(cfg reason.Config) (*reason.Reasoner, *bedrocktest.Server) {
				srv := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply { return stage(0.97, 8, "the cart bug again", safeOPS) })
				r, err := reason.NewReasoner(bedrock.New(srv.Client(1)), cfg, func(o *reason.Options) {
					o.Patterns, o.Now = patterns, func() time.Time { return now }
				})
				if err != nil {
					t.Fatal(err)
				}
				return r, srv
			}
			cfg := testConfig()
			r1, srv1 := reasoner(cfg)
			first := ora.ReasonerInput{Signal: issue("sig-a", title), Packet: ora.OrientationPacket{ID: "pkt-a", Digest: "digest-a"}}
			d1, err := r1.Reason(context.Background(), first)
			if err != nil || len(srv1.Requests()) != 1 || d1.Model.CrystallizationReason != string(reason.HighConfidence) {
				t.Fatalf("first: %v after %d calls, %+v", err, len(srv1.Requests()), d1.Model)
			}
			if tc.prompts != "" {
				cfg.PromptsVersion = tc.prompts
			}
			r2, srv2 := reasoner(cfg)
			sig := issue("sig-b", title)
			sig.Payload = json.RawMessage(strings.Replace(string(sig.Payload), `"number":7`, tc.payload, 1))
			d2, err := r2.Reason(context.Background(), ora.ReasonerInput{Signal: sig, Packet: ora.OrientationPacket{ID: "pkt-b", Digest: "digest-b"}})
			if err != nil {
				t.Fatalf("second: %v", err)
			}
			if got := len(srv2.Requests()); got != tc.wantCalls {
				t.Fatalf("second signal made %d model calls, want %d", got, tc.wantCalls)
			}
			m := d2.Model
			if tc.wantCalls > 0 {
				if m.CrystallizationReason == string(reason.PatternMatch) && m.ChainLength == 0 {
					t.Errorf("trace %+v: a reused decision, want the model's", m)
				}
				return
			}
			if m.CrystallizationReason != string(reason.PatternMatch) || m.PatternSource != reason.DecisionID("sig-a") || m.ModelID != reason.PatternModel ||
				m.ChainLength != 0 || m.CostUSD != 0 || m.Usage != (ora.Usage{}) {
				t.Errorf("trace %+v: want PatternMatch from sig-a's decision, no call, no cost", m)
			}
			if d2.ID != reason.DecisionID("sig-b") || d2.SignalID != "sig-b" || d2.PacketDigest != "digest-b" || d2.ActionType != d1.ActionType ||
				string(d2.Parameters) != string(d1.Parameters) || d2.Confidence != d1.Confidence {
				t.Errorf("second decision %+v, want the first's action for sig-b", d2)
			}
		})
	}
}
