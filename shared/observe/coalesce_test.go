package observe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
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
// failed to start once the window has closed and its members are attached,
// writing nothing: a member whose observer died after joining holds the
// wave (and the sweep's position) until SweepMargin after the leader's wait
// would have ended; the wave then starts without it, and its retried
// delivery leaves itself out and starts its own wave.
func TestCoalescingOutbox(t *testing.T) {
	c := &clock{t: now}
	store := coalescingStores()["sqlite"](t, c.Now)
	waves := &observetest.Waves{}
	dies := false
	obs, err := observe.New(store, waves, sources, func(o *observe.Options) {
		o.Now = c.Now
		o.Coalescer = store
		o.Coalesce = observe.CoalesceConfig{Window: observe.DefaultCoalesceWindow}
		// The leader's observer dies while it waits out the window.
		o.Sleep = func(context.Context, time.Duration) error {
			return ora.Errorf(ora.ETRANSIENT, "the function timed out")
		}
		// A member's observer dies between joining and attaching.
		o.Joined = func(context.Context, string, string) error {
			if dies {
				return ora.Errorf(ora.ETRANSIENT, "the function timed out")
			}
			return nil
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
	dies = true
	if _, err := send(3); ora.ErrorCode(err) != ora.ETRANSIENT {
		t.Fatalf("dying member's delivery: %v, want the transient failure of its observer", err)
	}
	dies = false
	stream := fmt.Sprintf(`{"Records":[{"eventName":"INSERT","eventSourceARN":"arn:aws:dynamodb:us-east-1:123456789012:table/ora-ledger/stream/2026-11-26T00:00:00.000",`+
		`"dynamodb":{"Keys":{"PK":{"S":"%s%s"},"SK":{"S":"%s"}},"SequenceNumber":"111"}}]}`, observe.SignalKeyPrefix, attached.SignalID, observe.SignalReceivedSortKey)
	var retried string // the dead member's signal id
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
		{"a sweep after the window, a member still attaching", observe.DefaultCoalesceWindow, func() error {
			sw, err := obs.StartMissing(ctx, now.Add(-time.Hour), now.Add(time.Hour))
			if err == nil && (!slices.Equal(sw.Waiting, []string{leader}) || len(sw.Failed) > 0) {
				return fmt.Errorf("sweep %+v, want %s waiting", sw, leader)
			}
			return err
		}, nil},
		{"a sweep after the wait and the margin", observe.DefaultAttachWait + observe.SweepMargin, func() error {
			_, err := obs.StartMissing(ctx, now.Add(-time.Hour), now.Add(time.Hour))
			if err != nil {
				return err
			}
			if held := (burst{store: store}).waveSignals(t, leader); !slices.Equal(slices.Sorted(slices.Values(held)), slices.Sorted(slices.Values([]string{leader, attached.SignalID}))) {
				return fmt.Errorf("wave %s holds %v, want the leader and %s", leader, held, attached.SignalID)
			}
			return nil
		}, []string{leader}},
		{"the dead member's retried delivery", 0, func() error {
			r, err := send(3)
			if err == nil && (r.Duplicate || r.WaveID != r.SignalID) {
				return fmt.Errorf("receipt %+v, want a wave of its own", r)
			}
			retried = r.SignalID
			return err
		}, []string{leader, "retried"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.Add(tt.advance)
			if err := tt.run(); err != nil {
				t.Fatal(err)
			}
			if i := slices.Index(tt.want, "retried"); i >= 0 {
				tt.want[i] = retried
				slices.Sort(tt.want) // Started is sorted
			}
			if got := waves.Started(); !slices.Equal(got, tt.want) {
				t.Errorf("waves started = %v, want %v", got, tt.want)
			}
		})
	}
}

// Both stores keep the Coalescer contract: the first call claims, a call in
// the window joins it and names the leader and the window's end, Seal closes
// a window to joiners (the next call claims anew, even before the end) and
// names its members, a member's retried call finds the window it joined,
// sealed or not, a call after the window claims anew, concurrent calls agree
// on one leader whose members are all the others, and bad arguments are
// EINVALID.
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
				seal       bool // Seal(entity, id), want members
				leader     string
				until      time.Time
				members    []string
			}{
				{name: "first claims", entity: "e1", id: "sig_a", leader: "sig_a", until: now.Add(window)},
				{name: "in the window joins", advance: window - 2*time.Millisecond, entity: "e1", id: "sig_b", leader: "sig_a", until: now.Add(window)},
				{name: "another entity claims its own", entity: "e2", id: "sig_c", leader: "sig_c", until: now.Add(2*window - 2*time.Millisecond)},
				{name: "a leader's retried call is the leader", entity: "e1", id: "sig_a", leader: "sig_a", until: now.Add(window)},
				{name: "seal names the members", entity: "e1", id: "sig_a", seal: true, members: []string{"sig_b"}},
				{name: "a sealed window is claimed anew before its end", advance: time.Millisecond, entity: "e1", id: "sig_d", leader: "sig_d", until: now.Add(2*window - time.Millisecond)},
				{name: "a member's retried call finds its sealed window", entity: "e1", id: "sig_b", leader: "sig_a", until: now.Add(window)},
				{name: "the new window is joined", entity: "e1", id: "sig_e", leader: "sig_d", until: now.Add(2*window - time.Millisecond)},
				{name: "sealing a window taken over keeps its members", entity: "e1", id: "sig_a", seal: true, members: []string{"sig_b"}},
				{name: "a window without members", entity: "e2", id: "sig_c", seal: true},
				{name: "after the window claims anew", advance: window, entity: "e1", id: "sig_f", leader: "sig_f", until: now.Add(3*window - time.Millisecond)},
				{name: "the ended window's members stay its own", entity: "e1", id: "sig_d", seal: true, members: []string{"sig_e"}},
			}
			for _, s := range steps {
				c.Add(s.advance)
				if s.seal {
					members, err := store.Seal(ctx, s.entity, s.id)
					if err != nil || !slices.Equal(members, s.members) {
						t.Errorf("%s: Seal = %v, %v; want %v", s.name, members, err, s.members)
					}
					continue
				}
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
			var others []string
			for i, l := range leaders {
				if errs[i] != nil || l != leaders[0] {
					t.Fatalf("concurrent call %d: %s, %v; want the one leader %s", i, l, errs[i], leaders[0])
				}
				if id := fmt.Sprintf("sig_%02d", i); id != l {
					others = append(others, id)
				}
			}
			if members, err := store.Members(ctx, "burst", leaders[0]); err != nil || !slices.Equal(members, others) {
				t.Errorf("Members of the burst = %v, %v; want the %d others %v", members, err, len(others), others)
			}
			// Members writes nothing: the window still takes joins.
			if l, _, err := store.Coalesce(ctx, "burst", "sig_zz", window); err != nil || l != leaders[0] {
				t.Errorf("a call after Members = %s, %v; want a join of %s", l, err, leaders[0])
			}
			if members, err := store.Seal(ctx, "burst", leaders[0]); err != nil || !slices.Equal(members, append(others, "sig_zz")) {
				t.Errorf("Seal of the burst = %v, %v; want the %d others and sig_zz", members, err, len(others))
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
			for _, args := range [][2]string{{"", "sig_x"}, {"e3", ""}} {
				if _, err := store.Seal(ctx, args[0], args[1]); ora.ErrorCode(err) != ora.EINVALID {
					t.Errorf("Seal(%q, %q): %v, want EINVALID", args[0], args[1], err)
				}
				if _, err := store.Members(ctx, args[0], args[1]); ora.ErrorCode(err) != ora.EINVALID {
					t.Errorf("Members(%q, %q): %v, want EINVALID", args[0], args[1], err)
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

// heldWaves is a wave starter that keeps, for each wave, the signals its
// ledger held when it started: the most its orientation packet can see (a
// packet compiled at once sees no more).
type heldWaves struct {
	observetest.Waves
	store coalescingStore

	mu   sync.Mutex
	held map[string][]string
}

func (w *heldWaves) StartWave(ctx context.Context, signalID string, input []byte) error {
	es, err := w.store.Entries(ctx, signalID)
	if err != nil {
		return err
	}
	sigs, err := observe.Coalesced(es)
	if err != nil {
		return err
	}
	w.mu.Lock()
	if w.held == nil {
		w.held = map[string][]string{}
	}
	if _, ok := w.held[signalID]; !ok {
		for _, s := range sigs {
			w.held[signalID] = append(w.held[signalID], s.ID)
		}
	}
	w.mu.Unlock()
	return w.Waves.StartWave(ctx, signalID, input)
}

// failingStore fails the appends fail refuses (an observer that dies there).
type failingStore struct {
	coalescingStore
	fail func(e ora.Entry) error
}

func (f failingStore) Append(ctx context.Context, e ora.Entry) (ora.Entry, error) {
	if err := f.fail(e); err != nil {
		return ora.Entry{}, err
	}
	return f.coalescingStore.Append(ctx, e)
}

// TestCoalescingPolicy plays each row of the coalescing policy (the table in
// coalesce.go) on both stores: a leader waits out its window while a second
// signal of the same issue joins it, and that follower is held at the seam
// between joining and writing its attach entry (Options.Joined), as a slow
// or dying observer would be. Whatever the row, every accepted signal is
// among the signals its wave held when it started (what its orientation
// packet sees), and in no other wave.
func TestCoalescingPolicy(t *testing.T) {
	type play struct {
		clock                          *clock
		polled, leaderDone, followDone chan struct{}
		pollOnce                       sync.Once
	}
	errDied := ora.Errorf(ora.ETRANSIENT, "the observer died")
	tests := []struct {
		name string
		// joined runs in the follower's Joined hook.
		joined func(p *play) error
		// wait is the leader's WaitAttach, while the follower's attach
		// entry is missing.
		wait func(p *play) error
		// diesRecording: the follower's signal-received append fails (its
		// observer died after attaching).
		diesRecording bool
		// retried: the follower's delivery is sent again after both answered.
		retried bool
		// ownWave: the follower ends in a wave of its own, else the leader's.
		ownWave bool
	}{
		{
			name: "attaches while the leader waits: in the leader's wave",
			joined: func(p *play) error {
				select { // the old observer never waited: do not hang on it
				case <-p.polled:
				case <-p.leaderDone:
				}
				return nil
			},
			wait: func(p *play) error {
				p.pollOnce.Do(func() { close(p.polled) })
				<-p.followDone
				return nil
			},
		},
		{
			name:    "attaches after the leader's wait ended: a wave of its own",
			joined:  func(p *play) error { <-p.leaderDone; return nil },
			wait:    func(p *play) error { p.clock.Add(observe.DefaultAttachWait); return nil },
			ownWave: true,
		},
		{
			name:    "dies after joining: left out, its retried delivery starts its own wave",
			joined:  func(p *play) error { return errDied },
			wait:    func(p *play) error { p.clock.Add(observe.DefaultAttachWait); return nil },
			retried: true,
			ownWave: true,
		},
		{
			name:          "dies after attaching: its retried delivery is in the leader's wave",
			joined:        func(p *play) error { return nil },
			wait:          func(p *play) error { <-p.followDone; return nil },
			diesRecording: true,
			retried:       true,
		},
	}
	for name, newStore := range coalescingStores() {
		t.Run(name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ctx := context.Background()
					p := &play{clock: &clock{t: now}, polled: make(chan struct{}), leaderDone: make(chan struct{}), followDone: make(chan struct{})}
					store := newStore(t, p.clock.Now)
					waves := &heldWaves{store: store}
					sleeping, release := make(chan struct{}), make(chan struct{})
					joined := make(chan struct{}, 2)
					observer := func(ledger coalescingStore, opts func(o *observe.Options)) *observe.Observer {
						obs, err := observe.New(ledger, waves, sources, func(o *observe.Options) {
							o.Now = p.clock.Now
							o.Coalescer = store
							o.Coalesce = observe.CoalesceConfig{Window: observe.DefaultCoalesceWindow}
							opts(o)
						})
						if err != nil {
							t.Fatal(err)
						}
						return obs
					}
					deliver := func(obs *observe.Observer, i int) (observe.Receipt, error) {
						body := issueDelivery("octo-org/ora-agent", 42, i)
						h := signed(t, "github", body)
						h.Set("X-GitHub-Event", "issues")
						h.Set("X-GitHub-Delivery", fmt.Sprintf("72d3162e-cc78-11e3-81ab-4c9367dc%04d", i))
						return obs.Webhook(ctx, "github", h, []byte(body))
					}
					leaderObs := observer(store, func(o *observe.Options) {
						o.Sleep = func(_ context.Context, d time.Duration) error {
							close(sleeping)
							<-release
							p.clock.Add(d)
							return nil
						}
						o.WaitAttach = func(context.Context, time.Duration) error { return tt.wait(p) }
					})
					follower := store
					if tt.diesRecording {
						follower = failingStore{store, func(e ora.Entry) error {
							if e.Kind == ora.KindSignalReceived {
								return errDied
							}
							return nil
						}}
					}
					followObs := observer(follower, func(o *observe.Options) {
						o.Joined = func(context.Context, string, string) error {
							joined <- struct{}{}
							return tt.joined(p)
						}
					})
					var leader, follow observe.Receipt
					var leaderErr, followErr error
					go func() { defer close(p.leaderDone); leader, leaderErr = deliver(leaderObs, 1) }()
					<-sleeping
					go func() { defer close(p.followDone); follow, followErr = deliver(followObs, 2) }()
					<-joined
					close(release)
					<-p.leaderDone
					<-p.followDone
					if leaderErr != nil {
						t.Fatalf("leader: %v", leaderErr)
					}
					if tt.retried {
						if !errors.Is(followErr, errDied) {
							t.Fatalf("follower's first delivery: %v, want its observer's death", followErr)
						}
						retry := observer(store, func(*observe.Options) {})
						if follow, followErr = deliver(retry, 2); followErr != nil {
							t.Fatalf("follower's retried delivery: %v", followErr)
						}
					} else if followErr != nil {
						t.Fatalf("follower: %v", followErr)
					}
					want := leader.SignalID
					if tt.ownWave {
						want = follow.SignalID
					}
					if follow.Duplicate || follow.WaveID != want {
						t.Errorf("follower's receipt %+v, want a new signal in wave %s", follow, want)
					}
					// Each accepted signal is held by the wave it names, and only there.
					waves.mu.Lock()
					defer waves.mu.Unlock()
					for _, r := range []observe.Receipt{leader, follow} {
						in := []string{}
						for w, ids := range waves.held {
							if slices.Contains(ids, r.SignalID) {
								in = append(in, w)
							}
						}
						if !slices.Equal(in, []string{r.WaveID}) {
							t.Errorf("signal %s (answered as in wave %s) was in the waves %v when they started; held: %v", r.SignalID, r.WaveID, in, waves.held)
						}
					}
					// What a packet compiled now reads is what each wave held
					// at its start: no attached signal came later, and a
					// left-out entry gives no fact.
					for w, ids := range waves.held {
						es, err := store.Entries(ctx, w)
						if err != nil {
							t.Fatal(err)
						}
						facts, err := orient.FactsOf(es)
						if err != nil {
							t.Fatal(err)
						}
						var got []string
						for _, f := range facts {
							got = append(got, strings.TrimPrefix(f.ID, observe.CoalescedQualifier("")))
						}
						want := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == w })
						if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
							t.Errorf("wave %s: its packet's facts are the signals %v, want %v", w, got, want)
						}
					}
				})
			}
		})
	}
}
