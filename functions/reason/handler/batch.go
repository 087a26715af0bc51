package handler

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Batching on AWS. A wave's Reason task joins the open batch of its
// signal's batch key (or opens one, as its leader) and answers the state
// machine with a wait (Output.BatchWait) instead of a decision; the state
// machine waits that long and calls the task again with the ticket
// (Input.Batch). Once the window closed the leader claims the batch, reasons
// once over every member's packet (BatchReasoner.ReasonBatch), records each
// member's decision in its own wave (naming the batch) and finishes the
// batch; each follower's next call finds its decision recorded and returns
// it. Nothing strands a follower: a batch whose leader never claimed it is
// claimed by the first follower past LeaderGrace, a batch whose claim lapsed
// (Lease) or whose reasoning failed lets each member reason alone (the
// claimant too), and a member still waiting GiveUp after the window reasons
// alone.

// Batches is the ledger's store of reason batches; *dynamo.Ledger is one.
type Batches interface {
	// JoinBatch adds signalID to the open batch of key, opening one (led by
	// signalID, ending window from now) when none takes members. Errors:
	// EINVALID, ECONFLICT (the batch was claimed first: reason alone),
	// ETRANSIENT.
	JoinBatch(ctx context.Context, key, signalID string, window time.Duration, max int) (ora.Batch, error)
	// ClaimBatch makes signalID the batch's claimant for lease and returns
	// its members in the order they joined. Errors: ECONFLICT (claimed by
	// another, or finished), ETRANSIENT.
	ClaimBatch(ctx context.Context, batchID, signalID string, lease time.Duration) ([]string, error)
	// BatchState reads the batch's claim. Errors: ETRANSIENT.
	BatchState(ctx context.Context, batchID string) (ora.BatchState, error)
	// FinishBatch marks the batch finished by its claimant; failed, when
	// not empty, says why its reasoning failed. Errors: ECONFLICT,
	// ETRANSIENT.
	FinishBatch(ctx context.Context, batchID, signalID, failed string) error
}

// BatchReasoner decides about several signals in one call; the i-th
// decision answers the i-th input. *motor.Reasoner and *reason.Reasoner are
// ones.
type BatchReasoner interface {
	ReasonBatch(ctx context.Context, ins []ora.ReasonerInput) ([]ora.ReasonerDecision, error)
}

// Batching turns batching on and tunes it.
type Batching struct {
	// Store holds the batches; nil turns batching off.
	Store Batches
	// Window is how long a batch stays open after its first signal; zero
	// turns batching off.
	Window time.Duration
	// MaxSize closes a batch early when it is full. Default 10.
	MaxSize int
	// Key is the batch key of a signal (reason.BatchConfig.BatchKey); ""
	// reasons the signal alone. Nil turns batching off.
	Key func(ora.NormalizedSignal) string
	// Lease is how long a claimant may take before the members reason
	// alone. Default DefaultBatchLease.
	Lease time.Duration
	// LeaderGrace is how long after the window followers leave the claim to
	// the leader. Default DefaultLeaderGrace.
	LeaderGrace time.Duration
	// Poll is how long a follower waits between looks at a claimed batch.
	// Default DefaultBatchPoll.
	Poll time.Duration
	// GiveUp is how long after the window a member waits at most before it
	// reasons alone. Default DefaultBatchGiveUp.
	GiveUp time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// The batching defaults keep a wave inside Express's five minutes: the
// window (at most MaxBatchWindow), then at most GiveUp of waiting, then at
// most one reason function's run (its task times out at 85 s).
const (
	DefaultBatchLease  = 90 * time.Second
	DefaultLeaderGrace = 5 * time.Second
	DefaultBatchPoll   = 2 * time.Second
	DefaultBatchGiveUp = 150 * time.Second
	MaxBatchWindow     = 10 * time.Second
)

// BatchTicket is a wave's place in a batch: returned with a wait
// (Output.BatchWait) and handed back on the next call (Input.Batch).
type BatchTicket struct {
	ID       string    `json:"batch_id"`
	Leader   bool      `json:"leader,omitempty"`
	ClosesAt time.Time `json:"closes_at"`
	// Seconds is how long the state machine waits before the next call.
	Seconds int `json:"seconds"`
}

func (b Batching) on() bool { return b.Store != nil && b.Window > 0 && b.Key != nil }

func (b Batching) withDefaults() Batching {
	if b.MaxSize <= 0 {
		b.MaxSize = 10
	}
	if b.Window > MaxBatchWindow {
		b.Window = MaxBatchWindow
	}
	if b.Lease <= 0 {
		b.Lease = DefaultBatchLease
	}
	if b.LeaderGrace <= 0 {
		b.LeaderGrace = DefaultLeaderGrace
	}
	if b.Poll <= 0 {
		b.Poll = DefaultBatchPoll
	}
	if b.GiveUp <= 0 {
		b.GiveUp = DefaultBatchGiveUp
	}
	if b.Now == nil {
		b.Now = time.Now
	}
	return b
}

// wait is the task's answer while the batch is not decided.
func wait(t BatchTicket, d time.Duration) Output {
	t.Seconds = max(1, int(math.Ceil(d.Seconds())))
	return Output{BatchWait: &t}
}

// batched runs the signal's part in its batch. done is false when the
// signal must be reasoned alone.
func (h Handler) batched(ctx context.Context, in Input, sig ora.NormalizedSignal, br BatchReasoner) (Output, bool, error) {
	b := h.Batching.withDefaults()
	t := in.Batch
	if t == nil {
		key := b.Key(sig)
		if key == "" {
			return Output{}, false, nil
		}
		joined, err := b.Store.JoinBatch(ctx, key, in.SignalID, b.Window, b.MaxSize)
		if ora.ErrorCode(err) == ora.ECONFLICT {
			return Output{}, false, nil // claimed before this signal was in it
		}
		if err != nil {
			return Output{}, false, taskerr.From(fmt.Errorf("reason %s: %w", in.SignalID, err))
		}
		t = &BatchTicket{ID: joined.ID, Leader: joined.Leader == in.SignalID, ClosesAt: joined.ClosesAt}
	}
	now := b.Now()
	if now.Before(t.ClosesAt) {
		return wait(*t, t.ClosesAt.Sub(now)), true, nil
	}
	if now.After(t.ClosesAt.Add(b.GiveUp)) {
		return Output{}, false, nil
	}
	st, err := b.Store.BatchState(ctx, t.ID)
	if err != nil {
		return Output{}, false, taskerr.From(fmt.Errorf("reason %s: %w", in.SignalID, err))
	}
	switch {
	case st.Finished:
		// Decided without this signal's decision (it was recorded by
		// nobody), or failed: reason alone.
		return Output{}, false, nil
	case st.Claimant == "" && (t.Leader || !now.Before(t.ClosesAt.Add(b.LeaderGrace))),
		st.Claimant == in.SignalID:
		return h.claim(ctx, in, *t, b, br)
	case st.Claimant != "" && now.After(st.LeaseUntil):
		return Output{}, false, nil // the claimant lapsed
	}
	return wait(*t, b.Poll), true, nil
}

// claim claims the batch and reasons for all its members.
func (h Handler) claim(ctx context.Context, in Input, t BatchTicket, b Batching, br BatchReasoner) (Output, bool, error) {
	members, err := b.Store.ClaimBatch(ctx, t.ID, in.SignalID, b.Lease)
	if ora.ErrorCode(err) == ora.ECONFLICT {
		return wait(t, b.Poll), true, nil // another member claimed it first
	}
	if err != nil {
		return Output{}, false, taskerr.From(fmt.Errorf("reason %s: batch %s: %w", in.SignalID, t.ID, err))
	}
	mine, err := h.reasonBatch(ctx, t.ID, in.SignalID, members, br)
	failed := ""
	if err != nil {
		failed = ora.ErrorMessage(err)
	}
	if ferr := b.Store.FinishBatch(ctx, t.ID, in.SignalID, failed); ferr != nil {
		return Output{}, false, taskerr.From(fmt.Errorf("reason %s: batch %s: %w", in.SignalID, t.ID, ferr))
	}
	if err != nil { // the batch failed: every member, this one too, reasons alone
		return Output{}, false, nil
	}
	if mine == nil { // not among the members read: reason alone
		return Output{}, false, nil
	}
	out, err := h.output(ctx, *mine)
	return out, true, err
}

// reasonBatch decides about every member without a decision in one call,
// records each decision in its own wave naming the batch, and returns the
// entry of me's (nil when it is not a member).
func (h Handler) reasonBatch(ctx context.Context, batchID, me string, members []string, br BatchReasoner) (*ora.Entry, error) {
	var ins []ora.ReasonerInput
	stored := map[string]ora.Entry{}
	for _, id := range members {
		entries, err := ora.EntriesOfKinds(ctx, h.Ledger, id, ora.KindSignalReceived, ora.KindOrientationPacket, ora.KindReasonerDecision)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", id, err)
		}
		if e, ok := decisionIn(entries); ok {
			stored[id] = e
			continue
		}
		ri, err := orient.InputOf(entries)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", id, err)
		}
		ins = append(ins, ri)
	}
	if len(ins) > 0 {
		ds, err := br.ReasonBatch(ctx, ins)
		if err != nil {
			return nil, err
		}
		if len(ds) != len(ins) {
			return nil, ora.Errorf(ora.EINTERNAL, "%d decisions for %d signals", len(ds), len(ins))
		}
		for i, d := range ds {
			if d.SignalID != ins[i].Signal.ID {
				return nil, ora.Errorf(ora.EINTERNAL, "decision %d is about signal %q, not %q", i, d.SignalID, ins[i].Signal.ID)
			}
			if d.Model != nil { // the batch that decided it, in the ledger's terms
				m := *d.Model
				m.BatchID, m.BatchSize = batchID, len(ins)
				d.Model = &m
			}
			e, err := h.record(ctx, d)
			if err != nil {
				return nil, err
			}
			stored[d.SignalID] = e
		}
	}
	if e, ok := stored[me]; ok {
		return &e, nil
	}
	return nil, nil
}

func decisionIn(entries []ora.Entry) (ora.Entry, bool) {
	for _, e := range entries {
		if e.Kind == ora.KindReasonerDecision {
			return e, true
		}
	}
	return ora.Entry{}, false
}

// EnvBatchWindowMs is the environment variable that turns batching on in
// the reason function: the window in milliseconds (ora:batchWindowMs).
const EnvBatchWindowMs = "ORA_BATCH_WINDOW_MS"

// BatchWindowFromEnv reads EnvBatchWindowMs: 0 (off) when unset. Errors:
// EINVALID when it is not a whole number of milliseconds between 0 and
// MaxBatchWindow.
func BatchWindowFromEnv(getenv func(string) string) (time.Duration, error) {
	v := getenv(EnvBatchWindowMs)
	if v == "" {
		return 0, nil
	}
	ms, err := strconv.Atoi(v)
	if err != nil || ms < 0 || time.Duration(ms)*time.Millisecond > MaxBatchWindow {
		return 0, ora.Invalid(EnvBatchWindowMs, "%q is not a number of milliseconds between 0 and %d", v, MaxBatchWindow.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, nil
}
