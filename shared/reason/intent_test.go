package reason_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// brokenSpend is a SpendMeter that cannot count.
type brokenSpend struct{}

func (brokenSpend) Add(context.Context, string, float64) (float64, error) {
	return 0, ora.Transient(errors.New("meter down"), "spend")
}
func (brokenSpend) Total(context.Context, string) (float64, error) { return 0, nil }

// The tier-3 intent judge's model calls count in the reasoner's per-day spend
// meter, its retry included, at the configuration's prices; a meter that
// cannot count does not cost the verdict, which says so.
func TestIntentJudgeSpend(t *testing.T) {
	now := time.Date(2026, 11, 24, 23, 30, 0, 0, time.FixedZone("UTC-2", -2*3600)) // 2026-11-25 in UTC
	usage := &bedrocktest.Usage{InputTokens: 12000, OutputTokens: 800, TotalTokens: 12800}
	answer := func(stop string) bedrocktest.Reply {
		r := bedrocktest.Tool(reason.IntentTool, map[string]any{"fulfilled": true, "reasoning": "the receipts show it", "unmet_criteria": []string{}})
		r.Usage, r.StopReason = usage, stop
		return r
	}
	cfg := reason.DefaultConfig()
	perCall := cfg.Cost(cfg.Model, ora.Usage{InputTokens: 12000, OutputTokens: 800})
	if perCall <= 0 {
		t.Fatalf("the default model's price gives %v for a call: the test needs a positive cost", perCall)
	}
	tests := []struct {
		name    string
		replies []bedrocktest.Reply
		broken  bool
		calls   int
	}{
		{"one call", []bedrocktest.Reply{answer("")}, false, 1},
		{"truncated, then retried", []bedrocktest.Reply{answer("max_tokens"), answer("")}, false, 2},
		{"the meter is down", []bedrocktest.Reply{answer("")}, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := bedrocktest.New(t, tt.replies...)
			meter := &memSpend{}
			// The reasoner spent something earlier that day: the judge adds to it.
			if _, err := meter.Add(context.Background(), "2026-11-25", 0.5); err != nil {
				t.Fatal(err)
			}
			var spend reason.SpendMeter = meter
			if tt.broken {
				spend = brokenSpend{}
			}
			judge, err := reason.NewIntentJudge(bedrock.New(srv.Client(1)), cfg, func(o *reason.IntentOptions) {
				o.Spend, o.Now = spend, func() time.Time { return now }
			})
			if err != nil {
				t.Fatal(err)
			}
			d := ora.ReasonerDecision{ID: "d-1", Reasoning: "tell the team", Tier: 3}
			v, err := judge.Judge(context.Background(), d, []string{"receipt"})
			if err != nil {
				t.Fatal(err)
			}
			if !v.Fulfilled {
				t.Fatalf("verdict %+v, want fulfilled", v)
			}
			if n := len(srv.Requests()); n != tt.calls {
				t.Fatalf("%d model calls, want %d", n, tt.calls)
			}
			want := perCall * float64(tt.calls)
			if math.Abs(v.CostUSD-want) > 1e-12 {
				t.Errorf("verdict cost %v, want %v", v.CostUSD, want)
			}
			total, _ := meter.Total(context.Background(), "2026-11-25")
			if tt.broken {
				if total != 0.5 || !strings.Contains(v.SpendNotRecorded, "meter down") {
					t.Errorf("meter total %v, spend_not_recorded %q: want 0.5 and the meter's error", total, v.SpendNotRecorded)
				}
				return
			}
			if math.Abs(total-(0.5+want)) > 1e-12 || v.SpendNotRecorded != "" {
				t.Errorf("meter total %v (spend_not_recorded %q), want %v", total, v.SpendNotRecorded, 0.5+want)
			}
		})
	}
}
