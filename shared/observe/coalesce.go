package observe

import (
	"context"
	"encoding/json"
	"errors"
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
// window joins it: a conditional write that records it as a member, and
// succeeds only while the window is open and unsealed (the linearization
// point: a signal is a member of the window, or of none). It is then recorded
// as usual (its own signal-received entry, its dedup unchanged) with meta
// coalesced_into naming the leader, and attaches to the leader's wave: an
// observed-fact entry under the leader, qualifier CoalescedQualifier(its id),
// written once per signal, whose body is an ora.Fact holding the whole
// signal. The leader's wave reads them with Coalesced, and its orientation
// packet sees them as facts of the ledger family. An attached signal starts
// no wave of its own: the outbox (sweep and stream) skips it.
//
// The leader's observer waits out the rest of the window (at most the window,
// 500 ms by default), then seals it (no signal joins it any more) and waits,
// up to AttachWait after the window's end, until every member's attach entry
// is in its wave; only then does it start the wave. On AWS that is well
// inside an observer Lambda's budget and needs no second execution state (a
// Wait state would start the execution early and hold every wave's input
// open); locally it delays the first delivery's answer by at most the window
// (and, for a member slow to attach, the wait).
//
// Every accepted signal is in the packet of the wave its answer names, or
// starts a wave of its own. The ledger's conditional append decides a member
// the leader is still missing when its wait ends: the leader appends, under
// the attach entry's own key, a left-out entry (an observed-fact entry whose
// body carries no fact, so the packet reads nothing from it); whichever of
// the two entries is appended first stands.
//
//	case                                         | outcome
//	---------------------------------------------+-----------------------------------------------
//	joins, attaches before the leader's wait ends | in the leader's wave and packet (coalesced_into)
//	joins, attaches after the wait ended         | finds the left-out entry: recorded with
//	                                             | coalesce_left_out and starts its own wave at once
//	joins, its observer dies before attaching    | left out when the wait ends; its retried delivery
//	                                             | finds its window (sealed) and the left-out entry,
//	                                             | and starts its own wave
//	joins, dies after attaching, before recording| in the leader's packet; a retried delivery finds
//	                                             | its window and attach entry: coalesced_into
//	arrives after the window is sealed or ended  | claims a new window: leader of its own wave
//	a leader's observer dies before starting     | the ledger's stream (AWS) gathers and starts it
//	                                             | as its observer would; the outbox sweep, which
//	                                             | writes nothing, starts it once every member is
//	                                             | attached or SweepMargin after the wait ended
//
// A member that comes to attach after its leader's wait has ended by its own
// clock (until + AttachWait) appends the left-out entry itself, not the
// attach entry: so a wave the sweep started without a member (the sweep may
// not write the left-out entry) never gains it later, and the member, its
// observer alive or its delivery retried, starts its own wave.

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
	// MetaCoalesceLeftOut names the leader whose window a signal joined but
	// whose wave started without it (its attach entry came too late): the
	// signal has a wave of its own.
	MetaCoalesceLeftOut = "coalesce_left_out"
)

// DefaultAttachWait is how long after its window's end a leader waits for
// the attach entries of its window's members before it starts its wave
// without the missing ones.
const DefaultAttachWait = 5 * time.Second

// attachPoll is how often a waiting leader reads its wave again.
const attachPoll = 10 * time.Millisecond

// CoalesceOff, as a source's entry in CoalesceConfig.Sources, turns
// coalescing off for that source.
const CoalesceOff = "off"

// Coalescer claims coalescing windows: *sqlite.DB and *dynamo.Ledger.
type Coalescer interface {
	// Coalesce claims the window of entity for signalID when none is open
	// (none was claimed, the last one ended, or it was sealed), else joins
	// the open one as a member, and returns the window's leader (signalID
	// when this call claimed it) and its end. Exactly one of concurrent
	// callers claims a window; a join succeeds only while the window is
	// unsealed and open. A signal that joined a window before (a retried
	// delivery) gets that window back, sealed or not. Errors: EINVALID,
	// ETRANSIENT.
	Coalesce(ctx context.Context, entity, signalID string, window time.Duration) (leader string, until time.Time, err error)
	// Seal closes leader's window of entity to new members and returns the
	// signals that joined it, sorted. Sealing again, or a window a later
	// leader took over, returns the members it had. Errors: EINVALID,
	// ETRANSIENT.
	Seal(ctx context.Context, entity, leader string) (members []string, err error)
	// Members returns the signals that joined leader's window of entity,
	// sorted, and writes nothing (the outbox sweep, which may not write
	// the store on AWS, reads them). Errors: EINVALID, ETRANSIENT.
	Members(ctx context.Context, entity, leader string) (members []string, err error)
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
			if isLeftOut(e) {
				continue // the signal has a wave of its own
			}
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

// SweepMargin is how long after a leader's wait has ended the outbox sweep
// starts its wave without a member whose attach entry is still missing:
// longer than an observer runs (an observer Lambda's timeout is 30 s), so
// that member's observer has given up or found the wait over, and it leaves
// itself out (see attach).
const SweepMargin = time.Minute

// errAttaching is a sweep's answer for a leader whose members are still
// attaching: the sweep leaves its wave to the next sweep.
var errAttaching = errors.New("coalesced signals are still attaching")

// gathered is the sweep's gather, which writes nothing (on AWS the sweep
// may write only its position): nil when the wave may start, every member
// of leader's window being attached or left out, or the wait having ended
// SweepMargin ago (a missing member then leaves itself out); errAttaching
// otherwise. A window this old is closed to joins by its end.
func (o *Observer) gathered(ctx context.Context, leader, entity string, until time.Time) error {
	if o.opts.Coalescer == nil || entity == "" {
		return nil
	}
	members, err := o.opts.Coalescer.Members(ctx, entity, leader)
	if err != nil || len(members) == 0 {
		return err
	}
	missing, err := o.missing(ctx, leader, members)
	if err != nil || len(missing) == 0 {
		return err
	}
	if o.opts.Now().Before(until.Add(o.opts.AttachWait + SweepMargin)) {
		return fmt.Errorf("%w: %d of %d", errAttaching, len(missing), len(members))
	}
	o.opts.Logger.WarnContext(ctx, "coalescing: the sweep starts a wave without signals that joined its window and never attached; each leaves itself out if it comes",
		"wave_id", leader, "missing", missing)
	return nil
}

// missing returns the members with neither an attach nor a left-out entry
// under leader.
func (o *Observer) missing(ctx context.Context, leader string, members []string) ([]string, error) {
	es, err := ora.EntriesOfKinds(ctx, o.ledger, leader, ora.KindObservedFact)
	if err != nil && ora.ErrorCode(err) != ora.ENOTFOUND {
		return nil, fmt.Errorf("read the attached signals: %w", err)
	}
	have := make(map[string]bool, len(es))
	for _, e := range es {
		have[e.Qualifier] = true
	}
	var missing []string
	for _, m := range members {
		if !have[CoalescedQualifier(m)] {
			missing = append(missing, m)
		}
	}
	return missing, nil
}

// leftOut is the body of the entry a leader appends, under the attach
// entry's key, for a member whose attach entry had not come when its wait
// ended. Its empty facts make it a fact-less observed-fact entry to the
// orientation packet.
type leftOut struct {
	Facts   []ora.Fact `json:"facts"`
	LeftOut string     `json:"coalesce_left_out"`
	Entity  string     `json:"coalesce_entity"`
}

// isLeftOut reports whether e is a leader's left-out entry.
func isLeftOut(e ora.Entry) bool {
	var b leftOut
	return json.Unmarshal(e.Body, &b) == nil && b.LeftOut != ""
}

// appendLeftOut appends member's left-out entry under leader and reports
// whether member is out: false when its attach entry came first.
func (o *Observer) appendLeftOut(ctx context.Context, leader, entity, member string) (bool, error) {
	e, err := ora.NewEntry(leader, ora.KindObservedFact, CoalescedQualifier(member), leftOut{Facts: []ora.Fact{}, LeftOut: member, Entity: entity})
	if err != nil {
		return false, err
	}
	e.CreatedAt = o.opts.Now().UTC()
	e.Meta = map[string]string{MetaCoalesceLeftOut: member, MetaCoalesceEntity: entity}
	if _, err := o.ledger.Append(ctx, e); err != nil {
		first, ok := ora.Existing[ora.Entry](err)
		if !ok {
			return false, fmt.Errorf("leave out %s: %w", member, err)
		}
		return isLeftOut(first), nil
	}
	return true, nil
}

// attach writes the entry that puts sig in its leader's wave and reports
// whether sig is in it: false when the leader left it out (its wait ended
// first), or when the leader's wait is over by this observer's clock (then
// sig leaves itself out). A second write (a redelivery) finds its entry
// there.
func (o *Observer) attach(ctx context.Context, w *window, sig ora.NormalizedSignal) (bool, error) {
	if o.opts.Now().After(w.until.Add(o.opts.AttachWait)) {
		left, err := o.appendLeftOut(ctx, w.leader, w.entity, sig.ID)
		return !left, err
	}
	kept := sig
	kept.Raw = nil // the signal's own entry keeps the raw delivery
	normalized, err := json.Marshal(kept)
	if err != nil {
		return false, ora.Invalid("signal", "cannot encode: %v", err)
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
		return false, err
	}
	e.CreatedAt = sig.NormalizedAt
	e.Meta = map[string]string{"coalesced_signal": sig.ID, MetaCoalesceEntity: w.entity}
	if _, err := o.ledger.Append(ctx, e); err != nil {
		first, ok := ora.Existing[ora.Entry](err)
		if !ok {
			return false, err
		}
		return !isLeftOut(first), nil
	}
	return true, nil
}

// gather seals leader's window of entity (no signal joins it any more) and
// waits, until AttachWait after the window's end, for the attach entry of
// each of its members; a member still missing then is left out (see the
// table above). The wave may start when it returns.
func (o *Observer) gather(ctx context.Context, leader, entity string, until time.Time) error {
	if o.opts.Coalescer == nil || entity == "" {
		return nil
	}
	members, err := o.opts.Coalescer.Seal(ctx, entity, leader)
	if err != nil || len(members) == 0 {
		return err
	}
	deadline := until.Add(o.opts.AttachWait)
	for {
		missing, err := o.missing(ctx, leader, members)
		if err != nil || len(missing) == 0 {
			return err
		}
		left := deadline.Sub(o.opts.Now())
		if left <= 0 {
			return o.leaveOut(ctx, leader, entity, missing)
		}
		o.opts.Logger.InfoContext(ctx, "coalescing: waiting for attached signals", "wave_id", leader, "missing", len(missing), "of", len(members))
		if err := o.opts.WaitAttach(ctx, min(left, attachPoll)); err != nil {
			return fmt.Errorf("wait for the attached signals: %w", err)
		}
	}
}

// leaveOut appends the left-out entry of each member; one whose attach entry
// came first stays in the wave.
func (o *Observer) leaveOut(ctx context.Context, leader, entity string, members []string) error {
	var out []string
	for _, m := range members {
		left, err := o.appendLeftOut(ctx, leader, entity, m)
		if err != nil {
			return err
		}
		if left {
			out = append(out, m)
		}
	}
	if len(out) > 0 {
		o.opts.Logger.WarnContext(ctx, "coalescing: wave started without signals whose attach entries did not come in time; each has a wave of its own",
			"wave_id", leader, "left_out", out, "wait", o.opts.AttachWait)
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
		entity := e.Meta[MetaCoalesceEntity]
		if d := until.Sub(o.opts.Now()); d > 0 {
			if !wait {
				return e.SignalID, false, nil
			}
			if later, ok := ctx.Value(deferKey{}).(*deferredStarts); ok {
				later.starts = append(later.starts, deferredStart{signalID: e.SignalID, entity: entity, until: until, record: later.record})
				return e.SignalID, false, nil
			}
			if err := o.opts.Sleep(ctx, d); err != nil {
				return "", false, fmt.Errorf("wait for the coalescing window: %w", err)
			}
		}
		if !wait {
			if err := o.gathered(ctx, e.SignalID, entity, until); err != nil {
				return "", false, err
			}
		} else if err := o.gather(ctx, e.SignalID, entity, until); err != nil {
			return "", false, fmt.Errorf("gather the coalesced signals: %w", err)
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
	entity   string
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
		if err := o.gather(ctx, s.signalID, s.entity, s.until); err != nil {
			errs[s.record] = fmt.Errorf("start wave %s: gather the coalesced signals: %w", s.signalID, err)
			continue
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
