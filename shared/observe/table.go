package observe

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// The ledger table's commitment items. shared/dynamo stores them with a "type"
// attribute equal to CommitmentItemKind and a partition key PK beginning with
// CommitmentKeyPrefix; an "item_kind" attribute or a "COM#" key prefix are
// accepted too. Records of other items (ledger entries, decision status and
// debounce records) are not table-change signals and are skipped.
const (
	CommitmentItemKind  = "commitment"
	CommitmentKeyPrefix = "COMMITMENT#"
)

// streamRecord is the part of a DynamoDB Streams record the observer reads.
type streamRecord struct {
	EventID        string `json:"eventID"`
	EventName      string `json:"eventName"`
	EventSource    string `json:"eventSource"`
	EventSourceARN string `json:"eventSourceARN"`
	DynamoDB       struct {
		ApproximateCreationDateTime float64                    `json:"ApproximateCreationDateTime"`
		Keys                        map[string]json.RawMessage `json:"Keys"`
		NewImage                    map[string]json.RawMessage `json:"NewImage"`
		OldImage                    map[string]json.RawMessage `json:"OldImage"`
		SequenceNumber              string                     `json:"SequenceNumber"`
	} `json:"dynamodb"`
}

// errNotCommitment marks a table record that is not a commitment item.
var errNotCommitment = ora.Errorf(ora.ENOTFOUND, "not a commitment item")

func normalizeTable(raw []byte) (ora.NormalizedSignal, error) {
	var probe struct {
		EventSource string `json:"eventSource"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("raw", "not a table change: %v", err)
	}
	switch probe.EventSource {
	case eventSourceDDB:
		return normalizeStream(raw)
	case EventSourceTable:
		return normalizeTableRecord(raw)
	case EventSourceLedger:
		return normalizeCommitment(raw)
	}
	return ora.NormalizedSignal{}, ora.Invalid("eventSource", "%q is not aws:dynamodb, %s or %s", probe.EventSource, EventSourceTable, EventSourceLedger)
}

func normalizeStream(raw []byte) (ora.NormalizedSignal, error) {
	var r streamRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("raw", "not a DynamoDB Streams record: %v", err)
	}
	return streamSignal(r, NameDynamoDB, true)
}

// streamSignal normalizes a DynamoDB Streams record of a table as a signal
// of the source called name: the item's keys, the event and both images in
// plain JSON. commitments keeps only commitment items (the ledger's own
// stream); other records are errNotCommitment.
func streamSignal(r streamRecord, name string, commitments bool) (ora.NormalizedSignal, error) {
	if r.EventID == "" {
		return ora.NormalizedSignal{}, ora.Invalid("eventID", "required")
	}
	keys, err := attributes(r.DynamoDB.Keys)
	if err != nil {
		return ora.NormalizedSignal{}, err
	}
	newImage, err := attributes(r.DynamoDB.NewImage)
	if err != nil {
		return ora.NormalizedSignal{}, err
	}
	oldImage, err := attributes(r.DynamoDB.OldImage)
	if err != nil {
		return ora.NormalizedSignal{}, err
	}
	if commitments && !isCommitment(keys) && !isCommitment(newImage) && !isCommitment(oldImage) {
		return ora.NormalizedSignal{}, errNotCommitment
	}
	table := tableOfARN(r.EventSourceARN)
	if table == "" {
		return ora.NormalizedSignal{}, ora.Invalid("eventSourceARN", "required")
	}
	sec, frac := math.Modf(r.DynamoDB.ApproximateCreationDateTime)
	at := time.Unix(int64(sec), int64(frac*1e9)).Truncate(time.Millisecond)
	if r.DynamoDB.ApproximateCreationDateTime == 0 {
		return ora.NormalizedSignal{}, ora.Invalid("dynamodb.ApproximateCreationDateTime", "required")
	}
	event := strings.ToLower(r.EventName)
	payload, err := json.Marshal(map[string]any{
		"event": event, "keys": keys, "new": newImage, "old": oldImage, "sequence_number": r.DynamoDB.SequenceNumber,
	})
	if err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("dynamodb", "cannot encode the images: %v", err)
	}
	return ora.NormalizedSignal{
		Source:    ora.Source{Name: name, Table: table, Event: event},
		Timestamp: at,
		Payload:   payload,
		DedupKey:  table + "#" + r.EventID,
	}, nil
}

// tableOfARN is the table name of a table or stream ARN
// (arn:aws:dynamodb:REGION:ACCOUNT:table/NAME/stream/LABEL).
func tableOfARN(arn string) string {
	if _, rest, ok := strings.Cut(arn, ":table/"); ok {
		name, _, _ := strings.Cut(rest, "/")
		return name
	}
	return arn
}

func isCommitment(item map[string]any) bool {
	for _, attr := range []string{"type", "item_kind"} {
		if kind, _ := item[attr].(string); kind == CommitmentItemKind {
			return true
		}
	}
	pk, _ := item["PK"].(string)
	return strings.HasPrefix(pk, CommitmentKeyPrefix) || strings.HasPrefix(pk, "COM#")
}

// attributes converts a DynamoDB attribute-value map (the Streams JSON form)
// to plain JSON values: S as string, N as json.Number, B as base64 string, sets
// as arrays, M and L recursively.
func attributes(m map[string]json.RawMessage) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]any, len(m))
	for k, raw := range m {
		v, err := attribute(raw)
		if err != nil {
			return nil, ora.Invalid("dynamodb."+k, "%v", err)
		}
		out[k] = v
	}
	return out, nil
}

func attribute(raw json.RawMessage) (any, error) {
	var av map[string]json.RawMessage
	if err := json.Unmarshal(raw, &av); err != nil || len(av) != 1 {
		return nil, fmt.Errorf("not an attribute value")
	}
	for typ, v := range av {
		switch typ {
		case "S", "B":
			var s string
			err := json.Unmarshal(v, &s)
			return s, err
		case "N":
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, err
			}
			return json.Number(s), nil
		case "BOOL":
			var b bool
			err := json.Unmarshal(v, &b)
			return b, err
		case "NULL":
			return nil, nil
		case "SS", "BS":
			var ss []string
			err := json.Unmarshal(v, &ss)
			return ss, err
		case "NS":
			var ss []string
			if err := json.Unmarshal(v, &ss); err != nil {
				return nil, err
			}
			ns := make([]json.Number, len(ss))
			for i, s := range ss {
				ns[i] = json.Number(s)
			}
			return ns, nil
		case "M":
			var m map[string]json.RawMessage
			if err := json.Unmarshal(v, &m); err != nil {
				return nil, err
			}
			return attributes(m)
		case "L":
			var l []json.RawMessage
			if err := json.Unmarshal(v, &l); err != nil {
				return nil, err
			}
			out := make([]any, len(l))
			for i, x := range l {
				y, err := attribute(x)
				if err != nil {
					return nil, err
				}
				out[i] = y
			}
			return out, nil
		}
		return nil, fmt.Errorf("unknown attribute type %q", typ)
	}
	return nil, fmt.Errorf("empty attribute value")
}

func normalizeCommitment(raw []byte) (ora.NormalizedSignal, error) {
	var ch CommitmentChange
	if err := json.Unmarshal(raw, &ch); err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("raw", "not a commitment change: %v", err)
	}
	c := ch.Commitment
	if c.ID == "" {
		return ora.NormalizedSignal{}, ora.Invalid("commitment.id", "required")
	}
	at := c.OpenedAt
	if c.ClosedAt != nil {
		at = *c.ClosedAt
	}
	if at.IsZero() {
		return ora.NormalizedSignal{}, ora.Invalid("commitment.opened_at", "required")
	}
	payload, err := json.Marshal(map[string]any{"event": ch.Event, "commitment": c})
	if err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("commitment", "cannot encode: %v", err)
	}
	return ora.NormalizedSignal{
		Source:    ora.Source{Name: NameLedger, Table: "commitments", Event: ch.Event},
		Timestamp: at,
		Payload:   payload,
		DedupKey:  fmt.Sprintf("%s#%s#v%d", c.ID, c.Status, c.Version),
	}, nil
}
