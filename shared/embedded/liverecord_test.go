package embedded

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/telemetry"
)

// With reasoner.record on, a real wave leaves the recordings of the
// requests the promotion gate asks for that wave: exported from the ledger
// as a golden wave, it passes the gate from the recordings with no `ora
// motor record` step and no call reaching the model. A recording that
// cannot be kept is counted while the wave succeeds.
func TestRealWavesRecordTheGate(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	tests := []struct {
		name    string
		payload string
		broken  bool   // the recordings folder cannot be written
		outcome string // ora_golden_recordings_total's outcome
		gated   bool   // the gate passes the wave from the recordings
	}{
		{"a wave is recorded and gated", `{"status":"ok"}`, false, motor.RecordKept, true},
		{"a failed recording does not fail the wave", `{"status":"ok"}`, true, motor.RecordFailed, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			fake := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply {
				return observation(0.97, act.TypeNone, map[string]any{"reason": "a heartbeat"})
			})
			dir := t.TempDir()
			cfg := testConfig(t, dir)
			cfg.Reasoner.Kind, cfg.Reasoner.BedrockEndpoint, cfg.Reasoner.Region = "bedrock", fake.URL, "us-east-1"
			cfg.Reasoner.Bedrock.Batch.Window = 0
			cfg.Reasoner.Bedrock.Purpose = "Watch the demo source."
			cfg.Reasoner.Record = RecordConfig{Rate: 1}
			if tc.broken { // a file where the recordings folder should be
				if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(cfg.RecordingsDir(), []byte("not a folder"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			srv := httptest.NewServer(r.Handler())
			defer srv.Close()
			rec := send(t, r, srv.URL, "record-"+strings.ReplaceAll(tc.name, " ", "-"), tc.payload)
			w, err := waves{r}.Wave(ctx, rec.WaveID)
			for deadline := time.Now().Add(30 * time.Second); err == nil && w.Status == "RUNNING" && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
				w, err = waves{r}.Wave(ctx, rec.WaveID)
			}
			if err != nil || w.Status != "SUCCEEDED" {
				t.Fatalf("wave: %+v, %v; want SUCCEEDED whatever the recording did", w, err)
			}
			r.liveRec.Wait()
			if got := r.metrics.Value(telemetry.GoldenRecordings, "outcome", tc.outcome); got != 1 {
				t.Errorf("%s{outcome=%s} = %v, want 1", telemetry.GoldenRecordings, tc.outcome, got)
			}
			files, _ := filepath.Glob(filepath.Join(cfg.RecordingsDir(), "*.json"))
			if !tc.gated {
				if len(files) != 0 && tc.outcome != motor.RecordKept {
					t.Errorf("recordings %v, want none", files)
				}
				return
			}
			if len(files) == 0 {
				t.Fatal("no recording kept")
			}
			exported, err := motor.Recorder{Ledger: r.ledger}.Waves(ctx, time.Time{}, rec.SignalID, 0)
			if err != nil || len(exported) != 1 {
				t.Fatalf("export: %v, %v", exported, err)
			}
			b, _, _, err := r.motors.Current(ctx)
			if err != nil {
				t.Fatal(err)
			}
			calls := len(fake.Requests())
			player := &bedrock.Replayer{Recordings: bedrock.DirRecordings(cfg.RecordingsDir())}
			build, err := cfg.ReplayBuild(ctx, player)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := motor.ReplayWith(ctx, b, []motor.GoldenWave{exported[0].GoldenWave}, build)
			if err != nil || len(rep.Failing) != 0 || len(player.Missed()) != 0 {
				t.Fatalf("the gate's replay from the wave's recordings: %+v, %v (missed %v)", rep, err, player.Missed())
			}
			if got := len(fake.Requests()); got != calls {
				t.Errorf("the gate called the model: %d calls, want %d", got, calls)
			}
		})
	}
}
