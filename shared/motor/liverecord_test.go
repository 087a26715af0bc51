package motor_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
)

// outcomes is a telemetry.Metrics that keeps ora_golden_recordings_total
// by outcome.
type outcomes struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *outcomes) Add(_ string, _ float64, labels ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[labels[len(labels)-1]]++
}
func (o *outcomes) Observe(string, float64, ...string) {}
func (o *outcomes) Set(string, float64, ...string)     {}

// A recorded wave's exchanges are kept unless one holds a registered
// secret: a fact in the packet carrying a secret value is refused and
// counted, and nothing of it is written; the wave's own decision is not
// touched either way. Sampling picks the same waves for the same ids.
func TestLiveRecorderRecordsTheGatesRequests(t *testing.T) {
	const canary = "canary-9c4f0e-packet-secret"
	secrets := &ora.Secrets{}
	secrets.Add("test canary", canary)
	secretWave := gateWave("build-43")
	secretWave.Packet.Bands[0].Facts[0].Normalized = json.RawMessage(`{"note":"token ` + canary + `"}`)
	tests := []struct {
		name    string
		wave    motor.GoldenWave
		outcome string
	}{
		{"a wave's exchanges are kept", gateWave("build-41"), motor.RecordKept},
		{"a secret in a packet's fact is refused", secretWave, motor.RecordSecret},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := bedrocktest.NewFunc(t, gateModel)
			dir := t.TempDir()
			rec := &bedrock.Recorder{Store: bedrock.DirRecordings(dir), Secrets: secrets, KeepOnce: true}
			m := &outcomes{n: map[string]int{}}
			lr := &motor.LiveRecorder{Build: modelBuild(t, srv, rec), Rate: 1, Metrics: m}
			decided := 0
			build := lr.Wrap(func(motor.Bundle) (ora.Reasoner, error) {
				return reasonerFunc(func(context.Context, ora.ReasonerInput) (ora.ReasonerDecision, error) {
					decided++
					return ora.ReasonerDecision{ID: "d1"}, nil
				}), nil
			})
			rs, err := build(bundle("1.0.0"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rs.Reason(context.Background(), ora.ReasonerInput{Signal: tc.wave.Signal, Packet: tc.wave.Packet}); err != nil || decided != 1 {
				t.Fatalf("the wave's decision: %v, decided %d", err, decided)
			}
			if m.n[tc.outcome] != 1 {
				t.Errorf("outcomes %v, want one %s", m.n, tc.outcome)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
			if (len(files) > 0) != (tc.outcome == motor.RecordKept) {
				t.Errorf("recordings %v for outcome %s", files, tc.outcome)
			}
			for _, f := range files {
				if b, _ := os.ReadFile(f); strings.Contains(string(b), canary) {
					t.Errorf("%s holds the secret", f)
				}
			}
		})
	}
}

func TestSampled(t *testing.T) {
	n := 0
	for i := range 1000 {
		id := "sig-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		first := motor.Sampled(id, 0.2)
		if again := motor.Sampled(id, 0.2); again != first {
			t.Fatalf("%s sampled differently twice", id)
		}
		if first {
			n++
		}
	}
	if n < 100 || n > 300 || motor.Sampled("any", 0) || !motor.Sampled("any", 1) {
		t.Errorf("sampled %d of 1000 at 0.2; rate 0 or 1 not honoured", n)
	}
}

type reasonerFunc func(context.Context, ora.ReasonerInput) (ora.ReasonerDecision, error)

func (f reasonerFunc) Reason(ctx context.Context, in ora.ReasonerInput) (ora.ReasonerDecision, error) {
	return f(ctx, in)
}

// Recording before the decision returns never eats the time the wave needs
// to record its decision: with less than motor.RecordMargin left before
// the invocation's deadline, the wave is skipped without a model call.
func TestLiveRecorderLeavesTheWaveItsTime(t *testing.T) {
	srv := bedrocktest.NewFunc(t, gateModel)
	m := &outcomes{n: map[string]int{}}
	lr := &motor.LiveRecorder{Build: modelBuild(t, srv, &bedrock.Recorder{Store: bedrock.DirRecordings(t.TempDir()), KeepOnce: true}), Rate: 1, Metrics: m}
	rs, err := lr.Wrap(func(motor.Bundle) (ora.Reasoner, error) {
		return reasonerFunc(func(context.Context, ora.ReasonerInput) (ora.ReasonerDecision, error) {
			return ora.ReasonerDecision{ID: "d1"}, nil
		}), nil
	})(bundle("1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), motor.RecordMargin/2)
	defer cancel()
	w := gateWave("build-44")
	if _, err := rs.Reason(ctx, ora.ReasonerInput{Signal: w.Signal, Packet: w.Packet}); err != nil {
		t.Fatal(err)
	}
	if m.n[motor.RecordSkipped] != 1 || len(srv.Requests()) != 0 {
		t.Errorf("outcomes %v, model calls %d; want one skipped and none", m.n, len(srv.Requests()))
	}
}
