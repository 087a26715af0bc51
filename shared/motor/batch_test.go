package motor_test

import (
	"context"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
)

// batching is a hand-written fake version reasoner that can batch.
type batching struct{ alone, batches int }

func (b *batching) Reason(_ context.Context, in ora.ReasonerInput) (ora.ReasonerDecision, error) {
	b.alone++
	return ora.ReasonerDecision{SignalID: in.Signal.ID}, nil
}

func (b *batching) ReasonBatch(_ context.Context, ins []ora.ReasonerInput) ([]ora.ReasonerDecision, error) {
	b.batches++
	out := make([]ora.ReasonerDecision, len(ins))
	for i, in := range ins {
		out[i] = ora.ReasonerDecision{SignalID: in.Signal.ID}
	}
	return out, nil
}

// A batch goes to the version's reasoner in one call when it batches, and
// signal by signal when it does not; every decision names the version.
func TestReasonBatch(t *testing.T) {
	ins := []ora.ReasonerInput{{Signal: ora.NormalizedSignal{ID: "a"}}, {Signal: ora.NormalizedSignal{ID: "b"}}}
	tests := []struct {
		name           string
		batches        bool
		wantAlone, one int
	}{
		{"a batching reasoner: one call", true, 0, 1},
		{"a reasoner that does not batch: one call each", false, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &batching{}
			build := func(motor.Bundle) (ora.Reasoner, error) {
				if tt.batches {
					return fake, nil
				}
				return struct{ ora.Reasoner }{fake}, nil // hides ReasonBatch
			}
			reg := motor.NewRegistry(acttest.DB(t), base(), nil, func(o *motor.Options) { o.CacheTTL = time.Minute })
			ds, err := motor.NewReasoner(reg, build).ReasonBatch(context.Background(), ins)
			if err != nil {
				t.Fatal(err)
			}
			if fake.alone != tt.wantAlone || fake.batches != tt.one {
				t.Errorf("alone %d, batches %d; want %d and %d", fake.alone, fake.batches, tt.wantAlone, tt.one)
			}
			for i, d := range ds {
				if d.SignalID != ins[i].Signal.ID || d.MotorVersion != base().Version {
					t.Errorf("decision %d: signal %q motor %q, want %q under %q", i, d.SignalID, d.MotorVersion, ins[i].Signal.ID, base().Version)
				}
			}
		})
	}
}
