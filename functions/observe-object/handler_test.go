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

func invoke(t *testing.T, h Handler, payload []byte) (Result, error) {
	t.Helper()
	out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), payload)
	if err != nil {
		return Result{}, err
	}
	var res Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	return res, nil
}

func TestReplayEvents(t *testing.T) {
	const bucket = "ora-inbox-123456789012"
	want := map[string]struct{ key, event, sequencer string }{
		"s3-object-created.json": {"reports/2026-11-20/daily summary.json", "create", "0055AED6DCD90281E5"},
		"s3-object-removed.json": {"reports/2026-11-19/daily summary.json", "delete", "0055AED6DCD9028200"},
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "object", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in events/object: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("no expectation for events/object/%s: add one", name)
			}
			payload, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fx := newFixture(t)
			res, err := invoke(t, fx.h, payload)
			if err != nil {
				t.Fatal(err)
			}
			id := observe.SignalID(observe.NameS3, "s3://"+bucket+"/"+w.key+"#"+w.sequencer)
			if len(res.Signals) != 1 || res.Signals[0].SignalID != id || res.Signals[0].Duplicate || len(res.Rejected) != 0 {
				t.Fatalf("result = %+v, want one new signal %s", res, id)
			}
			entries, err := fx.ledger.Entries(context.Background(), id)
			if err != nil || len(entries) != 1 || entries[0].Kind != ora.KindSignalReceived {
				t.Fatalf("entries = %+v, %v; want one signal-received", entries, err)
			}
			var sig ora.NormalizedSignal
			_ = json.Unmarshal(entries[0].Body, &sig)
			if sig.Source.Bucket != bucket || sig.Source.Path != w.key || sig.Source.Event != w.event {
				t.Errorf("signal source = %+v", sig.Source)
			}
			again, err := invoke(t, fx.h, payload)
			if err != nil || len(again.Signals) != 1 || !again.Signals[0].Duplicate || again.Signals[0].SignalID != id {
				t.Errorf("redelivery = %+v, %v; want a duplicate of %s", again, err, id)
			}
			if got := fx.waves.Started(); len(got) != 1 || got[0] != id {
				t.Errorf("waves = %v, want [%s]", got, id)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	t.Run("malformed record is rejected, the others captured", func(t *testing.T) {
		fx := newFixture(t)
		var ev struct{ Records []json.RawMessage }
		b, _ := os.ReadFile(filepath.Join("..", "..", "events", "object", "s3-object-created.json"))
		_ = json.Unmarshal(b, &ev)
		ev.Records = append(ev.Records, json.RawMessage(`{"eventSource":"aws:s3","eventName":"ObjectRestore:Completed","s3":{"bucket":{"name":"b"},"object":{"key":"k"}}}`))
		payload, _ := json.Marshal(ev)
		res, err := invoke(t, fx.h, payload)
		if err != nil || len(res.Signals) != 1 || len(res.Rejected) != 1 || res.Rejected[0] != "b/k" {
			t.Errorf("result = %+v, %v; want one signal and b/k rejected", res, err)
		}
	})
	t.Run("a transient failure fails the invocation for a retry", func(t *testing.T) {
		fx := newFixture(t)
		fx.waves.Fail = func(string) error { return ora.Transient(errors.New("throttled"), "start") }
		_, err := fx.h.Handle(context.Background(), mustRead(t, "s3-object-created.json"))
		var transient *taskerr.TransientError
		if !errors.As(err, &transient) {
			t.Errorf("err = %T %v, want *taskerr.TransientError", err, err)
		}
	})
	t.Run("not a notification", func(t *testing.T) {
		fx := newFixture(t)
		_, err := fx.h.Handle(context.Background(), json.RawMessage(`{"hello":"world"}`))
		var invalid *taskerr.InvalidInput
		if !errors.As(err, &invalid) {
			t.Errorf("err = %T %v, want *taskerr.InvalidInput", err, err)
		}
	})
}

func mustRead(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "object", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
