package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/review"
	"github.com/ora-runtime/ora/shared/sqlite"
	"github.com/ora-runtime/ora/shared/telemetry"
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
	h := Handler{Sweeper: &observe.OutboxSweeper{Observer: obs, Positions: observe.LedgerCheckpoints{Ledger: db}, Lookback: DefaultLookback, Threshold: time.Nanosecond},
		Metrics: &metrics, Now: func() time.Time { return time.Now().Add(time.Second) }}
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
	h := Handler{Sweeper: &observe.OutboxSweeper{Observer: obs, Positions: observe.LedgerCheckpoints{Ledger: db}, Lookback: DefaultLookback, Threshold: time.Nanosecond},
		Metrics: &metrics, Now: func() time.Time { return time.Now().Add(time.Second) }}
	_, err = lambda.NewHandler(h.Handle).Invoke(context.Background(), []byte(`{}`))
	if err == nil {
		t.Fatal("a sweep that left a wave unstarted succeeded")
	}
	var line map[string]any
	if json.Unmarshal(metrics.Bytes(), &line) != nil || line["WavelessSignalsFailed"] != float64(1) {
		t.Errorf("EMF line %s, want WavelessSignalsFailed 1", metrics.String())
	}
}

// Each sweep publishes the decisions waiting for a human as EMF gauges: on
// AWS nothing else emits them.
func TestSweepPublishesPendingApprovals(t *testing.T) {
	ctx := context.Background()
	db := acttest.DB(t)
	rv := review.New(db, func(o *review.Options) { o.Notifier = act.NewLogNotify(slog.New(slog.DiscardHandler)) })
	for _, id := range []string{"d1", "d2"} {
		acttest.Record(t, db, acttest.Decision(id, "s-"+id, ora.Scope{AllowedOperations: []string{act.TypeNotify}},
			ora.Action{Type: act.TypeNotify, Parameters: json.RawMessage(`{"message":"hi"}`)}))
		if _, err := rv.Escalate(ctx, "s-"+id, id, "token-"+id); err != nil {
			t.Fatal(err)
		}
	}
	// d2 got its verdict: only d1 still waits.
	if _, err := db.TransitionDecision(ctx, "d2", ora.StatusAwaitingApproval, ora.StatusRejected, "no"); err != nil {
		t.Fatal(err)
	}
	obs, err := observe.New(db, &observetest.Waves{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	h := Handler{Sweeper: &observe.OutboxSweeper{Observer: obs, Lookback: DefaultLookback, Threshold: DefaultThreshold}, Metrics: &metrics, Approvals: db, Now: func() time.Time { return time.Now().Add(90 * time.Second) }}
	if _, err := lambda.NewHandler(h.Handle).Invoke(ctx, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, l := range strings.Split(strings.TrimSpace(metrics.String()), "\n") {
		var line struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Namespace string
					Metrics   []struct{ Name string }
				}
			} `json:"_aws"`
		}
		var values map[string]any
		if json.Unmarshal([]byte(l), &line) != nil || json.Unmarshal([]byte(l), &values) != nil || len(line.AWS.CloudWatchMetrics) != 1 {
			t.Fatalf("not an EMF line: %s", l)
		}
		for _, m := range line.AWS.CloudWatchMetrics[0].Metrics {
			v, _ := values[m.Name].(float64)
			got[line.AWS.CloudWatchMetrics[0].Namespace+"/"+m.Name] = v
		}
	}
	if v, ok := got["Ora/"+telemetry.EscalationsPending]; !ok || v != 1 {
		t.Errorf("%s = %v (published: %v), want 1", telemetry.EscalationsPending, v, ok)
	}
	// d1 was escalated before the sweep's clock, which runs 90 s ahead.
	if v := got["Ora/"+telemetry.EscalationOldestAge]; v < 90 || v > 24*3600 {
		t.Errorf("%s = %v, want d1's age, at least 90 s", telemetry.EscalationOldestAge, v)
	}
	if _, ok := got["ora/WavelessSignals"]; !ok {
		t.Errorf("the sweep's own metric is missing: %s", metrics.String())
	}
}
