package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/ora-runtime/ora/shared/ora"
)

// WaveStarter starts the wave of a signal: on AWS a Step Functions execution
// named signalID (shared/sfn), locally the embedded engine.
type WaveStarter interface {
	// StartWave starts the wave named signalID with input ({"signal_id",
	// "escalation_timeout_seconds"}). It must be idempotent by signalID:
	// starting a wave that already exists, running or finished, returns nil.
	// Errors: ETRANSIENT (safe to call again), EINVALID, ENOTFOUND, EINTERNAL.
	StartWave(ctx context.Context, signalID string, input []byte) error
}

// Defaults of Options.
const (
	DefaultMaxBody           = 256 << 10
	DefaultEscalationTimeout = 24 * time.Hour
)

// Options tune an Observer.
type Options struct {
	// MaxBody is the largest webhook body accepted, in bytes (default 256 KiB).
	MaxBody int64
	// EscalationTimeout goes into every wave's input as
	// escalation_timeout_seconds (default 24 h).
	EscalationTimeout time.Duration
	// Debouncer, when set, suppresses repeats of a dedup key within
	// DebounceWindow for the sources that repeat quickly (watched folder,
	// table changes). Nil: no debounce; the ledger's conditional append still
	// deduplicates.
	Debouncer ora.Debouncer
	// DebounceWindow defaults to ora.DebounceWindow (500 ms).
	DebounceWindow time.Duration
	// Coalescer, with Coalesce.Window positive, merges the signals of one
	// entity within the window into one wave (see coalesce.go). Nil: every
	// signal has its own wave.
	Coalescer Coalescer
	// Coalesce turns coalescing on (a positive Window) and keys it.
	Coalesce CoalesceConfig
	// Sleep waits out a coalescing window (default: a timer, or until ctx
	// ends). Tests hold it to decide when the window closes.
	Sleep func(ctx context.Context, d time.Duration) error
	// AttachWait is how long after its window's end a leader waits for its
	// members' attach entries (default DefaultAttachWait); a member still
	// missing then gets a wave of its own (see coalesce.go).
	AttachWait time.Duration
	// WaitAttach waits between a leader's reads of its wave while a member's
	// attach entry is missing (default: a timer, or until ctx ends). Tests
	// hold it to play a slow member.
	WaitAttach func(ctx context.Context, d time.Duration) error
	// Joined, when set, is called after a signal joins another's window and
	// before its attach entry is written: the seam where a slow or dying
	// observer loses time. Tests hold it (an error fails the delivery, as an
	// observer that died there would); production leaves it nil.
	Joined func(ctx context.Context, signalID, leader string) error
	// Events is the source POST /events verifies as (EventConfig fills
	// it); its zero value accepts no posted events.
	Events SourceConfig
	// Tables are the user's tables whose streams reach TableChanges (by
	// StreamARN) or UserTableChange.
	Tables []TableConfig
	// Now returns the current time; tests fix it. Default time.Now.
	Now func() time.Time
	// Logger receives one line per signal captured. Default slog.Default().
	Logger *slog.Logger
	// Secrets, when set, is the registry of sensitive values: a signal whose
	// raw input holds one is captured redacted (ora.NormalizedSignal says
	// how), so no value reaches the ledger and the witness still checks
	// what was stored.
	Secrets *ora.Secrets
}

// Observer normalizes signals, captures them to the ledger and starts their
// waves. It is safe for concurrent use.
type Observer struct {
	ledger  ora.Ledger
	waves   WaveStarter
	sources map[string]SourceConfig
	opts    Options
}

// Receipt answers one delivery. WaveID is the wave's name, which is the signal
// id, or the leader's when the signal was coalesced into another's wave
// (Options.Coalesce). Duplicate is true when the signal was already captured (a redelivery, a
// replayed GitHub body or a debounced repeat); the ids are then the first
// delivery's. Challenge is set (and nothing else) for a Slack url_verification
// request; Probe (and nothing else) for a provider's check of the endpoint
// that carries no signal (Slack's ssl_check): both are answered 200.
type Receipt struct {
	SignalID  string `json:"signal_id,omitempty"`
	WaveID    string `json:"wave_id,omitempty"`
	Duplicate bool   `json:"duplicate"`
	Challenge string `json:"challenge,omitempty"`
	Probe     bool   `json:"probe,omitempty"`
}

// TooLargeError is returned when a webhook body exceeds the limit; the HTTP
// layer answers 413. It unwraps to an EINVALID error on field "body".
type TooLargeError struct {
	Limit, Size int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("body: %d bytes exceeds the limit of %d", e.Size, e.Limit)
}

// Unwrap returns the domain error: EINVALID on "body".
func (e *TooLargeError) Unwrap() error {
	return ora.Invalid("body", "%d bytes exceeds the limit of %d", e.Size, e.Limit)
}

// New returns an Observer writing to ledger and starting waves through waves,
// accepting webhooks from sources. Errors: EINVALID (a bad or duplicate source).
func New(ledger ora.Ledger, waves WaveStarter, sources []SourceConfig, opts ...func(*Options)) (*Observer, error) {
	o := Options{
		MaxBody:           DefaultMaxBody,
		EscalationTimeout: DefaultEscalationTimeout,
		DebounceWindow:    ora.DebounceWindow,
		Sleep:             sleep,
		AttachWait:        DefaultAttachWait,
		WaitAttach:        sleep,
		Now:               time.Now,
		Logger:            slog.Default(),
	}
	for _, f := range opts {
		f(&o)
	}
	if ledger == nil || waves == nil {
		return nil, ora.Invalid("observer", "a ledger and a wave starter are required")
	}
	if o.MaxBody <= 0 {
		return nil, ora.Invalid("max_body", "must be positive")
	}
	if o.AttachWait < 0 {
		return nil, ora.Invalid("attach_wait", "must not be negative")
	}
	if o.EscalationTimeout < time.Second {
		return nil, ora.Invalid("escalation_timeout", "must be at least 1s")
	}
	if o.Events.Name != "" {
		ev, err := EventConfig(o.Events)
		if err != nil {
			return nil, err
		}
		o.Events = ev
	}
	for _, t := range o.Tables {
		if err := t.Validate(); err != nil {
			return nil, err
		}
	}
	m := make(map[string]SourceConfig, len(sources))
	for _, c := range sources {
		if err := c.Validate(); err != nil {
			return nil, err
		}
		if _, dup := m[c.Name]; dup {
			return nil, ora.Invalid("source.name", "%q is configured twice", c.Name)
		}
		m[c.Name] = c
	}
	return &Observer{ledger: ledger, waves: waves, sources: m, opts: o}, nil
}

// MaxBody returns the webhook body limit in bytes; the HTTP layer reads at
// most one byte more.
func (o *Observer) MaxBody() int64 { return o.opts.MaxBody }

// Source returns the configured webhook source called name.
func (o *Observer) Source(name string) (SourceConfig, bool) {
	c, ok := o.sources[name]
	return c, ok
}

// Webhook verifies and captures one webhook delivery to the source called
// source. Errors: ENOTFOUND (no such source), *TooLargeError (EINVALID on
// "body"), EUNAUTHORIZED (missing, bad or stale signature), EINVALID
// (malformed body or provider headers), and the ledger's and wave starter's
// errors (ETRANSIENT, EINTERNAL). Nothing is written on any rejection.
func (o *Observer) Webhook(ctx context.Context, source string, header http.Header, body []byte) (Receipt, error) {
	cfg, ok := o.sources[source]
	if !ok {
		return Receipt{}, ora.Errorf(ora.ENOTFOUND, "no webhook source %q", source)
	}
	if int64(len(body)) > o.opts.MaxBody {
		return Receipt{}, &TooLargeError{Limit: o.opts.MaxBody, Size: int64(len(body))}
	}
	now := o.opts.Now()
	if cfg.Type == TypeSlack && slackSSLCheck(header, body) {
		// Slack sends its certificate check unsigned; it carries no signal.
		return Receipt{Probe: true}, nil
	}
	if err := verify(cfg, header, body, now); err != nil {
		return Receipt{}, fmt.Errorf("webhook %s: %w", source, err)
	}
	if err := checkBody(cfg, header, body); err != nil {
		return Receipt{}, fmt.Errorf("webhook %s: %w", source, err)
	}
	if err := ora.CheckDepth(body, ora.MaxBodyDepth); err != nil {
		return Receipt{}, fmt.Errorf("webhook %s: %w", source, err)
	}
	if cfg.Type == TypeSlack {
		if challenge, ok, err := slackChallenge(header, body); err != nil || ok {
			return Receipt{Challenge: challenge}, err
		}
	}
	d := newDelivery(cfg, header, body, now)
	raw, err := json.Marshal(d)
	if err != nil {
		return Receipt{}, fmt.Errorf("webhook %s: encode delivery: %w", source, err)
	}
	stored, redacted := redactDelivery(o.opts.Secrets, d)
	if stored == nil {
		stored = raw
	}
	return o.captureAs(ctx, ora.SourceWebhook, raw, stored, redacted, false)
}

// checkBody is the one input contract of every home and store: a body is
// valid UTF-8 and one JSON value, or for GitHub and Slack a form whose
// payload field, when it has one, is JSON (GitHub's form deliveries, Slack's
// slash commands and interactions). Errors: EINVALID on "body" (or
// "body.payload"), naming the byte offset.
func checkBody(cfg SourceConfig, header http.Header, body []byte) error {
	if !utf8.Valid(body) {
		off := 0
		for off < len(body) {
			r, size := utf8.DecodeRune(body[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return ora.Invalid("body", "invalid UTF-8 at byte offset %d", off)
	}
	if (cfg.Type == TypeSlack || cfg.Type == TypeGitHub) && isForm(header.Get("Content-Type")) {
		_, err := decodeWebhookBody(cfg.Type, header.Get("Content-Type"), body)
		return err
	}
	return jsonSyntax("body", body)
}

// slackChallenge answers Slack's url_verification request.
func slackChallenge(header http.Header, body []byte) (string, bool, error) {
	var b struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
	}
	if json.Unmarshal(body, &b) != nil || b.Type != "url_verification" {
		return "", false, nil
	}
	if b.Challenge == "" {
		return "", false, ora.Invalid("body.challenge", "a url_verification request needs a challenge")
	}
	return b.Challenge, true, nil
}

// Schedule captures one schedule firing: a ScheduleEvent (the EventBridge
// Scheduler input template, or local cron) or an EventBridge "Scheduled Event".
// Errors: EINVALID, and the ledger's and wave starter's.
func (o *Observer) Schedule(ctx context.Context, raw []byte) (Receipt, error) {
	return o.capture(ctx, ora.SourceSchedule, raw, false)
}

// Object captures one object change: an S3 notification record or a
// FolderEvent. Folder events are debounced. Errors: EINVALID, and the
// ledger's, debouncer's and wave starter's.
func (o *Observer) Object(ctx context.Context, raw []byte) (Receipt, error) {
	return o.capture(ctx, ora.SourceObject, raw, isLocal(raw, EventSourceFolder))
}

// TableChange captures one commitment change: a DynamoDB Streams record or a
// CommitmentChange; both are debounced. A record of an item that is not a
// commitment returns ENOTFOUND and writes nothing. Errors: EINVALID,
// ENOTFOUND, and the ledger's, debouncer's and wave starter's.
func (o *Observer) TableChange(ctx context.Context, raw []byte) (Receipt, error) {
	return o.capture(ctx, ora.SourceTable, raw, true)
}

// CommitmentChanged is what the embedded runtime calls when a commitment opens
// (event "insert") or closes ("modify"). Errors: as TableChange.
func (o *Observer) CommitmentChanged(ctx context.Context, event string, c ora.Commitment) (Receipt, error) {
	raw, err := json.Marshal(CommitmentChange{EventSource: EventSourceLedger, Event: event, Commitment: c})
	if err != nil {
		return Receipt{}, ora.Invalid("commitment", "cannot encode: %v", err)
	}
	return o.TableChange(ctx, raw)
}

// Outcome is the result of one record of a batch (an S3 notification or a
// DynamoDB Streams batch). Ref identifies the record: the bucket/key for S3,
// the SequenceNumber for DynamoDB Streams (the batch item failure id).
// Skipped is set for a record that is not a signal (a non-commitment item).
type Outcome struct {
	Ref     string
	Receipt Receipt
	Skipped bool
	Err     error
}

// Objects captures every record of an S3 event notification ({"Records":
// [...]}). Errors: EINVALID when the event is not a notification; per-record
// errors are in the outcomes.
func (o *Observer) Objects(ctx context.Context, event []byte) ([]Outcome, error) {
	return o.batch(ctx, event, o.Object, func(rec []byte) string {
		var r s3Record
		_ = json.Unmarshal(rec, &r)
		return r.S3.Bucket.Name + "/" + r.S3.Object.Key
	})
}

// TableChanges captures every record of a DynamoDB Streams event ({"Records":
// [...]}): a record of one of the user's tables (Options.Tables, by stream
// ARN) as that table's signal; of the ledger, a record inserting a
// signal-received entry (the ledger as outbox of wave starts) starts that
// signal's wave, a commitment's is captured and other items are skipped.
// Errors: EINVALID when the event is not a Streams event; per-record errors
// are in the outcomes.
func (o *Observer) TableChanges(ctx context.Context, event []byte) ([]Outcome, error) {
	one := func(ctx context.Context, rec []byte) (Receipt, error) {
		var r streamRecord
		_ = json.Unmarshal(rec, &r)
		if t, ok := o.userTable(r.EventSourceARN); ok {
			return o.UserTableChange(ctx, t.Name, rec)
		}
		if id, ok := recordedSignal(rec); ok {
			return o.startStreamed(ctx, id)
		}
		return o.TableChange(ctx, rec)
	}
	return o.batch(ctx, event, one, func(rec []byte) string {
		var r streamRecord
		_ = json.Unmarshal(rec, &r)
		return r.DynamoDB.SequenceNumber
	})
}

func (o *Observer) batch(ctx context.Context, event []byte, one func(context.Context, []byte) (Receipt, error), ref func([]byte) string) ([]Outcome, error) {
	var ev struct {
		Records []json.RawMessage `json:"Records"`
	}
	if err := json.Unmarshal(event, &ev); err != nil {
		return nil, ora.Invalid("event", "not a Records event: %v", err)
	}
	if ev.Records == nil {
		return nil, ora.Invalid("event.Records", "required")
	}
	out := make([]Outcome, 0, len(ev.Records))
	// The leaders of coalescing windows wait once, after the last record,
	// not one after another (see startRecorded).
	later := &deferredStarts{}
	bctx := context.WithValue(ctx, deferKey{}, later)
	for i, rec := range ev.Records {
		later.record = i
		r, err := one(bctx, rec)
		oc := Outcome{Ref: ref(rec), Receipt: r, Err: err}
		if errors.Is(err, errNotCommitment) {
			oc.Skipped, oc.Err = true, nil
		}
		out = append(out, oc)
	}
	for i, err := range o.startDeferred(ctx, later) {
		if err != nil && out[i].Err == nil {
			out[i].Err = err
		}
	}
	return out, nil
}

func isLocal(raw []byte, source string) bool {
	var probe struct {
		EventSource string `json:"eventSource"`
	}
	return json.Unmarshal(raw, &probe) == nil && probe.EventSource == source
}

// capture normalizes raw, appends it as signal-received and starts its wave.
// A duplicate (the append conflicts, or a debounced repeat whose first
// delivery is in the ledger) is answered with the first delivery's ids; its
// wave is started again, which is a no-op when the first delivery started it
// (StartWave is idempotent by name) and recovers the wave when the first
// delivery failed after its append. Nothing is lost and nothing done twice.
func (o *Observer) capture(ctx context.Context, kind ora.SourceKind, raw []byte, debounce bool) (Receipt, error) {
	stored, redacted := redactRaw(o.opts.Secrets, kind, raw)
	return o.captureAs(ctx, kind, raw, stored, redacted, debounce)
}

// captureAs is capture of the raw input received, stored as stored: received
// with the values named redacted replaced by their markers (redactRaw), or
// received itself.
func (o *Observer) captureAs(ctx context.Context, kind ora.SourceKind, received, stored []byte, redacted []string, debounce bool) (Receipt, error) {
	sig, x, err := normalize(kind, stored)
	if err != nil {
		return Receipt{}, fmt.Errorf("observe %s: %w", kind, err)
	}
	if len(redacted) > 0 {
		sig.Redacted, sig.ReceivedDigest = redacted, ora.Digest(received)
	}
	now := o.opts.Now().UTC()
	sig.NormalizedAt = now
	rec := Receipt{SignalID: sig.ID, WaveID: sig.ID}
	repeat := false
	var recorded ora.Entry
	if debounce && o.opts.Debouncer != nil {
		first, err := o.opts.Debouncer.Debounce(ctx, sig.Source.Name+"\x00"+sig.DedupKey, o.opts.DebounceWindow)
		if err != nil {
			return Receipt{}, fmt.Errorf("observe %s: debounce %s: %w", kind, sig.ID, err)
		}
		// A repeat within the window is a duplicate once the first delivery's
		// entry is in the ledger; if that delivery failed before its append,
		// this one captures the signal.
		if !first {
			es, err := o.ledger.Entries(ctx, sig.ID)
			switch code := ora.ErrorCode(err); {
			case err == nil:
				repeat, recorded = true, firstOf(es, sig.ID)
			case code != ora.ENOTFOUND:
				return Receipt{}, fmt.Errorf("observe %s: read signal %s: %w", kind, sig.ID, err)
			}
		}
	}
	// The same signal captured under an earlier key (a GitHub body replayed
	// in the next window) is a duplicate of that one.
	for _, key := range x.earlier {
		if repeat {
			break
		}
		id := SignalID(sig.Source.Name, key)
		es, err := ora.EntriesOfKinds(ctx, o.ledger, id, ora.KindSignalReceived)
		switch code := ora.ErrorCode(err); {
		case err == nil:
			rec, repeat = Receipt{SignalID: id, WaveID: id}, true
			recorded = firstOf(es, id)
		case code != ora.ENOTFOUND:
			return Receipt{}, fmt.Errorf("observe %s: read signal %s: %w", kind, id, err)
		}
	}
	var win *window
	if !repeat && o.opts.Coalescer != nil && o.opts.Coalesce.Window > 0 {
		// A redelivery must not claim a window it would leave empty: it is
		// a duplicate of the signal already recorded, whose wave is known.
		es, err := ora.EntriesOfKinds(ctx, o.ledger, sig.ID, ora.KindSignalReceived)
		switch code := ora.ErrorCode(err); {
		case err == nil:
			repeat, recorded = true, firstOf(es, sig.ID)
		case code != ora.ENOTFOUND:
			return Receipt{}, fmt.Errorf("observe %s: read signal %s: %w", kind, sig.ID, err)
		default:
			if win, err = o.coalesce(ctx, sig); err != nil {
				return Receipt{}, fmt.Errorf("observe %s: coalesce %s: %w", kind, sig.ID, err)
			}
		}
	}
	if !repeat {
		entry, err := ora.NewEntry(sig.ID, ora.KindSignalReceived, "", sig)
		if err != nil {
			return Receipt{}, fmt.Errorf("observe %s: %w", kind, err)
		}
		entry.CreatedAt = now
		entry.Meta = map[string]string{
			"source":     sig.Source.Name,
			"timestamp":  sig.Timestamp.Format(time.RFC3339Nano),
			"raw_digest": sig.RawDigest,
		}
		for k, v := range x.meta {
			entry.Meta[k] = v
		}
		if win != nil {
			entry.Meta[MetaCoalesceEntity] = win.entity
			if win.leader == sig.ID {
				entry.Meta[MetaCoalesceUntil] = win.until.UTC().Format(time.RFC3339Nano)
			} else {
				// Attached before it is recorded: a recorded signal is
				// always in some wave, its leader's or, left out of it,
				// its own (started at once: its window is over).
				if o.opts.Joined != nil {
					if err := o.opts.Joined(ctx, sig.ID, win.leader); err != nil {
						return Receipt{}, fmt.Errorf("observe %s: attach %s to %s: %w", kind, sig.ID, win.leader, err)
					}
				}
				in, err := o.attach(ctx, win, sig)
				if err != nil {
					return Receipt{}, fmt.Errorf("observe %s: attach %s to %s: %w", kind, sig.ID, win.leader, err)
				}
				if in {
					entry.Meta[MetaCoalescedInto] = win.leader
				} else {
					entry.Meta[MetaCoalesceLeftOut] = win.leader
					o.opts.Logger.WarnContext(ctx, "coalescing: left out of its leader's wave; starting its own", "signal_id", sig.ID, "leader", win.leader)
				}
			}
		}
		recorded = entry
		if _, err := o.ledger.Append(ctx, entry); err != nil {
			first, ok := ora.Existing[ora.Entry](err)
			if !ok {
				return Receipt{}, fmt.Errorf("observe %s: append signal %s: %w", kind, sig.ID, err)
			}
			rec = Receipt{SignalID: first.SignalID, WaveID: first.SignalID}
			recorded, repeat = first, true
		}
	}
	rec.Duplicate = repeat
	wave, _, err := o.startRecorded(ctx, recorded, true)
	if err != nil {
		return Receipt{}, fmt.Errorf("observe %s: start wave %s: %w", kind, rec.SignalID, err)
	}
	rec.WaveID = wave
	if !rec.Duplicate {
		o.opts.Logger.InfoContext(ctx, "signal received", "signal_id", sig.ID, "source", sig.Source.Name,
			"event_type", sig.Source.EventType, "event", sig.Source.Event, "dedup_key", sig.DedupKey)
	}
	return rec, nil
}

// firstOf returns the signal-received entry among es (one signal's).
func firstOf(es []ora.Entry, id string) ora.Entry {
	for _, e := range es {
		if e.Kind == ora.KindSignalReceived {
			return e
		}
	}
	return ora.Entry{SignalID: id}
}

// waveInput is the execution input of a wave.
type waveInput struct {
	SignalID                 string `json:"signal_id"`
	EscalationTimeoutSeconds int64  `json:"escalation_timeout_seconds"`
}
