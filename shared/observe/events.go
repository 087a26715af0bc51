package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ora-runtime/ora/shared/ora"
)

// NameEvents is the source name of AWS events (NormalizedSignal.Source.Name):
// one event is one signal, whichever rule or bus delivered it.
const NameEvents = "events"

// The detail-types of S3's EventBridge notifications that become object
// signals, like S3's own notifications, so one rule serves both paths.
const (
	detailObjectCreated = "Object Created"
	detailObjectDeleted = "Object Deleted"
	sourceS3            = "aws.s3"
)

// Event is an EventBridge event as a rule delivers it to its target.
type Event struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       time.Time       `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// PutEventsEntry is one entry of a PutEvents request (what `aws events
// put-events --entries` sends): Detail is a JSON object as a string.
type PutEventsEntry struct {
	Source       string     `json:"Source"`
	DetailType   string     `json:"DetailType"`
	Detail       string     `json:"Detail"`
	Resources    []string   `json:"Resources,omitempty"`
	Time         *EntryTime `json:"Time,omitempty"`
	EventBusName string     `json:"EventBusName,omitempty"`
}

// EntryTime is a PutEvents entry's Time: epoch seconds on the wire (AWS
// JSON 1.1), or an RFC 3339 string as the CLI's input files write it.
type EntryTime struct{ time.Time }

// UnmarshalJSON reads epoch seconds (with a fraction) or RFC 3339.
func (t *EntryTime) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err == nil {
		sec := int64(f)
		t.Time = time.Unix(sec, int64((f-float64(sec))*1e9)).UTC()
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return ora.Invalid("Time", "not epoch seconds or an RFC 3339 time")
	}
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return ora.Invalid("Time", "%q is not an RFC 3339 time", s)
	}
	t.Time = v
	return nil
}

// EventReceipt answers one event of a POST /events: the event id it was
// given (or carried) and the signal's receipt, or the entry's error.
type EventReceipt struct {
	EventID string `json:"event_id,omitempty"`
	Receipt
	Error string `json:"error,omitempty"`
}

// Local event defaults: the account and region an event posted without them
// carries.
const (
	LocalAccount = "000000000000"
	LocalRegion  = "local"
)

// DefaultEventsSourceName names the events source when its config has no name.
const DefaultEventsSourceName = "events"

// EventConfig fills the defaults of the POST /events source: type hmac, name
// "events". Errors: EINVALID (see SourceConfig.Validate).
func EventConfig(c SourceConfig) (SourceConfig, error) {
	if c.Name == "" {
		c.Name = DefaultEventsSourceName
	}
	if c.Type == "" {
		c.Type = TypeHMAC
	}
	if c.Type != TypeHMAC && c.Type != TypeNone {
		return c, ora.Invalid("events.type", "%q: events are signed as an hmac source (or none)", c.Type)
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

// Event captures one EventBridge event as a rule delivers it: an S3 "Object
// Created" or "Object Deleted" as an object signal, any other as an event
// signal. Errors: EINVALID, and the ledger's and wave starter's.
func (o *Observer) Event(ctx context.Context, raw []byte) (Receipt, error) {
	if isS3Event(raw) {
		return o.capture(ctx, ora.SourceObject, raw, false)
	}
	return o.capture(ctx, ora.SourceEvent, raw, false)
}

// PostEvents verifies and captures a POST /events body: a PutEvents request
// ({"Entries": [...]}), a list of entries, one entry, or one event as
// EventBridge delivers it. It is signed as the events source (Options.Events)
// signs: the delivery id names the entries' events (entry i of delivery d is
// event uuid5(d/i)), so a replay is a duplicate. Errors: ENOTFOUND (no events
// source configured), *TooLargeError, EUNAUTHORIZED, EINVALID (nothing
// captured), and per entry in the receipts.
func (o *Observer) PostEvents(ctx context.Context, header http.Header, body []byte) ([]EventReceipt, error) {
	cfg := o.opts.Events
	if cfg.Name == "" {
		return nil, ora.Errorf(ora.ENOTFOUND, "no events source: set events: in the config")
	}
	if int64(len(body)) > o.opts.MaxBody {
		return nil, &TooLargeError{Limit: o.opts.MaxBody, Size: int64(len(body))}
	}
	now := o.opts.Now()
	if err := verify(cfg, header, body, now); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	if err := checkBody(cfg, header, body); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	if err := ora.CheckDepth(body, ora.MaxBodyDepth); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	delivery := header.Get(cfg.DeliveryHeader)
	if delivery == "" {
		delivery = header.Get(headerIdempotencyKey)
	}
	if delivery == "" {
		delivery = "body:" + ora.Digest(body)
	}
	events, err := postedEvents(body, delivery, now)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	out := make([]EventReceipt, 0, len(events))
	for _, ev := range events {
		raw, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("events: encode %s: %w", ev.ID, err)
		}
		r, err := o.Event(ctx, raw)
		er := EventReceipt{EventID: ev.ID, Receipt: r}
		if err != nil {
			if len(events) == 1 {
				return nil, err
			}
			er.Error = err.Error()
		}
		out = append(out, er)
	}
	return out, nil
}

// postedEvents decodes a POST /events body into delivered events.
func postedEvents(body []byte, delivery string, now time.Time) ([]Event, error) {
	trimmed := bytes.TrimSpace(body)
	var entries []PutEventsEntry
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		if err := strictJSON(trimmed, &entries); err != nil {
			return nil, ora.Invalid("body", "not a list of PutEvents entries: %v", err)
		}
	default:
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &probe); err != nil {
			return nil, ora.Invalid("body", "must be a JSON object or array: %v", err)
		}
		if _, ok := probe["detail-type"]; ok {
			var ev Event
			if err := json.Unmarshal(trimmed, &ev); err != nil {
				return nil, ora.Invalid("body", "not an EventBridge event: %v", err)
			}
			if ev.ID == "" {
				ev.ID = eventID(delivery, 0)
			}
			fillEvent(&ev, now)
			return []Event{ev}, checkEvent(ev)
		}
		if raw, ok := probe["Entries"]; ok {
			if err := strictJSON(raw, &entries); err != nil {
				return nil, ora.Invalid("body.Entries", "not a list of PutEvents entries: %v", err)
			}
		} else {
			var e PutEventsEntry
			if err := strictJSON(trimmed, &e); err != nil {
				return nil, ora.Invalid("body", "not a PutEvents entry, a PutEvents request or an EventBridge event: %v", err)
			}
			entries = []PutEventsEntry{e}
		}
	}
	if len(entries) == 0 || len(entries) > 10 {
		return nil, ora.Invalid("body.Entries", "%d entries: PutEvents takes 1 to 10", len(entries))
	}
	out := make([]Event, len(entries))
	for i, e := range entries {
		ev, err := e.event(eventID(delivery, i), now)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		out[i] = ev
	}
	return out, nil
}

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// eventID is the id of entry i of a delivery: a UUID derived from both.
func eventID(delivery string, i int) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "ora-event:%s/%d", delivery, i)).String()
}

// event is the entry as EventBridge would deliver it.
func (e PutEventsEntry) event(id string, now time.Time) (Event, error) {
	if !json.Valid([]byte(e.Detail)) || !strings.HasPrefix(strings.TrimSpace(e.Detail), "{") {
		return Event{}, ora.Invalid("Detail", "must be a JSON object as a string")
	}
	ev := Event{ID: id, DetailType: e.DetailType, Source: e.Source, Resources: e.Resources, Detail: json.RawMessage(e.Detail)}
	if e.Time != nil {
		ev.Time = e.Time.Time
	}
	fillEvent(&ev, now)
	return ev, checkEvent(ev)
}

func fillEvent(ev *Event, now time.Time) {
	if ev.Version == "" {
		ev.Version = "0"
	}
	if ev.Account == "" {
		ev.Account = LocalAccount
	}
	if ev.Region == "" {
		ev.Region = LocalRegion
	}
	if ev.Time.IsZero() {
		ev.Time = now.UTC().Truncate(time.Second)
	}
	if ev.Resources == nil {
		ev.Resources = []string{}
	}
	if len(ev.Detail) == 0 {
		ev.Detail = json.RawMessage("{}")
	}
}

// checkEvent requires what normalization reads. Errors: EINVALID.
func checkEvent(ev Event) error {
	switch {
	case ev.Source == "":
		return ora.Invalid("source", "required (Source of a PutEvents entry)")
	case ev.DetailType == "":
		return ora.Invalid("detail-type", "required (DetailType of a PutEvents entry)")
	case ev.ID == "":
		return ora.Invalid("id", "required")
	case ev.Time.IsZero():
		return ora.Invalid("time", "required")
	}
	var detail map[string]any
	if err := json.Unmarshal(ev.Detail, &detail); err != nil || detail == nil {
		return ora.Invalid("detail", "must be a JSON object")
	}
	return nil
}

func isS3Event(raw []byte) bool {
	var probe struct {
		Source     string `json:"source"`
		DetailType string `json:"detail-type"`
	}
	return json.Unmarshal(raw, &probe) == nil && probe.Source == sourceS3 &&
		(probe.DetailType == detailObjectCreated || probe.DetailType == detailObjectDeleted)
}

func normalizeEvent(raw []byte) (ora.NormalizedSignal, error) {
	var ev Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("raw", "not an EventBridge event: %v", err)
	}
	if err := checkEvent(ev); err != nil {
		return ora.NormalizedSignal{}, err
	}
	if ev.Resources == nil {
		ev.Resources = []string{}
	}
	payload, err := json.Marshal(map[string]any{
		"id": ev.ID, "source": ev.Source, "detail-type": ev.DetailType, "account": ev.Account,
		"region": ev.Region, "time": ev.Time.UTC(), "resources": ev.Resources, "detail": ev.Detail,
	})
	if err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("detail", "cannot encode: %v", err)
	}
	return ora.NormalizedSignal{
		Source:    ora.Source{Name: NameEvents, Provider: ev.Source, EventType: ev.DetailType},
		Timestamp: ev.Time,
		Payload:   payload,
		DedupKey:  ev.ID,
	}, nil
}

// s3Detail is the detail of S3's EventBridge notifications.
type s3Detail struct {
	Bucket struct {
		Name string `json:"name"`
	} `json:"bucket"`
	Object struct {
		Key       string `json:"key"`
		Size      int64  `json:"size"`
		ETag      string `json:"etag"`
		VersionID string `json:"version-id"`
		Sequencer string `json:"sequencer"`
	} `json:"object"`
	Reason       string `json:"reason"`
	DeletionType string `json:"deletion-type"`
}

// normalizeS3Event turns S3's EventBridge "Object Created"/"Object Deleted"
// into the object signal its notification record would give (the same
// source name and dedup key, so a bucket notifying both ways is one signal).
func normalizeS3Event(raw []byte) (ora.NormalizedSignal, error) {
	var ev Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("raw", "not an EventBridge event: %v", err)
	}
	var d s3Detail
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("detail", "not an S3 event detail: %v", err)
	}
	event := "create"
	if ev.DetailType == detailObjectDeleted {
		event = "delete"
	}
	// EventBridge carries the key as S3 stored it (not URL-encoded).
	key := d.Object.Key
	if d.Bucket.Name == "" || key == "" {
		return ora.NormalizedSignal{}, ora.Invalid("detail", "bucket name and object key required")
	}
	if ev.Time.IsZero() {
		return ora.NormalizedSignal{}, ora.Invalid("time", "required")
	}
	version := d.Object.Sequencer
	if version == "" {
		version = ev.ID
	}
	payload, _ := json.Marshal(map[string]any{
		"bucket": d.Bucket.Name, "key": key, "size": d.Object.Size, "etag": d.Object.ETag,
		"version_id": d.Object.VersionID, "event_name": ev.DetailType, "region": ev.Region,
		"reason": d.Reason, "event_id": ev.ID,
	})
	return ora.NormalizedSignal{
		Source:    ora.Source{Name: NameS3, Bucket: d.Bucket.Name, Path: key, Event: event},
		Timestamp: ev.Time,
		Payload:   payload,
		DedupKey:  "s3://" + d.Bucket.Name + "/" + key + "#" + version,
	}, nil
}
