package embedded

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/reason"
)

// TestRepeatedDeliverySkipsTheModel: two deliveries of the same event
// (distinct delivery ids, so two signals and two waves) reach the model
// once: the second wave's decision is the first's, reused from the pattern
// cache and recorded as PatternMatch naming it.
func TestRepeatedDeliverySkipsTheModel(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	ctx := context.Background()
	fake := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply {
		return observation(0.97, act.TypeNone, map[string]any{"reason": "a heartbeat"})
	})
	cfg := testConfig(t, t.TempDir())
	cfg.Reasoner.Kind, cfg.Reasoner.BedrockEndpoint, cfg.Reasoner.Region = "bedrock", fake.URL, "us-east-1"
	cfg.Reasoner.Bedrock.Batch.Window = 0
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	wait := func(waveID string) {
		w, err := waves{r}.Wave(ctx, waveID)
		for deadline := time.Now().Add(30 * time.Second); err == nil && w.Status == "RUNNING" && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			w, err = waves{r}.Wave(ctx, waveID)
		}
		if err != nil || w.Status != "SUCCEEDED" {
			t.Fatalf("wave %s: %+v, %v", waveID, w, err)
		}
	}
	first := send(t, r, srv.URL, "repeat-1", `{"status":"ok"}`)
	wait(first.WaveID)
	calls := len(fake.Requests())
	if calls == 0 {
		t.Fatal("the first wave did not call the model")
	}
	second := send(t, r, srv.URL, "repeat-2", `{"status":"ok"}`)
	if second.SignalID == first.SignalID {
		t.Fatal("the second delivery was deduplicated: the test needs two signals")
	}
	wait(second.WaveID)
	if got := len(fake.Requests()); got != calls {
		t.Errorf("model calls %d after the repeat, want %d (none for the second wave)", got, calls)
	}
	d1, d2 := decisionOf(t, r, first.SignalID), decisionOf(t, r, second.SignalID)
	if d2.Model == nil || d2.Model.CrystallizationReason != string(reason.PatternMatch) || d2.Model.PatternSource != d1.ID || d2.Model.ChainLength != 0 {
		t.Errorf("second trace %+v: want PatternMatch from %s with no stage", d2.Model, d1.ID)
	}
}
