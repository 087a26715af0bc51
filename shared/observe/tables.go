package observe

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ora-runtime/ora/shared/ora"
)

// EventSourceTable marks a TableRecord: a change of one of the user's tables.
const EventSourceTable = "ora:table"

// TableRecord is a DynamoDB Streams record of one of the user's tables, as
// the observer keeps it (the signal's Raw): the configured table's name,
// which the signal carries as its source name, and the record exactly as
// Lambda (or GetRecords, in `ora dev`) delivered it.
type TableRecord struct {
	EventSource string          `json:"eventSource"` // EventSourceTable
	Name        string          `json:"name"`
	Record      json.RawMessage `json:"record"`
}

// Stream event names a TableConfig may filter on.
var streamEvents = []string{"INSERT", "MODIFY", "REMOVE"}

// TableConfig is one of the user's DynamoDB tables whose stream becomes
// table signals. On AWS, StreamARN names the stream (ora:tables); in `ora
// dev`, Table names the table at Endpoint and its stream is read through the
// Streams API.
type TableConfig struct {
	// Name is the signal's source name (source.name in rules), e.g. tickets.
	Name string `json:"name" yaml:"name"`
	// StreamARN is the table's stream (AWS).
	StreamARN string `json:"stream_arn,omitempty" yaml:"stream_arn,omitempty"`
	// Table, Endpoint and Region locate the table in `ora dev` (DynamoDB
	// Local or AWS); Region defaults to us-east-1.
	Table    string `json:"table,omitempty" yaml:"table,omitempty"`
	Endpoint string `json:"endpoint,omitempty" yaml:"endpoint,omitempty"`
	Region   string `json:"region,omitempty" yaml:"region,omitempty"`
	// Events keeps only these stream events: INSERT, MODIFY, REMOVE (empty:
	// all).
	Events []string `json:"events,omitempty" yaml:"events,omitempty"`
	// NewImage is an EventBridge-style pattern on the new image in DynamoDB
	// JSON ({"status": {"S": ["open"]}}), as a Lambda event source mapping's
	// filter criteria take it; empty: every item.
	NewImage map[string]any `json:"new_image,omitempty" yaml:"new_image,omitempty"`
}

// Validate checks the config. Errors: EINVALID naming the key.
func (c TableConfig) Validate() error {
	if !sourceName.MatchString(c.Name) {
		return ora.Invalid("tables.name", "%q must be 1-64 letters, digits, '.', '-' or '_'", c.Name)
	}
	for _, e := range c.Events {
		if !slices.Contains(streamEvents, e) {
			return ora.Invalid("tables.events", "table %s: %q is not INSERT, MODIFY or REMOVE", c.Name, e)
		}
	}
	if c.NewImage != nil {
		if err := checkPattern(c.NewImage, "tables.new_image"); err != nil {
			return fmt.Errorf("table %s: %w", c.Name, err)
		}
	}
	return nil
}

// Pattern is the filter on a whole stream record (eventName and
// dynamodb.NewImage), the JSON a Lambda event source mapping's FilterCriteria
// takes; nil when the config filters nothing.
func (c TableConfig) Pattern() map[string]any {
	p := map[string]any{}
	if len(c.Events) > 0 {
		ev := make([]any, len(c.Events))
		for i, e := range c.Events {
			ev[i] = e
		}
		p["eventName"] = ev
	}
	if len(c.NewImage) > 0 {
		p["dynamodb"] = map[string]any{"NewImage": c.NewImage}
	}
	if len(p) == 0 {
		return nil
	}
	return p
}

// Matches reports whether a stream record (Lambda's JSON form) passes the
// config's filter.
func (c TableConfig) Matches(record []byte) bool {
	p := c.Pattern()
	if p == nil {
		return true
	}
	var v any
	if err := json.Unmarshal(record, &v); err != nil {
		return false
	}
	return matchPattern(p, v)
}

// UserTableChange captures one stream record of the user's table called
// name (its config's filter already applied). Errors: EINVALID, and the
// ledger's, debouncer's and wave starter's.
func (o *Observer) UserTableChange(ctx context.Context, name string, record []byte) (Receipt, error) {
	raw, err := json.Marshal(TableRecord{EventSource: EventSourceTable, Name: name, Record: record})
	if err != nil {
		return Receipt{}, ora.Invalid("record", "cannot encode: %v", err)
	}
	return o.capture(ctx, ora.SourceTable, raw, true)
}

func normalizeTableRecord(raw []byte) (ora.NormalizedSignal, error) {
	var tr TableRecord
	if err := json.Unmarshal(raw, &tr); err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("raw", "not a table record: %v", err)
	}
	if tr.Name == "" {
		return ora.NormalizedSignal{}, ora.Invalid("name", "required")
	}
	var r streamRecord
	if err := json.Unmarshal(tr.Record, &r); err != nil {
		return ora.NormalizedSignal{}, ora.Invalid("record", "not a DynamoDB Streams record: %v", err)
	}
	return streamSignal(r, tr.Name, false)
}

// userTable returns the configured table whose stream is arn.
func (o *Observer) userTable(arn string) (TableConfig, bool) {
	for _, t := range o.opts.Tables {
		if t.StreamARN != "" && t.StreamARN == arn {
			return t, true
		}
	}
	return TableConfig{}, false
}

// checkPattern requires an EventBridge-style pattern: objects whose leaves
// are arrays of values or of the operators matchPattern knows. Errors:
// EINVALID on field.
func checkPattern(p map[string]any, field string) error {
	for k, v := range p {
		switch x := v.(type) {
		case map[string]any:
			if err := checkPattern(x, field+"."+k); err != nil {
				return err
			}
		case []any:
			for _, m := range x {
				if op, ok := m.(map[string]any); ok {
					if len(op) != 1 {
						return ora.Invalid(field+"."+k, "an operator object has one key")
					}
					for name := range op {
						if !slices.Contains([]string{"prefix", "suffix", "exists", "anything-but", "numeric"}, name) {
							return ora.Invalid(field+"."+k, "%q is not prefix, suffix, exists, anything-but or numeric", name)
						}
					}
				}
			}
		default:
			return ora.Invalid(field+"."+k, "must be an array of values or an object (EventBridge pattern)")
		}
	}
	return nil
}

// matchPattern applies an EventBridge-style pattern to a decoded JSON value:
// every key of the pattern must match; an object recurses, an array matches
// when any of its values or operators matches the field (or, for an array
// field, any of its elements).
func matchPattern(p map[string]any, v any) bool {
	obj, _ := v.(map[string]any)
	for k, want := range p {
		got, present := obj[k]
		switch w := want.(type) {
		case map[string]any:
			if !present || !matchPattern(w, got) {
				return false
			}
		case []any:
			if !matchAny(w, got, present) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func matchAny(want []any, got any, present bool) bool {
	values := []any{got}
	if arr, ok := got.([]any); ok {
		values = arr
	}
	for _, w := range want {
		if op, ok := w.(map[string]any); ok {
			if matchOperator(op, values, present) {
				return true
			}
			continue
		}
		for _, g := range values {
			if present && equalJSON(w, g) {
				return true
			}
		}
	}
	return false
}

func matchOperator(op map[string]any, values []any, present bool) bool {
	for name, arg := range op {
		switch name {
		case "exists":
			want, _ := arg.(bool)
			return present == want
		case "prefix", "suffix":
			s, _ := arg.(string)
			for _, v := range values {
				if g, ok := v.(string); ok && present &&
					((name == "prefix" && strings.HasPrefix(g, s)) || (name == "suffix" && strings.HasSuffix(g, s))) {
					return true
				}
			}
		case "anything-but":
			if !present {
				return false
			}
			excluded, ok := arg.([]any)
			if !ok {
				excluded = []any{arg}
			}
			for _, v := range values {
				for _, x := range excluded {
					if equalJSON(x, v) {
						return false
					}
				}
			}
			return true
		case "numeric":
			conds, _ := arg.([]any)
			for _, v := range values {
				if n, ok := number(v); ok && present && numericHolds(conds, n) {
					return true
				}
			}
		}
	}
	return false
}

func numericHolds(conds []any, n float64) bool {
	if len(conds)%2 != 0 {
		return false
	}
	for i := 0; i < len(conds); i += 2 {
		op, _ := conds[i].(string)
		x, ok := number(conds[i+1])
		if !ok {
			return false
		}
		var holds bool
		switch op {
		case "=":
			holds = n == x
		case "<":
			holds = n < x
		case "<=":
			holds = n <= x
		case ">":
			holds = n > x
		case ">=":
			holds = n >= x
		}
		if !holds {
			return false
		}
	}
	return true
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func equalJSON(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return a == b
}
