package orient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/orient/orienttest"
)

var steadyNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func steadyState(t *testing.T, waves int) (ora.NormalizedSignal, ora.OrientationPacket) {
	t.Helper()
	_, s, p, err := orienttest.SteadyState(context.Background(), waves, steadyNow)
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// Verify proves the view a decision's model read: it renders the replayed
// packet again and compares the digest the decision cites.
func TestVerifyChecksTheView(t *testing.T) {
	tests := []struct {
		name      string
		trace     func(v orient.View) *ora.ModelTrace
		wantMatch bool
	}{
		{"the view the model read", func(v orient.View) *ora.ModelTrace {
			return &ora.ModelTrace{PacketViewDigest: v.Digest, PacketViewTokens: v.MaxTokens}
		}, true},
		{"another view than the packet gives", func(v orient.View) *ora.ModelTrace {
			return &ora.ModelTrace{PacketViewDigest: v.Digest, PacketViewTokens: 500} // too small for every fact
		}, false},
		{"a view of other text", func(orient.View) *ora.ModelTrace {
			return &ora.ModelTrace{PacketViewDigest: ora.Digest([]byte("other")), PacketViewTokens: orient.DefaultViewTokens}
		}, false},
		{"a decision without a model", func(orient.View) *ora.ModelTrace { return nil }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st, sig, p, err := orienttest.SteadyState(ctx, 20, steadyNow)
			if err != nil {
				t.Fatal(err)
			}
			d := ora.ReasonerDecision{ID: "dec-1", SignalID: sig.ID, ActionType: "http.request", Parameters: json.RawMessage(`{"method":"GET"}`),
				Confidence: 0.9, Reasoning: "label it", AuthorType: ora.AuthorArchitect, Scope: ora.Scope{AllowedOperations: []string{"http.request"}},
				Tier: 2, Timestamp: steadyNow, PacketDigest: p.Digest, Model: tc.trace(orient.Render(p, 0))}
			e, err := ora.NewEntry(sig.ID, ora.KindReasonerDecision, "", d)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
			v, err := orient.NewCompiler(st).Verify(ctx, sig.ID)
			if err != nil {
				t.Fatal(err)
			}
			if v.Match != tc.wantMatch {
				t.Errorf("match = %v, want %v (%+v)", v.Match, tc.wantMatch, v)
			}
		})
	}
}

func TestRenderSteadyState(t *testing.T) {
	_, p := steadyState(t, 60)
	packetJSON, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	v := orient.Render(p, 0)
	t.Logf("packet JSON %d chars (~%d tokens), %d facts; view %d chars (~%d tokens), %d facts shown", len(packetJSON), orient.EstimateTokens(packetJSON), v.Facts, len(v.Text), v.Tokens(), v.Shown)

	t.Run("within its budget and far smaller than the packet", func(t *testing.T) {
		if v.Tokens() > orient.DefaultViewTokens {
			t.Errorf("view is ~%d tokens, over its budget of %d", v.Tokens(), orient.DefaultViewTokens)
		}
		if len(v.Text)*4 > len(packetJSON) {
			t.Errorf("view is %d chars, packet JSON %d: want at most a quarter", len(v.Text), len(packetJSON))
		}
	})
	t.Run("every fact is shown", func(t *testing.T) {
		if v.Facts < 150 || v.Shown != v.Facts {
			t.Errorf("shown %d of %d facts, want all of at least 150", v.Shown, v.Facts)
		}
	})
	t.Run("no provenance, fact ids or digests", func(t *testing.T) {
		for _, f := range []string{"provenance", "fact_id", "digest", "utility_score", "estimated_tokens", "job_id", p.Digest} {
			if strings.Contains(v.Text, f) {
				t.Errorf("view contains %q", f)
			}
		}
	})
	t.Run("repeated verdicts are one line", func(t *testing.T) {
		n := strings.Count(v.Text, "technical=PASS witness=PASS")
		if n != 1 {
			t.Errorf("%d verdict lines, want 1 aggregated line", n)
		}
		if !strings.Contains(v.Text, "50x verdict completed technical=PASS witness=PASS") {
			t.Errorf("no aggregated count of the 50 verdicts the job reads in:\n%s", v.Text)
		}
	})
	t.Run("related signals carry their payload", func(t *testing.T) {
		for _, want := range []string{"issue.title=Payment webhook retries twice", "action=opened", "commitment cmt-1"} {
			if !strings.Contains(v.Text, want) {
				t.Errorf("view lacks %q", want)
			}
		}
	})
	t.Run("one line per fact", func(t *testing.T) {
		for _, l := range strings.Split(strings.TrimSpace(v.Text), "\n") {
			if len(l) > 600 {
				t.Errorf("line of %d chars: %.100s...", len(l), l)
			}
		}
	})
	t.Run("deterministic digest over the text", func(t *testing.T) {
		again := orient.Render(p, 0)
		if again.Digest != v.Digest || again.Text != v.Text {
			t.Error("two renders of one packet differ")
		}
		if other := orient.Render(p, 1000); other.Digest == v.Digest {
			t.Error("a smaller view has the same digest")
		}
	})
}

func TestRenderBudget(t *testing.T) {
	_, p := steadyState(t, 60)
	for _, tokens := range []int{300, 1000, 3000} {
		v := orient.Render(p, tokens)
		if v.Tokens() > tokens {
			t.Errorf("budget %d: view ~%d tokens", tokens, v.Tokens())
		}
		if v.Shown >= v.Facts || !strings.Contains(v.Text, "not shown") {
			t.Errorf("budget %d: shown %d of %d and no note of the rest", tokens, v.Shown, v.Facts)
		}
		if !strings.Contains(v.Text, "[identity]\n- ") {
			t.Errorf("budget %d: the signal's own fact is missing:\n%s", tokens, v.Text)
		}
	}
}

// A batch's decisions cite the shared view of their packets; Verify merges
// the replayed packet with the batch's other stored packets, in the batch's
// order, and renders them again.
func TestVerifyChecksABatchView(t *testing.T) {
	ctx := context.Background()
	st, _, _, err := orienttest.SteadyState(ctx, 20, steadyNow)
	if err != nil {
		t.Fatal(err)
	}
	var sigs []ora.NormalizedSignal
	var packets []ora.OrientationPacket
	for i := range 2 {
		obj := ora.NormalizedSignal{ID: fmt.Sprintf("sig-file-%d", i), Source: ora.Source{Type: ora.SourceObject, Name: "inbox", Bucket: "inbox", Path: fmt.Sprintf("in/%d.pdf", i), Event: "create"},
			DedupKey: fmt.Sprintf("obj-%d", i), Payload: json.RawMessage(fmt.Sprintf(`{"key":"in/%d.pdf","size":%d}`, i, 1000+i)), RawDigest: ora.Digest([]byte{byte(i)})}
		s, p, err := orienttest.Orient(ctx, st, obj, steadyNow.Add(time.Duration(i+1)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		sigs, packets = append(sigs, s), append(packets, p)
	}
	shared := orient.Render(orient.Merge(packets), 0)
	if alone := orient.Render(packets[0], 0); alone.Digest == shared.Digest {
		t.Fatal("the shared view is the first packet's: the test proves nothing")
	}
	tests := []struct {
		name  string
		order []string
		want  bool
	}{
		{"the batch's order", []string{sigs[0].ID, sigs[1].ID}, true},
		{"another order", []string{sigs[1].ID, sigs[0].ID}, false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := ora.ReasonerDecision{ID: fmt.Sprintf("dec-b%d", i), SignalID: sigs[0].ID, ActionType: "object.move", Parameters: json.RawMessage(`{}`),
				Confidence: 0.9, Reasoning: "file it", AuthorType: ora.AuthorArchitect, Scope: ora.Scope{AllowedOperations: []string{"object.move"}},
				Tier: 2, Timestamp: steadyNow, PacketDigest: packets[0].Digest,
				Model: &ora.ModelTrace{BatchID: "b", BatchSize: 2, BatchSignals: tc.order, PacketViewDigest: shared.Digest, PacketViewTokens: shared.MaxTokens}}
			e, err := ora.NewEntry(sigs[0].ID, ora.KindReasonerDecision, fmt.Sprint(i), d)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
			v, err := orient.NewCompiler(st).Verify(ctx, sigs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if v.Match != tc.want {
				t.Errorf("match = %v, want %v (%+v)", v.Match, tc.want, v)
			}
		})
	}
}
