package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/reason"
)

// set moves the clock the waves and the ledger share to t.
func (c *clock) set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// batchReasoner is a hand-written fake model reasoner: it decides notify
// about every signal, alone or in a batch, and counts its calls.
type batchReasoner struct {
	mu      sync.Mutex
	alone   int
	batches [][]string
	fail    error
}

func (f *batchReasoner) decide(in ora.ReasonerInput) ora.ReasonerDecision {
	return ora.ReasonerDecision{
		ID: "dec-" + in.Signal.ID, SignalID: in.Signal.ID, PacketDigest: in.Packet.Digest, ActionType: "notify",
		Parameters: json.RawMessage(`{"message":"seen"}`), Confidence: 0.9, Tier: 1, AuthorType: ora.AuthorAuditor,
		Reasoning: "fake model", Timestamp: at, Scope: ora.Scope{AllowedOperations: []string{"notify"}},
		Model: &ora.ModelTrace{ModelID: "fake", Status: ora.ReasoningOK, ChainLength: 1, CrystallizationReason: "HighConfidence"},
	}
}

func (f *batchReasoner) Reason(_ context.Context, in ora.ReasonerInput) (ora.ReasonerDecision, error) {
	f.mu.Lock()
	f.alone++
	f.mu.Unlock()
	return f.decide(in), nil
}

func (f *batchReasoner) ReasonBatch(_ context.Context, ins []ora.ReasonerInput) ([]ora.ReasonerDecision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	var ids []string
	out := make([]ora.ReasonerDecision, len(ins))
	for i, in := range ins {
		ids = append(ids, in.Signal.ID)
		out[i] = f.decide(in)
		out[i].Model.BatchID, out[i].Model.BatchSize = "model-side-id", len(ins)
	}
	f.batches = append(f.batches, ids)
	return out, nil
}

// scheduled stores a schedule signal of job and compiles its packet.
func scheduled(t *testing.T, l ora.Ledger, id, job string) {
	t.Helper()
	ctx := context.Background()
	payload := fmt.Sprintf(`{"job":%q,"run":%q}`, job, id)
	sig := ora.NormalizedSignal{
		ID: id, Source: ora.Source{Type: ora.SourceSchedule, Name: "nightly", JobName: job},
		Timestamp: at, NormalizedAt: at, Payload: json.RawMessage(payload), DedupKey: "d-" + id, RawDigest: ora.Digest([]byte(payload)),
	}
	e, err := ora.NewEntry(id, ora.KindSignalReceived, "", sig)
	if err != nil {
		t.Fatal(err)
	}
	e.CreatedAt = at
	if _, err := l.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := orient.NewCompiler(l).Compile(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// batchWaves is a set of waves reaching Reason together on one DynamoDB
// Local ledger, each with its own handler (as separate reason functions).
type batchWaves struct {
	t       *testing.T
	ledger  *dynamo.Ledger
	clock   *clock
	model   *batchReasoner
	ids     []string
	tickets map[string]*BatchTicket
	outs    map[string]Output
	max     int
}

func newBatchWaves(t *testing.T, n, max int, job func(i int) string) *batchWaves {
	t.Helper()
	c := &clock{now: at}
	client := dynamotest.Client(t)
	name := dynamotest.TableName("batch")
	if err := dynamo.CreateLedgerTable(context.Background(), client, name); err != nil {
		t.Fatal(err)
	}
	w := &batchWaves{t: t, ledger: dynamo.New(client, name, func(o *dynamo.Options) { o.Now = c.Now }), clock: c,
		model: &batchReasoner{}, tickets: map[string]*BatchTicket{}, outs: map[string]Output{}, max: max}
	for i := range n {
		id := fmt.Sprintf("sig-%02d", i)
		scheduled(t, w.ledger, id, job(i))
		w.ids = append(w.ids, id)
	}
	return w
}

func (w *batchWaves) handler() Handler {
	return Handler{Ledger: w.ledger, Reasoner: w.model, Batching: Batching{
		Store: w.ledger, Window: time.Second, MaxSize: w.max, Key: reason.DefaultBatchConfig().BatchKey, Now: w.clock.Now,
	}}
}

// step calls Reason for every listed wave at once (each undecided wave with
// the ticket its last call returned) and keeps each answer.
func (w *batchWaves) step(ids ...string) {
	w.t.Helper()
	calls := map[string]*BatchTicket{}
	for _, id := range ids {
		if o, ok := w.outs[id]; ok && o.BatchWait == nil {
			continue // decided
		}
		calls[id] = w.tickets[id]
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, ticket := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := w.handler().Handle(context.Background(), Input{SignalID: id, Batch: ticket})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				w.t.Errorf("%s: %v", id, err)
				return
			}
			w.outs[id] = out
			if out.BatchWait != nil {
				w.tickets[id] = out.BatchWait
			}
		}()
	}
	wg.Wait()
}

func (w *batchWaves) decided() int {
	n := 0
	for _, o := range w.outs {
		if o.BatchWait == nil && o.DecisionID != "" {
			n++
		}
	}
	return n
}

// stored returns the recorded decision of id.
func (w *batchWaves) stored(id string) ora.ReasonerDecision {
	w.t.Helper()
	entries, err := w.ledger.Entries(context.Background(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, e := range entries {
		if e.Kind == ora.KindReasonerDecision {
			var d ora.ReasonerDecision
			if err := json.Unmarshal(e.Body, &d); err != nil {
				w.t.Fatal(err)
			}
			return d
		}
	}
	w.t.Fatalf("%s has no decision", id)
	return ora.ReasonerDecision{}
}

// Waves of one job reaching Reason together on DynamoDB Local: one batch,
// one leader, one model call over every signal, and each wave's decision
// names the batch; a full batch opens the next; other jobs never mix.
func TestBatchOnDynamoDBLocal(t *testing.T) {
	tests := []struct {
		name    string
		n, max  int
		job     func(i int) string
		batches []int // the size of each model call
	}{
		{"one batch of six", 6, 10, func(int) string { return "sync" }, []int{6}},
		{"seven waves, three at most", 7, 3, func(int) string { return "sync" }, []int{3, 3, 1}},
		{"two jobs never mix", 6, 10, func(i int) string { return fmt.Sprint("job-", i%2) }, []int{3, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newBatchWaves(t, tt.n, tt.max, tt.job)
			w.step(w.ids...)
			leaders := map[string]int{}
			for id, tk := range w.tickets {
				if tk.Seconds != 1 {
					t.Errorf("%s waits %ds, want the 1s window", id, tk.Seconds)
				}
				if tk.Leader {
					leaders[tk.ID]++
				}
			}
			if len(leaders) != len(tt.batches) {
				t.Fatalf("batches with a leader = %v, want %d", leaders, len(tt.batches))
			}
			// The window closes: each batch's leader reasons for it, and
			// its followers find their decisions on their next look.
			w.clock.set(at.Add(time.Second))
			w.step(w.ids...)
			w.clock.set(at.Add(time.Second + DefaultBatchPoll))
			w.step(w.ids...)
			if got := w.decided(); got != tt.n {
				t.Fatalf("decided waves = %d, want %d", got, tt.n)
			}
			var sizes []int
			for _, b := range w.model.batches {
				sizes = append(sizes, len(b))
			}
			if fmt.Sprint(sortedInts(sizes)) != fmt.Sprint(sortedInts(tt.batches)) || w.model.alone != 0 {
				t.Errorf("model calls: batches of %v and %d alone, want batches of %v", sizes, w.model.alone, tt.batches)
			}
			for _, id := range w.ids {
				d := w.stored(id)
				if d.Model.BatchID != w.tickets[id].ID || w.outs[id].BatchID != d.Model.BatchID {
					t.Errorf("%s: decision names batch %q (task output %q), want its ticket's %q", id, d.Model.BatchID, w.outs[id].BatchID, w.tickets[id].ID)
				}
			}
		})
	}
}

func sortedInts(s []int) []int {
	out := append([]int{}, s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// No follower is stranded: a leader that never comes back is replaced by a
// follower after the grace, a failed batch and a lapsed claim let each
// member reason alone, and so does a member that waited too long.
func TestBatchLeaderFailures(t *testing.T) {
	closes := at.Add(time.Second)
	t.Run("leader never claims", func(t *testing.T) {
		w := newBatchWaves(t, 4, 10, func(int) string { return "sync" })
		w.step(w.ids...)
		var leader string
		var followers []string
		for id, tk := range w.tickets {
			if tk.Leader {
				leader = id
			} else {
				followers = append(followers, id)
			}
		}
		w.clock.set(closes)
		w.step(followers...)
		if w.decided() != 0 || len(w.model.batches) != 0 {
			t.Fatalf("followers decided before the leader's grace ran out: %d decided, %v", w.decided(), w.model.batches)
		}
		w.clock.set(closes.Add(DefaultLeaderGrace))
		w.step(followers...)
		w.clock.set(closes.Add(DefaultLeaderGrace + DefaultBatchPoll))
		w.step(w.ids...)
		if w.decided() != 4 || len(w.model.batches) != 1 || len(w.model.batches[0]) != 4 {
			t.Errorf("decided %d, model calls %v; want the leader's batch of 4 reasoned once by a follower", w.decided(), w.model.batches)
		}
		if d := w.stored(leader); d.Model.BatchID != w.tickets[leader].ID {
			t.Errorf("leader's decision names batch %q, want %q", d.Model.BatchID, w.tickets[leader].ID)
		}
	})
	t.Run("the batch's reasoning fails", func(t *testing.T) {
		w := newBatchWaves(t, 3, 10, func(int) string { return "sync" })
		w.model.fail = ora.Errorf(ora.ETRANSIENT, "throttled")
		w.step(w.ids...)
		w.clock.set(closes)
		w.step(w.ids...) // the leader's batch fails: it reasons alone
		w.clock.set(closes.Add(DefaultBatchPoll))
		w.step(w.ids...)
		if w.decided() != 3 || w.model.alone != 3 || len(w.model.batches) != 0 {
			t.Errorf("decided %d, alone %d, batches %v; want every member to reason alone", w.decided(), w.model.alone, w.model.batches)
		}
	})
	t.Run("the claim lapses", func(t *testing.T) {
		w := newBatchWaves(t, 3, 10, func(int) string { return "sync" })
		w.step(w.ids...)
		var leader string
		for id, tk := range w.tickets {
			if tk.Leader {
				leader = id
			}
		}
		// The leader claims and dies before it records anything.
		w.clock.set(closes)
		if _, err := w.ledger.ClaimBatch(context.Background(), w.tickets[leader].ID, leader, DefaultBatchLease); err != nil {
			t.Fatal(err)
		}
		var followers []string
		for _, id := range w.ids {
			if id != leader {
				followers = append(followers, id)
			}
		}
		w.step(followers...)
		if w.decided() != 0 {
			t.Fatalf("decided %d while the claim holds, want 0", w.decided())
		}
		w.clock.set(closes.Add(DefaultBatchLease + time.Second))
		w.step(followers...)
		if w.decided() != 2 || w.model.alone != 2 || len(w.model.batches) != 0 {
			t.Errorf("decided %d, alone %d, batches %v; want each follower alone", w.decided(), w.model.alone, w.model.batches)
		}
	})
	t.Run("a member waits too long", func(t *testing.T) {
		w := newBatchWaves(t, 2, 10, func(int) string { return "sync" })
		w.step(w.ids...)
		w.clock.set(closes.Add(DefaultBatchGiveUp + time.Second))
		var follower string
		for id, tk := range w.tickets {
			if !tk.Leader {
				follower = id
			}
		}
		w.step(follower)
		if w.decided() != 1 || w.model.alone != 1 {
			t.Errorf("decided %d, alone %d; want the follower alone", w.decided(), w.model.alone)
		}
	})
}
