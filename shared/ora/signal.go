package ora

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// SourceKind names one of the kinds of signal source.
type SourceKind string

// The four source kinds of seed 000, as ora maps them onto AWS: webhooks (API
// Gateway), schedules (EventBridge Scheduler, cron locally), objects (S3
// notifications, a watched folder locally) and table changes (DynamoDB Streams,
// the ledger's commitments locally).
const (
	SourceWebhook  SourceKind = "webhook"
	SourceSchedule SourceKind = "schedule"
	SourceObject   SourceKind = "object"
	SourceTable    SourceKind = "table"
	// SourceEvent is an AWS event: EventBridge (a rule's target), or one
	// posted to `ora dev`'s /events in the same shape.
	SourceEvent SourceKind = "event"
)

// Source describes where a signal came from. Which fields are set depends on
// Type: webhook (Provider, EventType), schedule (Schedule, JobName), object
// (Bucket, Path, Event: create | modify | delete), table (Table, Event:
// insert | modify | remove) and event (Provider: the event's source such as
// aws.cloudwatch, EventType: its detail-type).
type Source struct {
	Type      SourceKind `json:"type"`
	Name      string     `json:"name,omitempty"` // the configured source name, e.g. "github"
	Provider  string     `json:"provider,omitempty"`
	EventType string     `json:"event_type,omitempty"`
	Schedule  string     `json:"schedule,omitempty"`
	JobName   string     `json:"job_name,omitempty"`
	Bucket    string     `json:"bucket,omitempty"`
	Path      string     `json:"path,omitempty"`
	Table     string     `json:"table,omitempty"`
	Event     string     `json:"event,omitempty"`
}

// Validate checks that the fields Type requires are present.
func (s Source) Validate() error {
	switch s.Type {
	case SourceWebhook:
		if s.Provider == "" {
			return Invalid("source.provider", "required for a webhook source")
		}
	case SourceSchedule:
		if s.JobName == "" {
			return Invalid("source.job_name", "required for a schedule source")
		}
	case SourceObject:
		if s.Path == "" {
			return Invalid("source.path", "required for an object source")
		}
		switch s.Event {
		case "create", "modify", "delete":
		default:
			return Invalid("source.event", "%q is not create, modify or delete", s.Event)
		}
	case SourceTable:
		if s.Table == "" {
			return Invalid("source.table", "required for a table source")
		}
		switch s.Event {
		case "insert", "modify", "remove":
		default:
			return Invalid("source.event", "%q is not insert, modify or remove", s.Event)
		}
	case SourceEvent:
		if s.Provider == "" {
			return Invalid("source.provider", "required for an event source (the event's source)")
		}
		if s.EventType == "" {
			return Invalid("source.event_type", "required for an event source (the event's detail-type)")
		}
	case "":
		return Invalid("source.type", "required")
	default:
		return Invalid("source.type", "%q is not webhook, schedule, object, table or event", s.Type)
	}
	return nil
}

// NormalizedSignal is a signal from any source in the one shape reasoners read.
// Raw keeps the bytes the observer received, so the witness can normalize them
// again and compare; RawDigest is their sha256.
//
// When the bytes received held values of the Secrets registry, the observer
// keeps them redacted: Raw is the redacted form (every field of the signal is
// normalized from it, and RawDigest is its digest), Redacted names the values
// replaced and ReceivedDigest is the sha256 of the bytes as received. Both are
// empty for a signal nothing was redacted from.
type NormalizedSignal struct {
	ID             string          `json:"id"`
	Source         Source          `json:"source"`
	Timestamp      time.Time       `json:"timestamp"`
	Payload        json.RawMessage `json:"payload"`
	NormalizedAt   time.Time       `json:"normalized_at"`
	DedupKey       string          `json:"dedup_key"`
	RawDigest      string          `json:"raw_digest"`
	Raw            []byte          `json:"raw,omitempty"`
	Redacted       []string        `json:"redacted,omitempty"`
	ReceivedDigest string          `json:"received_digest,omitempty"`
}

// Validate checks the signal's required fields and that RawDigest matches Raw
// when Raw is kept.
func (s NormalizedSignal) Validate() error {
	if s.ID == "" {
		return Invalid("signal.id", "required")
	}
	if err := s.Source.Validate(); err != nil {
		return err
	}
	if s.Timestamp.IsZero() {
		return Invalid("signal.timestamp", "required")
	}
	if s.NormalizedAt.IsZero() {
		return Invalid("signal.normalized_at", "required")
	}
	if s.DedupKey == "" {
		return Invalid("signal.dedup_key", "required")
	}
	if len(s.Payload) == 0 || !json.Valid(s.Payload) {
		return Invalid("signal.payload", "must be JSON")
	}
	if s.RawDigest == "" {
		return Invalid("signal.raw_digest", "required")
	}
	if s.Raw != nil && Digest(s.Raw) != s.RawDigest {
		return Invalid("signal.raw_digest", "does not match the raw bytes")
	}
	return nil
}

// Digest returns the lowercase hex sha256 of b, the digest every ledger record uses.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
