package orient_test

import (
	"context"
	"encoding/json"
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
	s, p, err := orienttest.SteadyState(context.Background(), waves, steadyNow)
	if err != nil {
		t.Fatal(err)
	}
	return s, p
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
		for _, want := range []string{"Payment webhook retries twice", "issue.number=158", "commitment cmt-1"} {
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
