package observe

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Coalescing merges a burst of signals about one entity (an issue, a Slack
// thread, an object) into one wave. The first signal of an entity claims a
// window (Coalescer: a conditional write with an expiry, so exactly one
// observer wins it, across processes and Lambdas); it becomes the window's
// leader and its wave starts when the window closes. A later signal in the
// window is recorded as usual (its own signal-received entry, its dedup
// unchanged) with meta coalesced_into naming the leader, and attaches to the
// leader's wave: an observed-fact entry under the leader, qualifier
// CoalescedQualifier(its id), written once per signal, whose body is an
// ora.Fact holding the whole signal. The leader's wave reads them with
// Coalesced, and its orientation packet sees them as facts of the ledger
// family. An attached signal starts no wave of its own: the outbox (sweep
// and stream) skips it.
//
// The leader's observer waits out the rest of the window (at most the window,
// 500 ms by default) before it starts the wave: on AWS that is well inside an
// observer Lambda's budget and needs no second execution state (a Wait state
// would start the execution early and hold every wave's input open); locally
// it delays the first delivery's answer by at most the window.

// DefaultCoalesceWindow is the coalescing window when coalescing is on and
// no window is given.
const DefaultCoalesceWindow = 500 * time.Millisecond

// Meta keys of a coalesced signal's signal-received entry.
const (
	// MetaCoalescedInto names the leader whose wave holds this signal.
	MetaCoalescedInto = "coalesced_into"
	// MetaCoalesceEntity is the entity key the signal was coalesced on.
	MetaCoalesceEntity = "coalesce_entity"
	// MetaCoalesceUntil (a leader's) is the end of its window, RFC 3339:
	// its wave starts then, not before.
	MetaCoalesceUntil = "coalesce_until"
)

// CoalesceOff, as a source's entry in CoalesceConfig.Sources, turns
// coalescing off for that source.
const CoalesceOff = "off"

// Coalescer claims coalescing windows: *sqlite.DB and *dynamo.Ledger.
type Coalescer interface {
	// Coalesce claims the window of entity for signalID when none is open
	// (none was claimed, or the last one ended) and returns the open
	// window's leader (signalID when this call claimed it) and its end.
	// Exactly one of concurrent callers claims a window. Errors: EINVALID,
	// ETRANSIENT.
	Coalesce(ctx context.Context, entity, signalID string, window time.Duration) (leader string, until time.Time, err error)
}

// CoalesceConfig turns coalescing on and tunes it (`coalesce:` in ora dev's
// configuration; ORA_COALESCE_WINDOW_MS and ORA_COALESCE_SOURCES on AWS).
type CoalesceConfig struct {
	// Window is how long an entity's window stays open after its first
	// signal; zero is off.
	Window time.Duration
	// Sources maps a source name to its entity key: CoalesceOff, or a
	// dotted path into the signal's payload ("order.id"). A source not
	// listed keys on its provider's entity (EntityKey); a generic source
	// (hmac, none) is coalesced only with a path.
	Sources map[string]string
}

// EntityKey returns the entity a signal is about, by source: GitHub the
// repository and the issue or pull request number (else the ref); Slack the
// channel and thread; Stripe the event's object id; S3 and the folder the
// bucket and key; a schedule its job; a table change the item's keys (a
// commitment its id). path, when set, is a dotted path into the payload and
// wins. Empty: the signal is not coalesced.
func EntityKey(sig ora.NormalizedSignal, path string) string {
	var p map[string]any
	_ = json.Unmarshal(sig.Payload, &p)
	name := sig.Source.Name
	join := func(parts ...string) string {
		for _, s := range parts {
			if s == "" {
				return ""
			}
		}
		return name + "\x00" + strings.Join(parts, "\x00")
	}
	if path != "" {
		return join(scalar(dig(p, strings.Split(path, ".")...)))
	}
	switch sig.Source.Type {
	case ora.SourceWebhook:
		switch sig.Source.Provider {
		case TypeGitHub:
			repo := scalar(dig(p, "repository", "full_name"))
			for _, at := range [][]string{{"issue", "number"}, {"pull_request", "number"}, {"number"}} {
				if n := scalar(dig(p, at...)); n != "" {
					return join(repo, "#"+n)
				}
			}
			if ref := scalar(dig(p, "ref")); ref != "" {
				return join(repo, ref)
			}
		case TypeSlack:
			ch := scalar(dig(p, "event", "channel"))
			thread := scalar(dig(p, "event", "thread_ts"))
			if thread == "" {
				thread = scalar(dig(p, "event", "ts"))
			}
			return join(ch, thread)
		case TypeStripe:
			return join(scalar(dig(p, "data", "object", "id")))
		}
	case ora.SourceObject:
		return join(sig.Source.Bucket, sig.Source.Path)
	case ora.SourceSchedule:
		return join(sig.Source.JobName)
	case ora.SourceTable:
		if id := scalar(dig(p, "commitment", "id")); id != "" {
			return join(sig.Source.Table, id)
		}
		if keys, ok := p["keys"]; ok && keys != nil {
			b, _ := json.Marshal(keys) // map keys sorted: one key per item
			return join(sig.Source.Table, string(b))
		}
	}
	return ""
}

func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

// CoalescedQualifier is the qualifier of the observed-fact entry that
// attaches signalID to its leader's wave.
func CoalescedQualifier(signalID string) string { return "coalesced:" + signalID }

// Coalesced returns the signals a wave holds, in the order they were
// captured: its own (the leader's) and every signal attached to it. A wave
// without attachments holds its one signal. Errors: ENOTFOUND (no
// signal-received entry), EINVALID (a malformed entry).
func Coalesced(entries []ora.Entry) ([]ora.NormalizedSignal, error) {
	var out []ora.NormalizedSignal
	found := false
	for _, e := range entries {
		switch {
		case e.Kind == ora.KindSignalReceived:
			var s ora.NormalizedSignal
			if err := json.Unmarshal(e.Body, &s); err != nil {
				return nil, ora.Invalid("signal", "stored signal %s is malformed: %v", e.SignalID, err)
			}
			out, found = append(out, s), true
		case e.Kind == ora.KindObservedFact && strings.HasPrefix(e.Qualifier, CoalescedQualifier("")):
			var f ora.Fact
			var s ora.NormalizedSignal
			if err := json.Unmarshal(e.Body, &f); err != nil {
				return nil, ora.Invalid("fact", "coalesced entry %q of %s is malformed: %v", e.Qualifier, e.SignalID, err)
			}
			if err := json.Unmarshal(f.Normalized, &s); err != nil {
				return nil, ora.Invalid("fact", "coalesced signal %q of %s is malformed: %v", e.Qualifier, e.SignalID, err)
			}
			out = append(out, s)
		}
	}
	if !found {
		return nil, ora.Errorf(ora.ENOTFOUND, "no signal-received entry")
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].NormalizedAt.Equal(out[j].NormalizedAt) {
			return out[i].NormalizedAt.Before(out[j].NormalizedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// window is the coalescing decision of one signal being captured.
type window struct {
	entity, leader string
	until          time.Time
}

// coalesce claims or joins sig's entity window; nil when the signal is not
// coalesced (coalescing off, for the source or altogether, or no entity).
func (o *Observer) coalesce(ctx context.Context, sig ora.NormalizedSignal) (*window, error) {
	c := o.opts.Coalesce
	if o.opts.Coalescer == nil || c.Window <= 0 {
		return nil, nil
	}
	path := c.Sources[sig.Source.Name]
	if path == CoalesceOff {
		return nil, nil
	}
	entity := EntityKey(sig, path)
	if entity == "" {
		return nil, nil
	}
	leader, until, err := o.opts.Coalescer.Coalesce(ctx, entity, sig.ID, c.Window)
	if err != nil {
		return nil, err
	}
	return &window{entity: entity, leader: leader, until: until}, nil
}

// attach writes the entry that puts sig in its leader's wave; a second write
// (a redelivery) finds it there.
func (o *Observer) attach(ctx context.Context, w *window, sig ora.NormalizedSignal) error {
	kept := sig
	kept.Raw = nil // the signal's own entry keeps the raw delivery
	normalized, err := json.Marshal(kept)
	if err != nil {
		return ora.Invalid("signal", "cannot encode: %v", err)
	}
	f := ora.Fact{
		ID:         CoalescedQualifier(sig.ID),
		WaveID:     w.leader,
		SourceType: "ledger",
		SourceRef:  sig.ID,
		Provenance: map[string]string{"relation": "coalesced", "signal_id": sig.ID, "entity": w.entity},
		Normalized: normalized,
		Utility:    1,
		// A token is about four bytes of JSON.
		EstimatedTokens: len(normalized)/4 + 1,
		CreatedAt:       sig.NormalizedAt,
	}
	e, err := ora.NewEntry(w.leader, ora.KindObservedFact, CoalescedQualifier(sig.ID), f)
	if err != nil {
		return err
	}
	e.CreatedAt = sig.NormalizedAt
	e.Meta = map[string]string{"coalesced_signal": sig.ID, MetaCoalesceEntity: w.entity}
	if _, err := o.ledger.Append(ctx, e); err != nil {
		if _, ok := ora.Existing[ora.Entry](err); !ok {
			return err
		}
	}
	return nil
}

// startRecorded starts the wave of a recorded signal-received entry and
// returns the wave's name: nothing for a signal attached to another's wave
// (that wave's name); a leader's after its window closes (wait: sleep until
// then; else the wave is left to the leader's observer and the next sweep).
func (o *Observer) startRecorded(ctx context.Context, e ora.Entry, wait bool) (string, bool, error) {
	if into := e.Meta[MetaCoalescedInto]; into != "" {
		return into, false, nil
	}
	if v := e.Meta[MetaCoalesceUntil]; v != "" {
		until, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return "", false, ora.Invalid("meta."+MetaCoalesceUntil, "%q of %s is not a time: %v", v, e.SignalID, err)
		}
		if d := until.Sub(o.opts.Now()); d > 0 {
			if !wait {
				return e.SignalID, false, nil
			}
			if later, ok := ctx.Value(deferKey{}).(*deferredStarts); ok {
				later.starts = append(later.starts, deferredStart{signalID: e.SignalID, until: until, record: later.record})
				return e.SignalID, false, nil
			}
			if err := o.opts.Sleep(ctx, d); err != nil {
				return "", false, fmt.Errorf("wait for the coalescing window: %w", err)
			}
		}
	}
	if err := o.startWave(ctx, e.SignalID); err != nil {
		return "", false, err
	}
	return e.SignalID, true, nil
}

// deferredStarts are the waves of the leaders a batch (of S3 or Streams
// records) found, started when their windows close, after the batch's last
// record: a batch of many records waits at most one window, not one each.
type deferredStarts struct {
	record int // the record being captured
	starts []deferredStart
}

type deferredStart struct {
	signalID string
	until    time.Time
	record   int
}

type deferKey struct{}

// startDeferred starts the deferred waves in the order their windows close
// and returns each failure by record index.
func (o *Observer) startDeferred(ctx context.Context, later *deferredStarts) map[int]error {
	sort.SliceStable(later.starts, func(i, j int) bool { return later.starts[i].until.Before(later.starts[j].until) })
	errs := map[int]error{}
	for _, s := range later.starts {
		if d := s.until.Sub(o.opts.Now()); d > 0 {
			if err := o.opts.Sleep(ctx, d); err != nil {
				errs[s.record] = fmt.Errorf("start wave %s: wait for the coalescing window: %w", s.signalID, err)
				continue
			}
		}
		if err := o.startWave(ctx, s.signalID); err != nil {
			errs[s.record] = fmt.Errorf("start wave %s: %w", s.signalID, err)
		}
	}
	return errs
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ora.Errorf(ora.ETRANSIENT, "%v", ctx.Err())
	}
}
