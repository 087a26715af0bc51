package observe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
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

// issueDelivery is a GitHub "issues" delivery (action labeled) for issue
// number of repo; i tells the label apart, so each is a distinct signal.
func issueDelivery(repo string, number, i int) string {
	return fmt.Sprintf(`{"action":"labeled","issue":{"number":%d,"title":"Wave stuck after deploy","state":"open","body":null,"user":{"login":"octocat"}},`+
		`"label":{"id":%d,"name":"triage-%d","color":"d73a4a"},"repository":{"id":1296269,"full_name":%q},"sender":{"login":"octocat"}}`,
		number, 208045946+i, i, repo)
}

func TestEntityKey(t *testing.T) {
	sig := func(src ora.Source, payload string) ora.NormalizedSignal {
		return ora.NormalizedSignal{Source: src, Payload: json.RawMessage(payload)}
	}
	gh := ora.Source{Type: ora.SourceWebhook, Name: "github", Provider: observe.TypeGitHub}
	tests := []struct {
		name string
		sig  ora.NormalizedSignal
		path string
		want string
	}{
		{"github issue", sig(gh, issueDelivery("octo-org/ora-agent", 42, 1)), "", "github\x00octo-org/ora-agent\x00#42"},
		{"github pull request", sig(gh, `{"action":"synchronize","number":7,"pull_request":{"number":7},"repository":{"full_name":"o/r"}}`), "", "github\x00o/r\x00#7"},
		{"github push", sig(gh, pushBody), "", "github\x00o/r\x00refs/heads/main"},
		{"github without repository", sig(gh, `{"zen":"Keep it simple."}`), "", ""},
		{"slack thread", sig(ora.Source{Type: ora.SourceWebhook, Name: "slack", Provider: observe.TypeSlack},
			`{"type":"event_callback","event":{"type":"message","channel":"C0LAN2Q65","ts":"1355517524.000005","thread_ts":"1355517523.000005"}}`), "",
			"slack\x00C0LAN2Q65\x001355517523.000005"},
		{"slack top-level message", sig(ora.Source{Type: ora.SourceWebhook, Name: "slack", Provider: observe.TypeSlack},
			`{"type":"event_callback","event":{"type":"message","channel":"C0LAN2Q65","ts":"1355517524.000005"}}`), "",
			"slack\x00C0LAN2Q65\x001355517524.000005"},
		{"stripe object", sig(ora.Source{Type: ora.SourceWebhook, Name: "stripe", Provider: observe.TypeStripe},
			`{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_3MtwBwLkdIwHu7ix28a3tqPa","object":"payment_intent"}}}`), "",
			"stripe\x00pi_3MtwBwLkdIwHu7ix28a3tqPa"},
		{"hmac without a path", sig(ora.Source{Type: ora.SourceWebhook, Name: "ci", Provider: observe.TypeHMAC}, `{"order":{"id":"o-1"}}`), "", ""},
		{"hmac with a path", sig(ora.Source{Type: ora.SourceWebhook, Name: "ci", Provider: observe.TypeHMAC}, `{"order":{"id":"o-1"}}`), "order.id", "ci\x00o-1"},
		{"hmac path missing", sig(ora.Source{Type: ora.SourceWebhook, Name: "ci", Provider: observe.TypeHMAC}, `{"order":{}}`), "order.id", ""},
		{"s3 object", sig(ora.Source{Type: ora.SourceObject, Name: observe.NameS3, Bucket: "inbox", Path: "a/b.csv"}, `{}`), "", "s3\x00inbox\x00a/b.csv"},
		{"schedule job", sig(ora.Source{Type: ora.SourceSchedule, Name: observe.NameSchedule, JobName: "nightly"}, `{}`), "", "schedule\x00nightly"},
		{"commitment", sig(ora.Source{Type: ora.SourceTable, Name: observe.NameLedger, Table: "commitments"}, `{"event":"insert","commitment":{"id":"cmt_9"}}`), "",
			"ledger\x00commitments\x00cmt_9"},
		{"table item", sig(ora.Source{Type: ora.SourceTable, Name: "orders", Table: "orders"}, `{"event":"modify","keys":{"sk":"B","pk":"A"}}`), "",
			`orders` + "\x00orders\x00" + `{"pk":"A","sk":"B"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := observe.EntityKey(tt.sig, tt.path); got != tt.want {
				t.Errorf("EntityKey = %q, want %q", got, tt.want)
			}
		})
	}
}

// coalescingStore is a ledger that claims coalescing windows, on the clock.
type coalescingStore interface {
	ora.Ledger
	observe.Coalescer
}

func coalescingStores() map[string]func(t *testing.T, now func() time.Time) coalescingStore {
	return map[string]func(t *testing.T, now func() time.Time) coalescingStore{
		"sqlite": func(t *testing.T, now func() time.Time) coalescingStore {
			db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ora.db"), func(o *sqlite.Options) { o.Now = now })
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return db
		},
		"dynamodb": func(t *testing.T, now func() time.Time) coalescingStore {
			c := dynamotest.Client(t)
			name := dynamotest.TableName("coalesce")
			if err := dynamo.CreateLedgerTable(context.Background(), c, name); err != nil {
				t.Fatal(err)
			}
			return dynamo.New(c, name, func(o *dynamo.Options) { o.Now = now })
		},
	}
}

// burst delivers bodies at once, each through its own observer over store
// (as separate observer Lambdas would), and holds every coalescing window
// open until all the deliveries that do not wait for one have answered. It
// returns the receipts and how many deliveries waited for a window.
type burst struct {
	store coalescingStore
	waves *observetest.Waves
	clock *clock
}

func (b burst) deliver(t *testing.T, bodies []string) ([]observe.Receipt, int) {
	t.Helper()
	release := make(chan struct{})
	waiting := make(chan struct{}, len(bodies))
	hold := func(ctx context.Context, d time.Duration) error {
		waiting <- struct{}{}
		<-release
		b.clock.Add(d)
		return nil
	}
	receipts := make([]observe.Receipt, len(bodies))
	errs := make([]error, len(bodies))
	done := make(chan struct{}, len(bodies))
	for i, body := range bodies {
		obs, err := observe.New(b.store, b.waves, sources, func(o *observe.Options) {
			o.Now = b.clock.Now
			o.Coalescer = b.store
			o.Coalesce = observe.CoalesceConfig{Window: observe.DefaultCoalesceWindow}
			o.Sleep = hold
		})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer func() { done <- struct{}{} }()
			h := signed(t, "github", body)
			h.Set("X-GitHub-Event", "issues")
			h.Set("X-GitHub-Delivery", fmt.Sprintf("72d3162e-cc78-11e3-81ab-4c9367dc%04d", i))
			receipts[i], errs[i] = obs.Webhook(context.Background(), "github", h, []byte(body))
		}()
	}
	answered, held := 0, 0
	for answered+held < len(bodies) {
		select {
		case <-done:
			answered++
		case <-waiting:
			held++
		}
	}
	close(release)
	for answered < len(bodies) {
		<-done
		answered++
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	return receipts, held
}

// waveSignals returns the ids of the signals the wave holds, in order.
func (b burst) waveSignals(t *testing.T, wave string) []string {
	t.Helper()
	entries, err := b.store.Entries(context.Background(), wave)
	if err != nil {
		t.Fatalf("entries of %s: %v", wave, err)
	}
	sigs, err := observe.Coalesced(entries)
	if err != nil {
		t.Fatalf("coalesced of %s: %v", wave, err)
	}
	var ids []string
	for i, s := range sigs {
		if i > 0 && s.NormalizedAt.Before(sigs[i-1].NormalizedAt) {
			t.Errorf("wave %s: signal %d (%s) captured before the one ahead of it", wave, i, s.ID)
		}
		ids = append(ids, s.ID)
	}
	return ids
}

func TestCoalescing(t *testing.T) {
	for name, newStore := range coalescingStores() {
		t.Run(name, func(t *testing.T) {
			setup := func(t *testing.T) burst {
				c := &clock{t: now}
				return burst{store: newStore(t, c.Now), waves: &observetest.Waves{}, clock: c}
			}
			t.Run("20 deliveries for one issue from concurrent observers are one wave", func(t *testing.T) {
				b := setup(t)
				var bodies []string
				for i := range 20 {
					bodies = append(bodies, issueDelivery("octo-org/ora-agent", 42, i))
				}
				receipts, held := b.deliver(t, bodies)
				if held != 1 {
					t.Errorf("%d deliveries waited for a window, want 1 (the leader)", held)
				}
				started := b.waves.Started()
				if len(started) != 1 {
					t.Fatalf("waves started = %v, want one", started)
				}
				var ids []string
				for i, r := range receipts {
					if r.Duplicate || r.WaveID != started[0] {
						t.Errorf("delivery %d: receipt %+v, want a new signal in wave %s", i, r, started[0])
					}
					if _, err := ora.EntriesOfKinds(context.Background(), b.store, r.SignalID, ora.KindSignalReceived); err != nil {
						t.Errorf("delivery %d: signal %s not recorded: %v", i, r.SignalID, err)
					}
					ids = append(ids, r.SignalID)
				}
				got := b.waveSignals(t, started[0])
				slices.Sort(ids)
				sorted := slices.Sorted(slices.Values(got))
				if !slices.Equal(sorted, ids) || len(slices.Compact(ids)) != 20 {
					t.Errorf("wave %s holds %d signals %v, want the 20 delivered %v", started[0], len(got), got, ids)
				}
			})
			t.Run("two issues make two waves", func(t *testing.T) {
				b := setup(t)
				bodies := []string{issueDelivery("octo-org/ora-agent", 42, 1), issueDelivery("octo-org/ora-agent", 43, 1),
					issueDelivery("octo-org/ora-agent", 42, 2), issueDelivery("octo-org/ora-agent", 43, 2)}
				_, held := b.deliver(t, bodies)
				started := b.waves.Started()
				if held != 2 || len(started) != 2 {
					t.Fatalf("%d leaders, waves %v; want two of each", held, started)
				}
				for _, w := range started {
					if n := len(b.waveSignals(t, w)); n != 2 {
						t.Errorf("wave %s holds %d signals, want 2", w, n)
					}
				}
			})
			t.Run("a signal after the window makes a new wave", func(t *testing.T) {
				b := setup(t)
				first, _ := b.deliver(t, []string{issueDelivery("octo-org/ora-agent", 42, 1), issueDelivery("octo-org/ora-agent", 42, 2)})
				b.clock.Add(time.Millisecond) // the leader waited out the window
				later, held := b.deliver(t, []string{issueDelivery("octo-org/ora-agent", 42, 3)})
				if held != 1 || later[0].WaveID == first[0].WaveID {
					t.Fatalf("later signal: receipt %+v, %d leaders; want a new wave", later[0], held)
				}
				if got := b.waves.Started(); len(got) != 2 {
					t.Errorf("waves started = %v, want two", got)
				}
				if n := len(b.waveSignals(t, first[0].WaveID)); n != 2 {
					t.Errorf("first wave holds %d signals, want 2", n)
				}
			})
			t.Run("a redelivery is a duplicate in the same wave", func(t *testing.T) {
				b := setup(t)
				body := issueDelivery("octo-org/ora-agent", 42, 1)
				first, _ := b.deliver(t, []string{body, issueDelivery("octo-org/ora-agent", 42, 2)})
				again, held := b.deliver(t, []string{body})
				if held != 0 || !again[0].Duplicate || again[0].SignalID != first[0].SignalID || again[0].WaveID != first[0].WaveID {
					t.Errorf("redelivery: %+v (%d held), want a duplicate of %+v", again[0], held, first[0])
				}
				if got := b.waves.Started(); len(got) != 1 {
					t.Errorf("waves started = %v, want one", got)
				}
			})
		})
	}
}

// The outbox starts no wave for an attached signal, leaves a leader whose
// window is open to its observer, and starts a leader's wave its observer
// failed to start once the window has closed.
func TestCoalescingOutbox(t *testing.T) {
	c := &clock{t: now}
	store := coalescingStores()["sqlite"](t, c.Now)
	waves := &observetest.Waves{}
	obs, err := observe.New(store, waves, sources, func(o *observe.Options) {
		o.Now = c.Now
		o.Coalescer = store
		o.Coalesce = observe.CoalesceConfig{Window: observe.DefaultCoalesceWindow}
		// The leader's observer dies while it waits out the window.
		o.Sleep = func(context.Context, time.Duration) error {
			return ora.Errorf(ora.ETRANSIENT, "the function timed out")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	send := func(i int) (observe.Receipt, error) {
		body := issueDelivery("octo-org/ora-agent", 42, i)
		h := signed(t, "github", body)
		h.Set("X-GitHub-Event", "issues")
		return obs.Webhook(ctx, "github", h, []byte(body))
	}
	if _, err := send(1); ora.ErrorCode(err) != ora.ETRANSIENT {
		t.Fatalf("leader delivery: %v, want the transient failure of its wait", err)
	}
	attached, err := send(2)
	if err != nil {
		t.Fatal(err)
	}
	leader := attached.WaveID
	if leader == attached.SignalID {
		t.Fatalf("second delivery %+v is not attached", attached)
	}
	stream := fmt.Sprintf(`{"Records":[{"eventName":"INSERT","eventSourceARN":"arn:aws:dynamodb:us-east-1:123456789012:table/ora-ledger/stream/2026-11-26T00:00:00.000",`+
		`"dynamodb":{"Keys":{"PK":{"S":"%s%s"},"SK":{"S":"%s"}},"SequenceNumber":"111"}}]}`, observe.SignalKeyPrefix, attached.SignalID, observe.SignalReceivedSortKey)
	tests := []struct {
		name    string
		advance time.Duration
		run     func() error
		want    []string
	}{
		{"the stream record of an attached signal", 0, func() error {
			out, err := obs.TableChanges(ctx, []byte(stream))
			if err == nil && (out[0].Err != nil || out[0].Receipt.WaveID != leader) {
				return fmt.Errorf("outcome %+v, want wave %s", out[0], leader)
			}
			return err
		}, nil},
		{"a sweep while the window is open", 0, func() error {
			_, err := obs.StartMissing(ctx, now.Add(-time.Hour), now.Add(time.Hour))
			return err
		}, nil},
		{"a sweep after the window", observe.DefaultCoalesceWindow, func() error {
			_, err := obs.StartMissing(ctx, now.Add(-time.Hour), now.Add(time.Hour))
			return err
		}, []string{leader}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.Add(tt.advance)
			if err := tt.run(); err != nil {
				t.Fatal(err)
			}
			if got := waves.Started(); !slices.Equal(got, tt.want) {
				t.Errorf("waves started = %v, want %v", got, tt.want)
			}
		})
	}
}

// Both stores keep the Coalescer contract: the first call claims, a call in
// the window names the leader and the window's end, a call after it claims
// anew, concurrent calls agree on one leader, and bad arguments are EINVALID.
func TestCoalescerContract(t *testing.T) {
	const window = observe.DefaultCoalesceWindow
	for name, newStore := range coalescingStores() {
		t.Run(name, func(t *testing.T) {
			c := &clock{t: now}
			store := newStore(t, c.Now)
			ctx := context.Background()
			steps := []struct {
				name       string
				advance    time.Duration
				entity, id string
				leader     string
				until      time.Time
			}{
				{"first claims", 0, "e1", "sig_a", "sig_a", now.Add(window)},
				{"in the window joins", window - time.Millisecond, "e1", "sig_b", "sig_a", now.Add(window)},
				{"another entity claims its own", 0, "e2", "sig_c", "sig_c", now.Add(2*window - time.Millisecond)},
				{"after the window claims anew", time.Millisecond, "e1", "sig_d", "sig_d", now.Add(2 * window)},
			}
			for _, s := range steps {
				c.Add(s.advance)
				leader, until, err := store.Coalesce(ctx, s.entity, s.id, window)
				if err != nil || leader != s.leader || !until.Equal(s.until) {
					t.Errorf("%s: Coalesce = %s, %v, %v; want %s, %v", s.name, leader, until, err, s.leader, s.until)
				}
			}
			leaders := make([]string, 50)
			errs := make([]error, 50)
			done := make(chan struct{})
			for i := range leaders {
				go func() {
					defer func() { done <- struct{}{} }()
					leaders[i], _, errs[i] = store.Coalesce(ctx, "burst", fmt.Sprintf("sig_%02d", i), window)
				}()
			}
			for range leaders {
				<-done
			}
			for i, l := range leaders {
				if errs[i] != nil || l != leaders[0] {
					t.Fatalf("concurrent call %d: %s, %v; want the one leader %s", i, l, errs[i], leaders[0])
				}
			}
			bad := []struct {
				name, entity, id string
				window           time.Duration
				field            string
			}{
				{"no entity", "", "sig_x", window, "entity"},
				{"no signal", "e3", "", window, "signal_id"},
				{"no window", "e3", "sig_x", 0, "window"},
			}
			for _, b := range bad {
				_, _, err := store.Coalesce(ctx, b.entity, b.id, b.window)
				if ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), b.field) {
					t.Errorf("%s: %v, want EINVALID naming %s", b.name, err, b.field)
				}
			}
		})
	}
}

// A Streams batch of many changes to one item of a user's table is one
// wave, and the batch waits out its windows once, after its last record.
func TestCoalescingStreamBatch(t *testing.T) {
	const arn = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-11-26T00:00:00.000"
	c := &clock{t: now}
	store := coalescingStores()["sqlite"](t, c.Now)
	waves := &observetest.Waves{}
	sleeps := 0
	obs, err := observe.New(store, waves, sources, func(o *observe.Options) {
		o.Now = c.Now
		o.Tables = []observe.TableConfig{{Name: "orders", StreamARN: arn}}
		o.Coalescer = store
		o.Coalesce = observe.CoalesceConfig{Window: observe.DefaultCoalesceWindow}
		o.Sleep = func(_ context.Context, d time.Duration) error { sleeps++; c.Add(d); return nil }
	})
	if err != nil {
		t.Fatal(err)
	}
	var recs []string
	record := func(i int, order string) string {
		return fmt.Sprintf(`{"eventID":"e%04d","eventName":"MODIFY","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"us-east-1",`+
			`"dynamodb":{"ApproximateCreationDateTime":%d,"Keys":{"pk":{"S":"ORDER#%s"}},"NewImage":{"pk":{"S":"ORDER#%s"},"status":{"S":"step-%d"}},`+
			`"SequenceNumber":"1113000000000123456%04d","SizeBytes":64,"StreamViewType":"NEW_AND_OLD_IMAGES"},"eventSourceARN":%q}`,
			i, now.Unix(), order, order, i, i, arn)
	}
	for i := range 30 {
		recs = append(recs, record(i, "1042"))
	}
	recs = append(recs, record(30, "1043"))
	out, err := obs.TableChanges(context.Background(), []byte(`{"Records":[`+strings.Join(recs, ",")+`]}`))
	if err != nil {
		t.Fatal(err)
	}
	for i, oc := range out {
		if oc.Err != nil || oc.Skipped {
			t.Fatalf("record %d: %+v", i, oc)
		}
	}
	started := waves.Started()
	if len(started) != 2 || sleeps != 1 {
		t.Fatalf("waves %v after %d waits, want two after one", started, sleeps)
	}
	if w := out[0].Receipt.WaveID; len(burst{store: store}.waveSignals(t, w)) != 30 {
		t.Errorf("wave %s does not hold the item's 30 changes", w)
	}
}
