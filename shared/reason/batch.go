package reason

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ora-runtime/ora/shared/ora"
)

// ReasonBatch decides about several signals of one source in one observer
// chain: every stage is one model call for the whole batch, and the model
// returns one SafeOPSDecision per signal. Each signal keeps its own
// decision (its own id, packet digest and wave); their traces name the batch
// (BatchID, BatchSize) and carry the batch's usage, each with an equal share
// of its cost. A BLOCKED or FAILED batch fails every signal with the same
// *ResultError. The i-th result answers ins[i]. Errors: as Reason.
func (r *Reasoner) ReasonBatch(ctx context.Context, ins []ora.ReasonerInput) ([]ora.ReasonerDecision, error) {
	if len(ins) == 0 {
		return nil, ora.Invalid("batch", "no signal")
	}
	if len(ins) == 1 {
		d, err := r.Reason(ctx, ins[0])
		return []ora.ReasonerDecision{d}, err
	}
	ids := make([]string, len(ins))
	seen := map[string]bool{}
	for i, in := range ins {
		if err := in.Signal.Validate(); err != nil {
			return nil, fmt.Errorf("reason: batch signal %d: %w", i, err)
		}
		if seen[in.Signal.ID] {
			return nil, ora.Invalid("batch", "signal %s is in the batch twice", in.Signal.ID)
		}
		seen[in.Signal.ID] = true
		ids[i] = in.Signal.ID
	}
	opts := r.bridge.opts
	kernel, err := r.kernel(ctx, ora.OrientationPacket{})
	if err != nil {
		return nil, err
	}
	// A batch is one SafeOPSDecision chain: in diagnostic mode, or when a
	// signal's wave runs another program, each signal is reasoned alone.
	alone := !kernel.Green()
	for _, in := range ins {
		program, err := r.programFor(in)
		if err != nil {
			return nil, err
		}
		alone = alone || program != ora.ProgramSafeOPSDecision
	}
	if alone {
		out := make([]ora.ReasonerDecision, len(ins))
		for i, in := range ins {
			if out[i], err = r.Reason(ctx, in); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	now := opts.Now()
	// Each signal's permissions; a payload the input guard flags leaves the
	// batch with its own none decision.
	perms := make([]Permission, len(ins))
	screened := map[int]ora.ReasonerDecision{}
	clean := map[string]bool{}
	var rest []ora.ReasonerInput
	for i, in := range ins {
		perms[i] = r.bridge.cfg.Policy.For(in.Signal, ora.ProgramSafeOPSDecision, opts.Catalogue)
		d, flagged, err := r.screen(ctx, in, now, perms[i])
		if err != nil {
			return nil, err
		}
		if flagged {
			screened[i] = d
		} else {
			rest = append(rest, in)
			clean[in.Signal.ID] = true
		}
	}
	ctx = context.WithValue(ctx, screenedKey{}, clean)
	if len(screened) > 0 {
		out := make([]ora.ReasonerDecision, len(ins))
		var ds []ora.ReasonerDecision
		if len(rest) > 0 {
			if ds, err = r.ReasonBatch(ctx, rest); err != nil {
				return nil, err
			}
		}
		for i := range ins {
			if d, ok := screened[i]; ok {
				out[i] = d
			} else {
				out[i], ds = ds[0], ds[1:]
			}
		}
		return out, nil
	}
	sorted := append([]string{}, ids...)
	sort.Strings(sorted)
	batchID := uuid.NewSHA1(uuid.NameSpaceURL, []byte("ora:batch:"+strings.Join(sorted, ","))).String()
	env := ora.ReasoningEnvelope{
		EnvelopeID:     batchID,
		Timestamp:      now,
		ProgramID:      ora.ProgramSafeOPSDecision,
		Goal:           fmt.Sprintf("Decide what ora should do about each of %d %s signals (%s), and whether it is safe to do it.", len(ins), ins[0].Signal.Source.Type, strings.Join(ids, ", ")),
		KernelStateRef: kernel,
		OAContext:      map[string]any{"signal_ids": ids, "batch_id": batchID, "policy": perms},
		ToolsAllowed:   append([]string{}, r.bridge.cfg.ToolsAllowed...),
	}
	out, err := r.bridge.Run(ctx, env, Input{Batch: ins})
	if err != nil {
		return nil, err
	}
	if out.Result.Status != ora.ReasoningOK && out.Result.Status != ora.ReasoningDegraded {
		return nil, resultError(out)
	}
	batch, ok := out.Payload.(BatchPayload)
	if !ok {
		return nil, ora.Errorf(ora.EINTERNAL, "reason: batch payload is %T", out.Payload)
	}
	trace := out.Trace
	trace.BatchID, trace.BatchSize, trace.BatchSignals = batchID, len(ins), ids
	trace.CostUSD = out.Trace.CostUSD / float64(len(ins))
	ds := make([]ora.ReasonerDecision, len(ins))
	for i, in := range ins {
		p, ok := batch[in.Signal.ID].(SafeOPSDecisionResult)
		if !ok || p.Action == nil {
			return nil, ora.Errorf(ora.EINTERNAL, "reason: batch payload for %s is %T", in.Signal.ID, batch[in.Signal.ID])
		}
		ds[i] = route(decide(in, p, out, now, trace), p, perms[i], opts.Catalogue)
		if err := ds[i].Validate(); err != nil {
			return nil, fmt.Errorf("reason: model decision for %s: %w", in.Signal.ID, err)
		}
	}
	return ds, nil
}

// Clock is the batcher's time: the real one, or a virtual one in tests.
type Clock interface {
	// AfterFunc calls f once d has passed; stop cancels it.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// RealClock is the wall clock.
type RealClock struct{}

// AfterFunc runs f after d (time.AfterFunc).
func (RealClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// BatchConfig configures batching (seed 000): signals of one source and
// batch key arriving within Window are reasoned together in one model call.
type BatchConfig struct {
	// Window is how long the first signal of a batch waits for others; 0
	// (the default configuration's) turns batching off; 1s is the usual
	// window (DefaultBatchConfig).
	Window Duration `yaml:"window" json:"window"`
	// MaxSize closes a batch early when it is full. Default 10.
	MaxSize int `yaml:"max_size" json:"max_size"`
	// Webhooks batches webhook signals too; off by default (a webhook's
	// sender may wait for its answer).
	Webhooks bool `yaml:"webhooks,omitempty" json:"webhooks,omitempty"`
}

// DefaultBatchConfig is batching on: a 1 s window, 10 signals at most,
// webhooks apart.
func DefaultBatchConfig() BatchConfig {
	return BatchConfig{Window: Duration(time.Second), MaxSize: 10}
}

// BatchKey returns the key signals batch under: their source (kind, name,
// provider, event type, job, bucket, table, event; not an object's path);
// "" (never batched) for a webhook unless webhooks batch.
func (c BatchConfig) BatchKey(s ora.NormalizedSignal) string {
	if s.Source.Type == ora.SourceWebhook && !c.Webhooks {
		return ""
	}
	src := s.Source
	return strings.Join([]string{string(src.Type), src.Name, src.Provider, src.EventType, src.JobName, src.Bucket, src.Table, src.Event}, "|")
}

// BatchReasoner is what a Batcher batches over; *Reasoner is one.
type BatchReasoner interface {
	ora.Reasoner
	// ReasonBatch decides about each input; the i-th decision answers the
	// i-th input.
	ReasonBatch(ctx context.Context, ins []ora.ReasonerInput) ([]ora.ReasonerDecision, error)
}

var _ BatchReasoner = (*Reasoner)(nil)

// Batcher is an ora.Reasoner that holds each signal for up to the window
// and reasons the signals of one batch key that arrived meanwhile in one
// call. Every caller gets its own signal's decision; when the batch's call
// fails (or is blocked), each signal is reasoned alone.
type Batcher struct {
	r     BatchReasoner
	cfg   BatchConfig
	clock Clock
	mu    sync.Mutex
	open  map[string]*pending
}

type pending struct {
	ins     []ora.ReasonerInput
	waiters []chan batchResult
	ctx     context.Context
	stop    func() bool
}

type batchResult struct {
	d   ora.ReasonerDecision
	err error
}

var _ ora.Reasoner = (*Batcher)(nil)

// NewBatcher returns a Batcher over r. A zero Window makes it pass every
// call straight through; MaxSize defaults to 10.
func NewBatcher(r BatchReasoner, cfg BatchConfig, clock Clock) *Batcher {
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = 10
	}
	if clock == nil {
		clock = RealClock{}
	}
	return &Batcher{r: r, cfg: cfg, clock: clock, open: map[string]*pending{}}
}

// Reason joins in to the open batch of its key (opening one, and its
// window, when there is none) and waits for the batch's decision about it.
// A signal without a batch key, or with batching off, is reasoned alone at
// once. Errors: the signal's own when the batch failed and it was reasoned
// alone (see Reasoner.Reason), or ctx's.
func (b *Batcher) Reason(ctx context.Context, in ora.ReasonerInput) (ora.ReasonerDecision, error) {
	key := b.cfg.BatchKey(in.Signal)
	if key == "" || b.cfg.Window <= 0 {
		return b.r.Reason(ctx, in)
	}
	ch := make(chan batchResult, 1)
	b.mu.Lock()
	p := b.open[key]
	if p == nil {
		p = &pending{ctx: context.WithoutCancel(ctx)}
		b.open[key] = p
		p.stop = b.clock.AfterFunc(time.Duration(b.cfg.Window), func() { b.flush(key, p) })
	}
	p.ins = append(p.ins, in)
	p.waiters = append(p.waiters, ch)
	full := len(p.ins) >= b.cfg.MaxSize
	b.mu.Unlock()
	if full {
		p.stop()
		b.flush(key, p)
	}
	select {
	case res := <-ch:
		return res.d, res.err
	case <-ctx.Done():
		return ora.ReasonerDecision{}, ctx.Err()
	}
}

// Pending returns how many signals wait in the open batch of key (0 when
// none is open).
func (b *Batcher) Pending(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.open[key]; p != nil {
		return len(p.ins)
	}
	return 0
}

// flush closes p (once) and reasons its signals together.
func (b *Batcher) flush(key string, p *pending) {
	b.mu.Lock()
	if b.open[key] != p {
		b.mu.Unlock()
		return // flushed already
	}
	delete(b.open, key)
	b.mu.Unlock()
	ds, err := b.r.ReasonBatch(p.ctx, p.ins)
	for i, ch := range p.waiters {
		if err != nil {
			// A failed or blocked batch: each signal is reasoned alone, as
			// on AWS (its own result, its own error).
			go func() {
				d, err := b.r.Reason(p.ctx, p.ins[i])
				ch <- batchResult{d: d, err: err}
			}()
			continue
		}
		ch <- batchResult{d: ds[i]}
	}
}
