package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
)

// record captures n schedule firings whose wave start "crashes", leaving n
// signals without a wave in db.
func record(t *testing.T, db *sqlite.DB, n int) {
	t.Helper()
	crash := &observetest.Waves{Fail: func(string) error { return errors.New("killed") }}
	obs, err := observe.New(db, crash, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		raw := fmt.Sprintf(`{"job":"nightly","expression":"rate(1 hour)","scheduled_time":"2026-11-23T0%d:00:00Z","execution_id":"x-%d"}`, i, i)
		if _, err := obs.Schedule(context.Background(), []byte(raw)); ora.ErrorCode(err) != ora.EINTERNAL {
			t.Fatalf("the crashed capture: %v, want the start's failure", err)
		}
	}
}

func TestSweepStartsWavelessSignalsAndPublishesTheCount(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ora.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	record(t, db, 3)
	waves := &observetest.Waves{}
	obs, err := observe.New(db, waves, nil)
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	h := Handler{Sweeper: obs, Metrics: &metrics, Threshold: time.Nanosecond, Now: func() time.Time { return time.Now().Add(time.Second) }}
	event, err := os.ReadFile(filepath.Join("..", "..", "events", "schedule", "eventbridge-scheduled-event.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), event)
	if err != nil {
		t.Fatal(err)
	}
	var sw observe.Sweep
	_ = json.Unmarshal(out, &sw)
	if sw.Checked != 3 || len(sw.Started) != 3 || len(waves.Started()) != 3 {
		t.Errorf("sweep %+v, waves %v; want the 3 waveless signals started", sw, waves.Started())
	}
	var line map[string]any
	if err := json.Unmarshal(metrics.Bytes(), &line); err != nil || line["WavelessSignals"] != float64(3) || line["WavelessSignalsFailed"] != float64(0) {
		t.Errorf("EMF line %s (%v), want WavelessSignals 3", metrics.String(), err)
	}
	// The next sweep finds none.
	metrics.Reset()
	if _, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), event); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(metrics.Bytes(), &line); err != nil || line["WavelessSignals"] != float64(0) {
		t.Errorf("second sweep's EMF line %s, want WavelessSignals 0", metrics.String())
	}
}

func TestSweepThatCannotStartAWaveFails(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ora.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	record(t, db, 1)
	throttled := &observetest.Waves{Fail: func(string) error { return ora.Transient(errors.New("throttled"), "start") }}
	obs, err := observe.New(db, throttled, nil)
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	h := Handler{Sweeper: obs, Metrics: &metrics, Threshold: time.Nanosecond, Now: func() time.Time { return time.Now().Add(time.Second) }}
	_, err = lambda.NewHandler(h.Handle).Invoke(context.Background(), []byte(`{}`))
	if err == nil {
		t.Fatal("a sweep that left a wave unstarted succeeded")
	}
	var line map[string]any
	if json.Unmarshal(metrics.Bytes(), &line) != nil || line["WavelessSignalsFailed"] != float64(1) {
		t.Errorf("EMF line %s, want WavelessSignalsFailed 1", metrics.String())
	}
}
