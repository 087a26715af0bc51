package observe

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Event sources of the raw forms a local runtime produces; AWS's own records
// carry "aws:s3" and "aws:dynamodb".
const (
	EventSourceCron   = "ora:cron"
	EventSourceFolder = "ora:folder"
	EventSourceLedger = "ora:ledger"
	eventSourceS3     = "aws:s3"
	eventSourceDDB    = "aws:dynamodb"
)

// Source names of the non-webhook sources (NormalizedSignal.Source.Name).
const (
	NameSchedule = "schedule" // EventBridge Scheduler or local cron
	NameS3       = "s3"       // S3 event notifications
	NameFolder   = "folder"   // the local watched folder
	NameDynamoDB = "dynamodb" // DynamoDB Streams records of commitments
	NameLedger   = "ledger"   // the local ledger's commitment changes
)

// SignalID returns the deterministic id of the signal with dedupKey from the
// named source: "sig_" and the first 26 hex digits of the sha256 of both.
func SignalID(source, dedupKey string) string {
	sum := sha256.Sum256([]byte(source + "\x00" + dedupKey))
	return "sig_" + hex.EncodeToString(sum[:])[:26]
}

// Delivery is a webhook request as the observer keeps it (the signal's Raw):
// the source and provider it was verified as, when it arrived, the headers
// normalization reads, and the body's exact bytes.
type Delivery struct {
	Source     string            `json:"source"`
	Provider   string            `json:"provider"`
	ReceivedAt time.Time         `json:"received_at"`
	Header     map[string]string `json:"header,omitempty"`
	Body       []byte            `json:"body"`
}

// keptHeaders are the request headers a Delivery keeps.
var keptHeaders = []string{
	"Content-Type", headerGitHubDelivery, headerGitHubEvent, headerSlackRetryNum, headerSlackRetryWhy,
	headerSlackTimestamp, headerIdempotencyKey, headerEventType,
}

func newDelivery(cfg SourceConfig, header http.Header, body []byte, at time.Time) Delivery {
	d := Delivery{Source: cfg.Name, Provider: cfg.Type, ReceivedAt: at.UTC(), Header: map[string]string{}, Body: body}
	for _, k := range keptHeaders {
		if v := header.Get(k); v != "" {
			d.Header[http.CanonicalHeaderKey(k)] = v
		}
	}
	if cfg.Type == TypeHMAC && !cfg.LegacyBodyOnly {
		// The signed delivery id is the dedup key, whatever header carried it
		// (an unsigned Idempotency-Key never replaces it).
		d.Header[http.CanonicalHeaderKey(headerIdempotencyKey)] = header.Get(cfg.DeliveryHeader)
	}
	return d
}

func (d Delivery) header(k string) string { return d.Header[http.CanonicalHeaderKey(k)] }

// ScheduleEvent is what a schedule delivers: on AWS the EventBridge Scheduler
// target input (see the README for the input template using
// <aws.scheduler.scheduled-time>), locally what the cron Scheduler produces.
type ScheduleEvent struct {
	EventSource   string          `json:"eventSource,omitempty"`
	Job           string          `json:"job"`
	Expression    string          `json:"expression,omitempty"`
	ScheduledTime time.Time       `json:"scheduled_time"`
	ScheduleARN   string          `json:"schedule_arn,omitempty"`
	ExecutionID   string          `json:"execution_id,omitempty"`
	Payload       json.RawMessage `json:"payload,omitempty"`
}

// FolderEvent is one change the local watched folder saw.
type FolderEvent struct {
	EventSource string    `json:"eventSource"`    // EventSourceFolder
	Name        string    `json:"name,omitempty"` // a named folder (FolderConfig)
	Root        string    `json:"root"`
	Path        string    `json:"path"`  // slash-separated, relative to Root
	Event       string    `json:"event"` // create | modify | delete
	Size        int64     `json:"size"`
	ModTime     time.Time `json:"mtime"`
	ObservedAt  time.Time `json:"observed_at"`
}

// CommitmentChange is a change of a commitment in the local ledger, the
// embedded runtime's stand-in for a DynamoDB Streams record.
type CommitmentChange struct {
	EventSource string         `json:"eventSource"` // EventSourceLedger
	Event       string         `json:"event"`       // insert (opened) | modify (closed)
	Commitment  ora.Commitment `json:"commitment"`
}

// Normalize turns raw input of a source kind into a NormalizedSignal. It is a
// pure function of raw except NormalizedAt (the current time): the witness
// calls it on a stored signal's Raw and compares. raw is, per kind: webhook a
// Delivery; schedule a ScheduleEvent or an EventBridge "Scheduled Event"; object
// one S3 notification record, an S3 EventBridge event or a FolderEvent; table
// one DynamoDB Streams record, a TableRecord or a CommitmentChange; event an
// EventBridge event. Errors: EINVALID (Field names what), and
// ENOTFOUND for a table record that is not a commitment (nothing to observe).
func Normalize(kind ora.SourceKind, raw []byte) (ora.NormalizedSignal, error) {
	s, _, err := normalize(kind, raw)
	if err != nil {
		return ora.NormalizedSignal{}, err
	}
	s.NormalizedAt = time.Now().UTC()
	return s, nil
}

func normalize(kind ora.SourceKind, raw []byte) (ora.NormalizedSignal, extra, error) {
	var s ora.NormalizedSignal
	var x extra
	var err error
	switch kind {
	case ora.SourceWebhook:
		s, x, err = normalizeWebhook(raw)
	case ora.SourceSchedule:
		s, err = normalizeSchedule(raw)
	case ora.SourceObject:
		s, err = normalizeObject(raw)
	case ora.SourceTable:
		s, err = normalizeTable(raw)
	case ora.SourceEvent:
		s, err = normalizeEvent(raw)
	default:
		return s, x, ora.Invalid("kind", "%q is not webhook, schedule, object, table or event", kind)
	}
	if err != nil {
		return ora.NormalizedSignal{}, x, err
	}
	s.Source.Type = kind
	if err := s.Source.Validate(); err != nil {
		return ora.NormalizedSignal{}, x, err
	}
	s.Timestamp = s.Timestamp.UTC()
	s.ID = SignalID(s.Source.Name, s.DedupKey)
	s.Raw = raw
	s.RawDigest = ora.Digest(raw)
	return s, x, nil
}

func normalizeWebhook(raw []byte) (ora.NormalizedSignal, extra, error) {
	var x extra
	var d Delivery
	if err := json.Unmarshal(raw, &d); err != nil {
		return ora.NormalizedSignal{}, x, ora.Invalid("raw", "not a webhook delivery: %v", err)
	}
	if d.Source == "" || d.ReceivedAt.IsZero() {
		return ora.NormalizedSignal{}, x, ora.Invalid("raw", "a webhook delivery needs source and received_at")
	}
	s := ora.NormalizedSignal{
		Source:    ora.Source{Name: d.Source, Provider: d.Provider},
		Timestamp: d.ReceivedAt,
	}
	b, err := decodeWebhookBody(d.Provider, d.header("Content-Type"), d.Body)
	if err != nil {
		return s, x, err
	}
	body := b.fields
	s.Payload = b.payload
	// A provider's own time, when plausible; else the receive time, with the
	// provider's value kept in the entry's meta.
	timestamp := func(k string) {
		t, rawTime, ok := providerTime(body, k, d.ReceivedAt)
		switch {
		case ok && rawTime == "":
			s.Timestamp = t
		case ok:
			x.meta = map[string]string{MetaProviderTimestamp: rawTime}
		}
	}
	switch d.Provider {
	case TypeGitHub:
		s.Source.EventType = d.header(headerGitHubEvent)
		if d.header(headerGitHubDelivery) == "" {
			return s, x, ora.Invalid("header."+headerGitHubDelivery, "required")
		}
		if s.Source.EventType == "" {
			return s, x, ora.Invalid("header."+headerGitHubEvent, "required")
		}
		if err := checkGitHubEvent(s.Source.EventType, body); err != nil {
			return s, x, err
		}
		if action := str(body, "action"); action != "" {
			s.Source.EventType += "." + action
		}
		// The delivery id is not signed: the body's digest within the replay
		// window is the dedup key (see GitHubReplayWindow).
		s.DedupKey = GitHubDedupKey(d.Body, d.ReceivedAt)
		x.earlier = []string{GitHubDedupKey(d.Body, d.ReceivedAt.Add(-GitHubReplayWindow))}
	case TypeSlack:
		if b.form {
			s.Source.EventType, s.DedupKey = slackForm(b)
			break
		}
		s.Source.EventType = str(body, "type")
		if ev, ok := body["event"].(map[string]any); ok && str(ev, "type") != "" {
			s.Source.EventType = str(ev, "type")
		}
		s.DedupKey = str(body, "event_id")
		timestamp("event_time")
	case TypeStripe:
		s.DedupKey = str(body, "id")
		s.Source.EventType = str(body, "type")
		if s.DedupKey == "" {
			return s, x, ora.Invalid("body.id", "a Stripe event needs an id")
		}
		if s.Source.EventType == "" {
			return s, x, ora.Invalid("body.type", "a Stripe event needs a type")
		}
		timestamp("created")
	case TypeHMAC, TypeNone:
		s.DedupKey = d.header(headerIdempotencyKey)
		s.Source.EventType = d.header(headerEventType)
		if s.Source.EventType == "" {
			s.Source.EventType = str(body, "type")
		}
	default:
		return s, x, ora.Invalid("raw.provider", "%q is not a webhook provider", d.Provider)
	}
	if s.DedupKey == "" {
		s.DedupKey = "body:" + ora.Digest(d.Body)
	}
	if s.Source.EventType == "" {
		s.Source.EventType = "event"
	}
	return s, x, nil
}

// scheduledEvent is EventBridge's scheduled-rule event ("detail-type":
// "Scheduled Event"), accepted as well as the Scheduler input template.
type scheduledEvent struct {
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       time.Time       `json:"time"`
	Resources  []string        `json:"resources"`
	ID         string          `json:"id"`
	Detail     json.RawMessage `json:"detail"`
}

func normalizeSchedule(raw []byte) (ora.NormalizedSignal, error) {
	var ev ScheduleEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("raw", "not a schedule event: %v", err)
	}
	var rule scheduledEvent
	if err := json.Unmarshal(raw, &rule); err == nil && rule.DetailType == "Scheduled Event" {
		ev = ScheduleEvent{ScheduledTime: rule.Time, ExecutionID: rule.ID}
		if len(rule.Resources) > 0 {
			ev.ScheduleARN = rule.Resources[0]
		}
		if len(rule.Detail) > 0 && string(rule.Detail) != "{}" {
			ev.Payload = rule.Detail
		}
	}
	if ev.Job == "" && ev.ScheduleARN != "" {
		ev.Job = ev.ScheduleARN[strings.LastIndex(ev.ScheduleARN, "/")+1:]
	}
	if ev.Job == "" {
		return ora.NormalizedSignal{}, ora.Invalid("job", "a schedule event needs job (or schedule_arn)")
	}
	if ev.ScheduledTime.IsZero() {
		return ora.NormalizedSignal{}, ora.Invalid("scheduled_time", "required")
	}
	at := ev.ScheduledTime.UTC()
	payload, _ := json.Marshal(map[string]any{
		"job": ev.Job, "expression": ev.Expression, "scheduled_time": at, "payload": ev.Payload,
	})
	return ora.NormalizedSignal{
		Source:    ora.Source{Name: NameSchedule, JobName: ev.Job, Schedule: ev.Expression},
		Timestamp: at,
		Payload:   payload,
		DedupKey:  ev.Job + "@" + at.Format(time.RFC3339Nano),
	}, nil
}

// s3Record is the part of an S3 event notification record the observer reads.
type s3Record struct {
	EventSource string    `json:"eventSource"`
	EventName   string    `json:"eventName"`
	EventTime   time.Time `json:"eventTime"`
	AWSRegion   string    `json:"awsRegion"`
	S3          struct {
		Bucket struct {
			Name string `json:"name"`
		} `json:"bucket"`
		Object struct {
			Key       string `json:"key"`
			Size      int64  `json:"size"`
			ETag      string `json:"eTag"`
			VersionID string `json:"versionId"`
			Sequencer string `json:"sequencer"`
		} `json:"object"`
	} `json:"s3"`
}

func normalizeObject(raw []byte) (ora.NormalizedSignal, error) {
	var probe struct {
		EventSource string `json:"eventSource"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("raw", "not an object event: %v", err)
	}
	if isS3Event(raw) {
		return normalizeS3Event(raw)
	}
	switch probe.EventSource {
	case eventSourceS3:
		return normalizeS3(raw)
	case EventSourceFolder:
		return normalizeFolder(raw)
	}
	return ora.NormalizedSignal{}, ora.Invalid("eventSource", "%q is not aws:s3 or %s", probe.EventSource, EventSourceFolder)
}

func normalizeS3(raw []byte) (ora.NormalizedSignal, error) {
	var r s3Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("raw", "not an S3 notification record: %v", err)
	}
	var event string
	switch {
	case strings.HasPrefix(r.EventName, "ObjectCreated:"):
		event = "create"
	case strings.HasPrefix(r.EventName, "ObjectRemoved:"):
		event = "delete"
	default:
		return ora.NormalizedSignal{}, ora.Invalid("eventName", "%q is not ObjectCreated:* or ObjectRemoved:*", r.EventName)
	}
	bucket := r.S3.Bucket.Name
	// Keys arrive URL-encoded, spaces as '+'.
	key, err := url.QueryUnescape(r.S3.Object.Key)
	if err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("s3.object.key", "malformed: %v", err)
	}
	if bucket == "" || key == "" {
		return ora.NormalizedSignal{}, ora.Invalid("s3", "bucket name and object key required")
	}
	if r.EventTime.IsZero() {
		return ora.NormalizedSignal{}, ora.Invalid("eventTime", "required")
	}
	version := r.S3.Object.Sequencer
	if version == "" {
		version = r.EventName + "@" + r.EventTime.UTC().Format(time.RFC3339Nano)
	}
	payload, _ := json.Marshal(map[string]any{
		"bucket": bucket, "key": key, "size": r.S3.Object.Size, "etag": r.S3.Object.ETag,
		"version_id": r.S3.Object.VersionID, "event_name": r.EventName, "region": r.AWSRegion,
	})
	return ora.NormalizedSignal{
		Source:    ora.Source{Name: NameS3, Bucket: bucket, Path: key, Event: event},
		Timestamp: r.EventTime,
		Payload:   payload,
		DedupKey:  "s3://" + bucket + "/" + key + "#" + version,
	}, nil
}

func normalizeFolder(raw []byte) (ora.NormalizedSignal, error) {
	var ev FolderEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("raw", "not a folder event: %v", err)
	}
	if ev.Path == "" {
		return ora.NormalizedSignal{}, ora.Invalid("path", "required")
	}
	at := ev.ModTime
	if ev.Event == "delete" || at.IsZero() {
		at = ev.ObservedAt
	}
	if at.IsZero() {
		return ora.NormalizedSignal{}, ora.Invalid("mtime", "mtime or observed_at required")
	}
	p := map[string]any{
		"root": ev.Root, "path": ev.Path, "event": ev.Event, "size": ev.Size, "mtime": ev.ModTime.UTC(),
	}
	key := fmt.Sprintf("%s:%s@%s#%d", ev.Event, ev.Path, ev.ModTime.UTC().Format(time.RFC3339Nano), ev.Size)
	if ev.Name != "" {
		// A named folder stands in for a bucket: rules read source.bucket.
		p["folder"], key = ev.Name, ev.Name+"/"+key
	}
	payload, _ := json.Marshal(p)
	return ora.NormalizedSignal{
		Source:    ora.Source{Name: NameFolder, Bucket: ev.Name, Path: ev.Path, Event: ev.Event},
		Timestamp: at,
		Payload:   payload,
		DedupKey:  key,
	}, nil
}
