package embedded

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// observation is a record_observation answer proposing typ with params.
func observation(conf float64, typ string, params map[string]any) bedrocktest.Reply {
	return bedrocktest.Tool(reason.ObservationTool, map[string]any{
		"content": "the demo source reported something", "layers": []string{"SIGNAL"},
		"decision": map[string]any{"safety_check_summary": "checked", "allowed_action": "PROCEED", "action": map[string]any{
			"type": typ, "parameters": params, "tier": 1, "allowed_operations": []string{typ}, "forbidden_paths": []string{}, "author_type": "architect"},
			"then": []any{}},
		"confidence": conf,
	})
}

// TestBedrockReasonerWaves runs waves with the Bedrock reasoner against the
// fake Bedrock server: a none decision runs (it records, nothing else) and
// the wave succeeds; a side effect the policy does not permit for the source
// becomes a none decision that waits for a human.
func TestBedrockReasonerWaves(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	tests := []struct {
		name   string
		reply  bedrocktest.Reply
		waits  bool
		reason string
	}{
		{"the model says nothing is needed", observation(0.97, act.TypeNone, map[string]any{"reason": "a heartbeat"}), false, "Nothing to do: a heartbeat"},
		{"the model asks for a request the policy does not permit", observation(0.99, act.TypeHTTPRequest, map[string]any{"method": "DELETE", "connection": "", "path": "", "url": "http://127.0.0.1/x", "body": ""}), true, "does not permit http.request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			fake := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply { return tc.reply })
			cfg := testConfig(t, t.TempDir())
			cfg.Reasoner.Kind, cfg.Reasoner.BedrockEndpoint, cfg.Reasoner.Region = "bedrock", fake.URL, "us-east-1"
			cfg.Reasoner.Bedrock.Batch.Window = 0
			cfg.Reasoner.Bedrock.Purpose = "Watch the demo source."
			r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			srv := httptest.NewServer(r.Handler())
			defer srv.Close()
			rec := send(t, r, srv.URL, "bedrock-"+strings.ReplaceAll(tc.name, " ", "-"), `{"status":"ok"}`)
			if tc.waits {
				waitIntent(t, r, rec.SignalID)
			} else {
				w, err := waves{r}.Wave(ctx, rec.WaveID)
				for deadline := time.Now().Add(30 * time.Second); err == nil && w.Status == "RUNNING" && time.Now().Before(deadline); {
					time.Sleep(20 * time.Millisecond)
					w, err = waves{r}.Wave(ctx, rec.WaveID)
				}
				if err != nil || w.Status != "SUCCEEDED" {
					t.Fatalf("wave: %+v, %v", w, err)
				}
			}
			entries, _ := r.ledger.Entries(ctx, rec.SignalID)
			var d ora.ReasonerDecision
			for _, e := range entries {
				if e.Kind == ora.KindReasonerDecision {
					_ = json.Unmarshal(e.Body, &d)
				}
			}
			if d.ActionType != act.TypeNone || !strings.Contains(d.Reasoning, tc.reason) {
				t.Errorf("decision %s %q, want none saying %q", d.ActionType, d.Reasoning, tc.reason)
			}
			if reqs := fake.Requests(); len(reqs) == 0 || !strings.Contains(*reqs[0].System[0].Text, "Watch the demo source.") {
				t.Errorf("the model was not told the agent's purpose")
			}
		})
	}
}

// TestBedrockReasonerPlan: a model decision with a follow-up action, under
// a rule that permits both, is recorded with both actions and their
// depends_on, and the actor runs both: the wave succeeds with evidence for
// each.
func TestBedrockReasonerPlan(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	ctx := context.Background()
	reply := bedrocktest.Tool(reason.ObservationTool, map[string]any{
		"content": "the demo source reports a degraded status: tell the operators, then confirm", "layers": []string{"SIGNAL"},
		"decision": map[string]any{"safety_check_summary": "two notifications, nothing changes", "allowed_action": "PROCEED",
			"action": map[string]any{"type": act.TypeNotify, "parameters": map[string]any{"subject": "demo degraded", "message": "status degraded"},
				"tier": 1, "allowed_operations": []string{act.TypeNotify}, "forbidden_paths": []string{}, "author_type": "architect"},
			"then": []any{map[string]any{
				"action": map[string]any{"type": act.TypeNotify, "parameters": map[string]any{"subject": "demo follow-up", "message": "first notice sent"},
					"tier": 1, "allowed_operations": []string{act.TypeNotify}, "forbidden_paths": []string{}, "author_type": "architect"},
				"depends_on": []int{0}}}},
		"confidence": 0.97,
	})
	fake := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply { return reply })
	cfg := testConfig(t, t.TempDir())
	cfg.Reasoner.Kind, cfg.Reasoner.BedrockEndpoint, cfg.Reasoner.Region = "bedrock", fake.URL, "us-east-1"
	cfg.Reasoner.Bedrock.Batch.Window = 0
	maxConf := 0.95
	cfg.Reasoner.Bedrock.Policy.Rules = []reason.PolicyRule{{Name: "demo", Source: "demo", Actions: []string{act.TypeNotify}, MinTier: 1, MaxConfidence: &maxConf}}
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	src, _ := cfg.Source("demo")
	body := []byte(`{"status":"degraded"}`)
	h, _ := observe.SignDelivery(src, body, time.Now(), "bedrock-plan")
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/demo", strings.NewReader(string(body)))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook: %v %v", resp, err)
	}
	var rec observe.Receipt
	_ = json.NewDecoder(resp.Body).Decode(&rec)
	resp.Body.Close()
	w, err := waves{r}.Wave(ctx, rec.WaveID)
	for deadline := time.Now().Add(30 * time.Second); err == nil && w.Status == "RUNNING" && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		w, err = waves{r}.Wave(ctx, rec.WaveID)
	}
	if err != nil || w.Status != "SUCCEEDED" {
		t.Fatalf("wave: %+v, %v", w, err)
	}
	entries, _ := r.ledger.Entries(ctx, rec.SignalID)
	var d ora.ReasonerDecision
	evidence := 0
	for _, e := range entries {
		switch e.Kind {
		case ora.KindReasonerDecision:
			_ = json.Unmarshal(e.Body, &d)
		case ora.KindExecutionEvidence:
			evidence++
		}
	}
	if len(d.Actions) != 2 || d.Actions[1].Type != act.TypeNotify || len(d.Actions[1].DependsOn) != 1 || d.Actions[1].DependsOn[0] != 0 {
		t.Fatalf("decision actions %+v: want notify, then notify after 0", d.Actions)
	}
	if evidence != 2 {
		t.Errorf("%d execution-evidence entries, want one per action (2)", evidence)
	}
}
