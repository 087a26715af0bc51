package orient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/orient/orienttest"
)

// The synthetic workload of decision quality: each wave's signal has one
// correct decision among three. Its facts are a handful of noisy activity
// facts (a rule weighted 0.7, each hinting at a random decision) and one
// deploy fact that states the right decision (a rule weighted 0.3); the
// profile's fact cap keeps 6 facts, so under the starting weights the noise
// crowds the evidence out. The decider follows the deploy fact when the
// packet holds it, else the activity facts' majority. Scoring uses the real
// Weights.Score and CompileProfile; the feedback loop uses the real
// RecordRegret, Propose (the guard) and Approve.
const (
	b3Waves  = 200
	b3Window = 10 // waves between two looks at the regrets
	b3Seed   = 7
)

var b3Decisions = []string{"notify", "rollback", "ignore"}

// b3Result is one run's decision quality.
type b3Result struct {
	Correct, Waves      int
	LastWindowCorrect   int
	Proposals           int
	FinalEvidenceWeight float64
}

func (r b3Result) accuracy() float64 { return float64(r.Correct) / float64(r.Waves) }
func (r b3Result) lastWindow() float64 {
	return float64(r.LastWindowCorrect) / float64(b3Window)
}

func b3Rule(id string, weight float64) ora.AttentionRule {
	pred, _ := json.Marshal(orient.LedgerPredicate{Query: orient.JobRecentActions, WindowSeconds: 3600, Limit: 20})
	return ora.AttentionRule{ID: id, SourceType: orient.FamilyLedger, Predicate: pred, Band: ora.BandSituational, PriorityWeight: weight, Enabled: true}
}

// runB3 runs the workload; with feedback, each right decision records a
// quality score of 1 and each wrong one a regret naming the rule whose fact
// was missing, and each window with 3 or more regrets proposes (and
// approves) raising that rule's weight by 0.5 for a horizon of 5 waves with
// the promote policy: the profile keeps the change only if those waves had
// no regret.
func runB3(t testing.TB, feedback bool) b3Result {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	st := orienttest.NewStore()
	profiles := orient.NewProfiles(st, func(o *orient.Options) { o.Now = func() time.Time { return at } })
	p := orient.DefaultProfile(func(o *orient.Options) { o.ProfileID = "b3" })
	p.Rules = []ora.AttentionRule{b3Rule("activity", 0.7), b3Rule("deploys", 0.3)}
	p.Limits.MaxFacts = 6
	if _, err := profiles.Put(ctx, p); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(b3Seed, b3Seed))
	var res b3Result
	var regrets []string
	for i := range b3Waves {
		id := fmt.Sprintf("b3-%03d", i)
		raw := []byte(`{"wave":"` + id + `"}`)
		sig := ora.NormalizedSignal{ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: "ci", Provider: "hmac"},
			Timestamp: at, NormalizedAt: at, DedupKey: id, Payload: raw, Raw: raw, RawDigest: ora.Digest(raw)}
		if e, err := ora.NewEntry(id, ora.KindSignalReceived, "", sig); err != nil {
			t.Fatal(err)
		} else if _, err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		// The wave runs under the version its pin fixes (an approved
		// proposal serves its horizon, then its policy applies).
		_, cur, err := profiles.Pin(ctx, id, "b3")
		if err != nil {
			t.Fatal(err)
		}
		weight := map[string]float64{}
		for _, r := range cur.Rules {
			weight[r.ID] = r.PriorityWeight
		}
		want := b3Decisions[rng.IntN(len(b3Decisions))]
		fact := func(rule string, n int, body string) ora.Fact {
			f := ora.Fact{ID: fmt.Sprintf("%s/%s/%d", id, rule, n), WaveID: id, SourceType: string(orient.JobRecentActions),
				Provenance: map[string]string{"rule_id": rule}, Normalized: json.RawMessage(body), Band: ora.BandSituational,
				EstimatedTokens: 300, CreatedAt: at}
			f.Utility = orient.Weights{Priority: weight[rule]}.Score(f, at)
			return f
		}
		facts := []ora.Fact{fact("deploys", 0, `{"decision":"`+want+`"}`)}
		for n := range 5 + rng.IntN(5) {
			facts = append(facts, fact("activity", n, `{"hint":"`+b3Decisions[rng.IntN(len(b3Decisions))]+`","n":`+fmt.Sprint(n)+`}`))
		}
		packet, err := orient.CompileProfile(sig, facts, cur, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := b3Decide(packet)
		res.Waves++
		if got == want {
			res.Correct++
			if i >= b3Waves-b3Window {
				res.LastWindowCorrect++
			}
			if feedback { // the score a temporary version needs to be promoted
				one := 1.0
				if err := profiles.RecordFeedback(ctx, ora.Feedback{WaveID: id, FeedbackID: "score", Source: "api", DecisionQualityScore: &one}); err != nil {
					t.Fatal(err)
				}
			}
		} else if feedback {
			if err := profiles.RecordRegret(ctx, id, "validator", "decided "+got+", the deploy said "+want, []string{"missing:deploys"}); err != nil {
				t.Fatal(err)
			}
			regrets = append(regrets, id)
		}
		if !feedback || (i+1)%b3Window != 0 {
			continue
		}
		missing := 0
		for _, w := range regrets {
			fb, err := profiles.Feedback(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fb {
				if f.DecisionRegret && slices.Contains(f.MissedSignalFlags, "missing:deploys") {
					missing++
				}
			}
		}
		regrets = nil
		if missing < 3 {
			continue
		}
		cur, err = profiles.Current(ctx, "b3")
		if err != nil {
			t.Fatal(err)
		}
		rules := slices.Clone(cur.Rules)
		for j := range rules {
			if rules[j].ID == "deploys" {
				rules[j].PriorityWeight = min(rules[j].PriorityWeight+0.5, 1)
			}
		}
		prop := ora.ProfileProposal{ID: fmt.Sprintf("b3-raise-deploys-%d", i), BaseProfileID: "b3", BaseProfileVersion: cur.Version,
			EffectiveWaves: b3Window / 2, HorizonPolicy: ora.HorizonPromote, Reason: fmt.Sprintf("%d regrets missed the deploy fact", missing),
			Change: ora.ProfileChange{Rules: rules}}
		by := orient.Principal{Subject: "orientation-advisor", Namespace: "main"}
		if v, err := profiles.Propose(ctx, prop, by); err != nil || v.Status != ora.ProposalPending {
			t.Fatalf("propose: %s %+v, %v", v.Status, v.Decision, err)
		}
		if _, err := profiles.Approve(ctx, prop.ID, orient.Principal{Subject: "operator", Namespace: "main"}); err != nil {
			t.Fatalf("approve: %v", err)
		}
		res.Proposals++
	}
	cur, _ := profiles.Current(ctx, "b3")
	for _, r := range cur.Rules {
		if r.ID == "deploys" {
			res.FinalEvidenceWeight = r.PriorityWeight
		}
	}
	return res
}

// b3Decide follows the deploy fact when the packet holds it, else the
// majority of the activity facts' hints (ties to the first decision).
func b3Decide(p ora.OrientationPacket) string {
	votes := map[string]int{}
	for _, b := range p.Bands {
		for _, f := range b.Facts {
			var n struct{ Decision, Hint string }
			_ = json.Unmarshal(f.Normalized, &n)
			if n.Decision != "" {
				return n.Decision
			}
			if n.Hint != "" {
				votes[n.Hint]++
			}
		}
	}
	best := b3Decisions[0]
	for _, d := range b3Decisions {
		if votes[d] > votes[best] {
			best = d
		}
	}
	return best
}

// Feedback-driven proposals improve decision quality on the synthetic
// workload: with the loop, accuracy over the same waves is higher than
// without it, and the last window's is higher still.
func TestB3FeedbackImprovesDecisionQuality(t *testing.T) {
	without, with := runB3(t, false), runB3(t, true)
	t.Logf("without feedback: %.1f%% correct over %d waves (last %d: %.0f%%)", 100*without.accuracy(), without.Waves, b3Window, 100*without.lastWindow())
	t.Logf("with feedback:    %.1f%% correct over %d waves (last %d: %.0f%%), %d proposals applied, deploy weight 0.3 -> %.2f",
		100*with.accuracy(), with.Waves, b3Window, 100*with.lastWindow(), with.Proposals, with.FinalEvidenceWeight)
	if with.Proposals == 0 || with.accuracy() <= without.accuracy() || with.lastWindow() <= without.lastWindow() {
		t.Fatalf("feedback did not improve decision quality: without %+v, with %+v", without, with)
	}
}

// BenchmarkB3 reports the workload's accuracy with and without the
// feedback loop (decisions correct per 100), and its cost per run.
func BenchmarkB3(b *testing.B) {
	var without, with b3Result
	for range b.N {
		without, with = runB3(b, false), runB3(b, true)
	}
	b.ReportMetric(100*without.accuracy(), "accuracy_without_%")
	b.ReportMetric(100*with.accuracy(), "accuracy_with_%")
	b.ReportMetric(100*with.lastWindow(), "accuracy_last_window_%")
}
