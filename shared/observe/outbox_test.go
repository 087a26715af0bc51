package observe_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
)

// errCrash stands for the process dying between the append and the start.
var errCrash = errors.New("crashed before StartExecution")

// onlyStarter hides WaveExists, for the sweep of a starter that cannot tell.
type onlyStarter struct{ w *observetest.Waves }

func (s onlyStarter) StartWave(ctx context.Context, id string, in []byte) error {
	return s.w.StartWave(ctx, id, in)
}

// A crash between the two writes of a capture (signal-received appended, the
// wave not started) leaves signals without a wave; the next process's sweep
// starts exactly those, with the input capture would have given them, on both
// ledger adapters.
func TestStartMissingAfterACrashBetweenAppendAndStart(t *testing.T) {
	ledgers := map[string]func(t *testing.T) ora.Ledger{
		"sqlite": func(t *testing.T) ora.Ledger {
			db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ora.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return db
		},
		"dynamodb": func(t *testing.T) ora.Ledger {
			if testing.Short() {
				t.Skip("DynamoDB Local: skipped with -short")
			}
			c := dynamotest.Client(t)
			name := dynamotest.TableName("outbox")
			if err := dynamo.CreateLedgerTable(context.Background(), c, name); err != nil {
				t.Fatal(err)
			}
			return dynamo.New(c, name)
		},
	}
	for _, name := range []string{"sqlite", "dynamodb"} {
		t.Run(name, func(t *testing.T) {
			ledger := ledgers[name](t)
			ctx := context.Background()
			// The first process: every third wave start "crashes".
			crashed := map[string]bool{}
			first := &observetest.Waves{}
			i := 0
			first.Fail = func(id string) error {
				i++
				if i%3 == 0 {
					crashed[id] = true
					return errCrash
				}
				return nil
			}
			obs1, err := observe.New(ledger, first, sources, func(o *observe.Options) { o.EscalationTimeout = time.Hour })
			if err != nil {
				t.Fatal(err)
			}
			const n = 12
			for k := range n {
				body := fmt.Sprintf(`{"ref":"refs/heads/main","after":"%040d","repository":{"full_name":"o/r"}}`, k)
				h := signed(t, "github", body)
				h.Set("X-GitHub-Delivery", fmt.Sprintf("delivery-%d", k))
				if _, err := obs1.Webhook(ctx, "github", h, []byte(body)); err != nil && !errors.Is(err, errCrash) {
					t.Fatalf("delivery %d: %v", k, err)
				}
			}
			if len(crashed) != n/3 {
				t.Fatalf("crashed starts = %d, want %d", len(crashed), n/3)
			}

			// The next process knows the waves the first one started (the
			// engine's store survives) and sweeps the window.
			for _, finder := range []bool{true, false} {
				t.Run(fmt.Sprintf("finder=%v", finder), func(t *testing.T) {
					second := &observetest.Waves{}
					for _, id := range first.Started() {
						in, _ := first.Input(id)
						_ = second.StartWave(ctx, id, in)
					}
					var starter observe.WaveStarter = second
					if !finder {
						starter = onlyStarter{second}
					}
					obs2, err := observe.New(ledger, starter, sources, func(o *observe.Options) { o.EscalationTimeout = time.Hour })
					if err != nil {
						t.Fatal(err)
					}
					sw, err := obs2.StartMissing(ctx, time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
					if err != nil {
						t.Fatal(err)
					}
					if sw.Checked != n || len(sw.Failed) != 0 {
						t.Errorf("sweep %+v, want %d checked and none failed", sw, n)
					}
					if got := second.Started(); len(got) != n {
						t.Errorf("waves after the sweep = %d, want every one of the %d signals", len(got), n)
					}
					if finder {
						if len(sw.Started) != len(crashed) {
							t.Errorf("sweep started %v, want the %d crashed ones", sw.Started, len(crashed))
						}
						for _, id := range sw.Started {
							if !crashed[id] {
								t.Errorf("sweep started %s, which had a wave", id)
							}
						}
					}
					for id := range crashed {
						in, ok := second.Input(id)
						want := fmt.Sprintf(`{"signal_id":%q,"escalation_timeout_seconds":3600}`, id)
						if !ok || string(in) != want {
							t.Errorf("wave %s input %s, want %s", id, in, want)
						}
					}
					// A second sweep finds nothing left to start.
					again, err := obs2.StartMissing(ctx, time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
					if err != nil || (finder && len(again.Started) != 0) {
						t.Errorf("second sweep %+v, %v; want nothing started", again, err)
					}
				})
			}
		})
	}
}

// A start that fails during a sweep is reported and does not stop the sweep.
func TestStartMissingReportsFailures(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ora.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	waves := &observetest.Waves{Fail: func(string) error { return errCrash }}
	obs, err := observe.New(db, waves, sources)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 2 {
		body := fmt.Sprintf(`{"ref":"refs/heads/main","after":"%040d","repository":{"full_name":"o/r"}}`, k)
		h := signed(t, "github", body)
		h.Set("X-GitHub-Delivery", fmt.Sprintf("d-%d", k))
		_, _ = obs.Webhook(context.Background(), "github", h, []byte(body))
	}
	sw, err := obs.StartMissing(context.Background(), time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if sw.Checked != 2 || len(sw.Failed) != 2 || len(sw.Started) != 0 {
		t.Errorf("sweep %+v, want 2 checked, 2 failed", sw)
	}
	for id, msg := range sw.Failed {
		if !strings.Contains(msg, errCrash.Error()) {
			t.Errorf("failure of %s = %q, want the start's error", id, msg)
		}
	}
}

// A DynamoDB Streams record inserting a signal-received entry starts that
// signal's wave (the stream as outbox on AWS); other ledger entries are
// skipped as before.
func TestTableChangesStartRecordedSignals(t *testing.T) {
	rec := func(event, pk, sk, seq string) string {
		return fmt.Sprintf(`{"eventID":"e%s","eventName":%q,"eventSource":"aws:dynamodb","eventSourceARN":"arn:aws:dynamodb:eu-west-1:123456789012:table/ora-ledger/stream/2026","dynamodb":{"ApproximateCreationDateTime":1795176000,"Keys":{"PK":{"S":%q},"SK":{"S":%q}},"SequenceNumber":%q}}`,
			seq, event, pk, sk, seq)
	}
	event := `{"Records":[` + strings.Join([]string{
		rec("INSERT", observe.SignalKeyPrefix+"sig_a", observe.SignalReceivedSortKey, "1"),
		rec("INSERT", observe.SignalKeyPrefix+"sig_b", "ENTRY#reasoner-decision#d1", "2"),
		rec("MODIFY", observe.SignalKeyPrefix+"sig_c", observe.SignalReceivedSortKey, "3"),
	}, ",") + `]}`
	e := newEnv(t, func(o *observe.Options) { o.EscalationTimeout = 2 * time.Hour })
	out, err := e.obs.TableChanges(context.Background(), []byte(event))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 || out[0].Err != nil || out[0].Receipt.WaveID != "sig_a" || !out[1].Skipped || !out[2].Skipped {
		t.Fatalf("outcomes %+v", out)
	}
	if got := e.waves.Started(); len(got) != 1 || got[0] != "sig_a" {
		t.Errorf("waves %v, want just sig_a", got)
	}
	if in, _ := e.waves.Input("sig_a"); string(in) != `{"signal_id":"sig_a","escalation_timeout_seconds":7200}` {
		t.Errorf("input %s", in)
	}
	// A failed start is a batch item failure (the stream retries it).
	e.waves.Fail = func(string) error { return ora.Transient(errCrash, "start") }
	out, err = e.obs.TableChanges(context.Background(), []byte(`{"Records":[`+rec("INSERT", observe.SignalKeyPrefix+"sig_d", observe.SignalReceivedSortKey, "4")+`]}`))
	if err != nil || len(out) != 1 || ora.ErrorCode(out[0].Err) != ora.ETRANSIENT {
		t.Errorf("failed start: %+v, %v; want a transient per-record error", out, err)
	}
}

// finderCount counts a wave starter's WaveExists calls: on AWS each is a
// DescribeExecution.
type finderCount struct {
	*observetest.Waves
	asked int
}

func (f *finderCount) WaveExists(ctx context.Context, id string) (bool, error) {
	f.asked++
	return f.Waves.WaveExists(ctx, id)
}

// A sweep reads the signals since the last sweep that started every wave it
// found, not its whole lookback each time; a sweep that failed to start one
// keeps the position, so the next tries again; the position kept in the
// ledger outlives the process; a wave with a final verdict costs no finder
// call.
func TestOutboxSweeperReadsEachSignalAboutOnce(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ora.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	clock := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	failing := false
	waves := &finderCount{Waves: &observetest.Waves{Fail: func(string) error {
		if failing {
			return errCrash
		}
		return nil
	}}}
	obs, err := observe.New(db, waves, sources, func(o *observe.Options) { o.Now = now })
	if err != nil {
		t.Fatal(err)
	}
	deliver := func(k int) string {
		body := fmt.Sprintf(`{"ref":"refs/heads/main","after":"%040d","repository":{"full_name":"o/r"}}`, k)
		h := signed(t, "github", body)
		h.Set("X-GitHub-Delivery", fmt.Sprintf("d-%d", k))
		r, _ := obs.Webhook(ctx, "github", h, []byte(body))
		return r.SignalID
	}
	positions := observe.LedgerCheckpoints{Ledger: db, Now: now}
	sweeper := func() *observe.OutboxSweeper {
		return &observe.OutboxSweeper{Observer: obs, Positions: positions, Lookback: 24 * time.Hour, Threshold: 5 * time.Minute}
	}
	first := sweeper()

	// Three signals whose starts crash, ten minutes ago.
	failing = true
	for k := range 3 {
		clock = clock.Add(time.Second)
		deliver(k)
	}
	clock = clock.Add(10 * time.Minute)
	sw, err := first.Sweep(ctx, clock)
	if err != nil || sw.Checked != 3 || len(sw.Failed) != 3 {
		t.Fatalf("first sweep %+v, %v: want 3 checked and 3 failed", sw, err)
	}
	// Still failing: the position stayed, the same three are read again.
	clock = clock.Add(5 * time.Minute)
	if sw, _ = first.Sweep(ctx, clock); sw.Checked != 3 {
		t.Fatalf("sweep after a failed one checked %d, want the same 3", sw.Checked)
	}
	// The starts work now: all three start, and the position moves past them.
	failing = false
	clock = clock.Add(5 * time.Minute)
	if sw, err = first.Sweep(ctx, clock); err != nil || len(sw.Started) != 3 {
		t.Fatalf("sweep %+v, %v: want the 3 started", sw, err)
	}
	// A new process (a new sweeper over the same ledger) reads only what
	// came after: two new signals with waves, of which one has ended.
	clock = clock.Add(time.Second)
	a, b := deliver(10), deliver(11)
	verdict, err := ora.NewEntry(a, ora.KindFinalVerdict, "", map[string]string{"outcome": "completed"})
	if err != nil {
		t.Fatal(err)
	}
	verdict.CreatedAt = clock.Add(2 * time.Second)
	if _, err := db.Append(ctx, verdict); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(10 * time.Minute)
	waves.asked = 0
	second := sweeper()
	if sw, err = second.Sweep(ctx, clock); err != nil || sw.Checked != 2 || len(sw.Started) != 0 {
		t.Fatalf("the new process's sweep %+v, %v: want only the 2 new signals checked, none started", sw, err)
	}
	if waves.asked != 1 {
		t.Errorf("%d finder calls, want 1: %s has a final verdict, only %s is asked", waves.asked, a, b)
	}
	// Nothing new: nothing read.
	clock = clock.Add(5 * time.Minute)
	if sw, _ = second.Sweep(ctx, clock); sw.Checked != 0 {
		t.Errorf("an idle sweep checked %d signals, want 0", sw.Checked)
	}
}
