package validate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/taskerr"
	"github.com/ora-runtime/ora/shared/validate"
)

// TestSafetyGuardrail: at tier 2 and above the safety validator applies the
// Bedrock guardrail (ApplyGuardrail over the fake server) to the action
// parameters and to the signal text; an intervention fails safety.
func TestSafetyGuardrail(t *testing.T) {
	tests := []struct {
		name      string
		tier      int
		blockWord string // the guardrail intervenes on texts containing it
		verdict   ora.Verdict
		calls     int
		why       string
	}{
		{"tier 3, nothing to block", 3, "", ora.Pass, 2, ""},
		{"tier 3, parameters blocked", 3, "report", ora.Fail, 2, "action parameters"},
		{"tier 2, signal text blocked", 2, "opened", ora.Fail, 2, "signal text"},
		{"tier 1 is not checked", 1, "report", ora.Pass, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, false)
			f.d.ID, f.d.Tier = "d-"+strings.ReplaceAll(tc.name, " ", "-"), tc.tier
			srv := bedrocktest.New(t)
			srv.OnGuardrail(func(r bedrocktest.GuardrailRequest) bedrocktest.GuardrailReply {
				for _, x := range r.Texts() {
					if tc.blockWord != "" && strings.Contains(x, tc.blockWord) {
						return bedrocktest.GuardrailReply{Intervened: true, Topic: "blocked-" + tc.blockWord}
					}
				}
				return bedrocktest.GuardrailReply{}
			})
			g, err := bedrock.NewGuard(srv.Client(1), bedrock.Guardrail{ID: "gr-ora", Version: "1"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.db.RecordDecision(context.Background(), f.d); err != nil {
				t.Fatal(err)
			}
			svc := validate.New(f.db, func(o *validate.Options) { o.Guardrail = g })
			r, err := svc.Validate(context.Background(), ora.ValidatorSafety, "s1", f.d.ID)
			if r.Verdict != tc.verdict {
				t.Fatalf("verdict %s (%s), err %v; want %s", r.Verdict, r.Summary, err, tc.verdict)
			}
			var vf *taskerr.ValidationFailed
			if tc.verdict == ora.Fail && (!errors.As(err, &vf) || !strings.Contains(r.Summary, tc.why) || !strings.Contains(r.Summary, "blocked-"+tc.blockWord)) {
				t.Errorf("err %v summary %q: want ValidationFailed naming the %s and the topic", err, r.Summary, tc.why)
			}
			reqs := srv.GuardrailRequests()
			if len(reqs) != tc.calls {
				t.Fatalf("%d ApplyGuardrail calls, want %d", len(reqs), tc.calls)
			}
			if tc.calls == 2 && (reqs[0].Source != "OUTPUT" || reqs[1].Source != "INPUT" || !strings.Contains(reqs[1].Texts()[0], `"number":7`)) {
				t.Errorf("guardrail requests %+v: want the parameters as OUTPUT, then the signal payload as INPUT", reqs)
			}
		})
	}
	t.Run("guardrail down is an error, not a verdict", func(t *testing.T) {
		f := newFixture(t, false)
		srv := bedrocktest.New(t)
		srv.OnGuardrail(func(bedrocktest.GuardrailRequest) bedrocktest.GuardrailReply {
			return bedrocktest.GuardrailReply{Status: 429, ErrorType: "ThrottlingException", Message: "slow down"}
		})
		g, _ := bedrock.NewGuard(srv.Client(1), bedrock.Guardrail{ID: "gr-ora", Version: "1"})
		svc := validate.New(f.db, func(o *validate.Options) { o.Guardrail = g })
		if _, err := svc.Validate(context.Background(), ora.ValidatorSafety, "s1", "d1"); ora.ErrorCode(err) != ora.ETRANSIENT {
			t.Errorf("err = %v, want ETRANSIENT (retried by the state machine)", err)
		}
	})
}

// TestIntentJudge: at tier 3 the intent validator asks the model (the fake
// Converse) whether the evidence fulfils the decision's stated intent.
func TestIntentJudge(t *testing.T) {
	verdict := func(ok bool, unmet ...string) bedrocktest.Reply {
		if unmet == nil {
			unmet = []string{}
		}
		return bedrocktest.Tool(reason.IntentTool, map[string]any{"fulfilled": ok, "reasoning": "checked the receipts", "unmet_criteria": unmet})
	}
	tests := []struct {
		name    string
		tier    int
		replies []bedrocktest.Reply
		verdict ora.Verdict
		calls   int
		why     string
	}{
		{"fulfilled", 3, []bedrocktest.Reply{verdict(true)}, ora.Pass, 1, ""},
		{"not fulfilled", 3, []bedrocktest.Reply{verdict(false, "the team was not told")}, ora.Fail, 1, "the team was not told"},
		{"guardrail stops the judge", 3, []bedrocktest.Reply{bedrocktest.Stopped("guardrail_intervened", verdict(true))}, ora.Fail, 1, "guardrail_intervened"},
		{"truncated answer retried", 3, []bedrocktest.Reply{bedrocktest.Stopped("max_tokens", verdict(true)), verdict(true)}, ora.Pass, 2, ""},
		{"truncated twice cannot confirm", 3, []bedrocktest.Reply{bedrocktest.Stopped("max_tokens", verdict(true)), bedrocktest.Stopped("max_tokens", verdict(true))}, ora.Fail, 2, "max_tokens"},
		{"answer missing a field", 3, []bedrocktest.Reply{bedrocktest.Tool(reason.IntentTool, map[string]any{"fulfilled": true})}, ora.Fail, 1, "missing properties"},
		{"tier 2 is not asked", 2, nil, ora.Pass, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, true)
			if tc.tier != 3 {
				f.d.ID, f.d.Tier = "d-tier", tc.tier
				if _, err := f.db.RecordDecision(context.Background(), f.d); err != nil {
					t.Fatal(err)
				}
				reg := act.Standard(act.Config{}, act.NewLogNotify(quiet), act.Folder{Root: f.root}, f.db, nil)
				_, _ = act.New(f.db, reg, nil, func(o *act.Options) { o.Log = quiet }).Act(context.Background(), "s1", f.d.ID)
			}
			srv := bedrocktest.New(t, tc.replies...)
			cfg := reason.DefaultConfig()
			if tc.name == "answer missing a field" {
				// Only a model without strict tool use can leave a field out.
				loose := "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
				cfg.Model, cfg.FallbackModels = loose, nil
				cfg.Prices[loose] = reason.Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
			}
			judge, err := reason.NewIntentJudge(bedrock.New(srv.Client(1)), cfg)
			if err != nil {
				t.Fatal(err)
			}
			svc := validate.New(f.db, func(o *validate.Options) { o.IntentJudge = judge })
			r, err := svc.Validate(context.Background(), ora.ValidatorIntent, "s1", f.d.ID)
			if tc.tier != 3 {
				if len(srv.Requests()) != 0 {
					t.Errorf("the model was asked about a tier-%d decision", tc.tier)
				}
				return
			}
			if r.Verdict != tc.verdict || len(srv.Requests()) != tc.calls {
				t.Fatalf("verdict %s (%s) after %d calls, err %v; want %s after %d", r.Verdict, r.Summary, len(srv.Requests()), err, tc.verdict, tc.calls)
			}
			if tc.why != "" && !strings.Contains(r.Summary, tc.why) {
				t.Errorf("summary %q does not say %q", r.Summary, tc.why)
			}
			req := srv.Requests()[0]
			if req.ForcedTool() != reason.IntentTool || !strings.Contains(req.UserText(), "stated_intent") || !strings.Contains(req.UserText(), "receipt") {
				t.Errorf("the judge was not asked with the decision's intent and the evidence: %s", req.UserText())
			}
		})
	}
}
