package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
	"github.com/ora-runtime/ora/shared/taskerr"
)

type fixture struct {
	h      Handler
	ledger *sqlite.DB
	waves  *observetest.Waves
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ora.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	waves := &observetest.Waves{}
	obs, err := observe.New(db, waves, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{h: Handler{Observer: obs}, ledger: db, waves: waves}
}

func TestReplayEvents(t *testing.T) {
	want := map[string]struct{ job, scheduled string }{
		"scheduler-nightly-review.json":    {"nightly-review", "2026-11-20T03:00:00Z"},
		"eventbridge-scheduled-event.json": {"hourly-sync", "2026-11-20T12:00:00Z"},
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "schedule", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in events/schedule: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("no expectation for events/schedule/%s: add one", name)
			}
			payload, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fx := newFixture(t)
			for i, wantDup := range []bool{false, true} { // the second is Scheduler's retry
				out, err := lambda.NewHandler(fx.h.Handle).Invoke(context.Background(), payload)
				if err != nil {
					t.Fatalf("invoke %d: %v", i, err)
				}
				var got observe.Receipt
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatal(err)
				}
				id := observe.SignalID(observe.NameSchedule, w.job+"@"+w.scheduled)
				if got.SignalID != id || got.WaveID != id || got.Duplicate != wantDup {
					t.Errorf("invoke %d: receipt %+v, want ids %s duplicate %v", i, got, id, wantDup)
				}
			}
			id := observe.SignalID(observe.NameSchedule, w.job+"@"+w.scheduled)
			entries, err := fx.ledger.Entries(context.Background(), id)
			if err != nil || len(entries) != 1 || entries[0].Kind != ora.KindSignalReceived {
				t.Fatalf("entries = %+v, %v; want one signal-received", entries, err)
			}
			var sig ora.NormalizedSignal
			_ = json.Unmarshal(entries[0].Body, &sig)
			if sig.Source.Type != ora.SourceSchedule || sig.Source.JobName != w.job || sig.Timestamp.Format("2006-01-02T15:04:05Z") != w.scheduled {
				t.Errorf("signal source %+v at %v", sig.Source, sig.Timestamp)
			}
			if got := fx.waves.Started(); len(got) != 1 || got[0] != id {
				t.Errorf("waves = %v, want [%s]", got, id)
			}
		})
	}
}

func TestFailuresAreNamedTypes(t *testing.T) {
	fx := newFixture(t)
	_, err := fx.h.Handle(context.Background(), json.RawMessage(`{"expression":"rate(1 hour)"}`))
	var invalid *taskerr.InvalidInput
	if !errors.As(err, &invalid) || fx.waves.Calls() != 0 {
		t.Errorf("no job: %T %v, %d starts; want *taskerr.InvalidInput and nothing started", err, err, fx.waves.Calls())
	}
	fx.waves.Fail = func(string) error { return ora.Transient(errors.New("throttled"), "start") }
	_, err = fx.h.Handle(context.Background(), json.RawMessage(`{"job":"j","scheduled_time":"2026-11-20T03:00:00Z"}`))
	var transient *taskerr.TransientError
	if !errors.As(err, &transient) {
		t.Errorf("wave start throttled: %T %v, want *taskerr.TransientError", err, err)
	}
}
