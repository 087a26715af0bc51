package observe_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
)

var eventsSource = observe.SourceConfig{Name: "events", Type: observe.TypeHMAC, Secret: "ev-secret", Header: "X-Ora-Signature"}

func eventsObserver(t *testing.T) (*observe.Observer, *observetest.Ledger) {
	t.Helper()
	ledger := &observetest.Ledger{}
	obs, err := observe.New(ledger, &observetest.Waves{}, nil, func(o *observe.Options) {
		o.Now = func() time.Time { return now }
		o.Events = eventsSource
	})
	if err != nil {
		t.Fatal(err)
	}
	return obs, ledger
}

func signal(t *testing.T, ledger *observetest.Ledger, id string) ora.NormalizedSignal {
	t.Helper()
	entries, err := ledger.Entries(context.Background(), id)
	if err != nil || len(entries) != 1 {
		t.Fatalf("entries of %s: %v, %v", id, entries, err)
	}
	var sig ora.NormalizedSignal
	if err := json.Unmarshal(entries[0].Body, &sig); err != nil {
		t.Fatal(err)
	}
	return sig
}

// POST /events takes what `aws events put-events` sends (a PutEvents
// request, or the CLI's entries file), one entry, or an event as a rule
// delivers it; signed as an hmac source, the delivery id naming the events.
func TestPostEvents(t *testing.T) {
	ctx := context.Background()
	entries, err := os.ReadFile(filepath.Join("..", "..", "events", "event", "put-events-entries.json"))
	if err != nil {
		t.Fatal(err)
	}
	alarm, err := os.ReadFile(filepath.Join("..", "..", "events", "event", "cloudwatch-alarm-state-change.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, body           string
		wantN                int
		wantSource, wantType string
		wantTime             string
		wantCode             string
	}{
		{name: "PutEvents request", body: string(entries), wantN: 1, wantSource: "com.acme.tickets", wantType: "Ticket Escalated", wantTime: "2026-11-20T11:59:00Z"},
		{name: "entries file", body: `[{"Source":"app.orders","DetailType":"Order Placed","Detail":"{\"order\":7}"},{"Source":"app.orders","DetailType":"Order Placed","Detail":"{\"order\":8}","Time":1795175000}]`,
			wantN: 2, wantSource: "app.orders", wantType: "Order Placed", wantTime: now.UTC().Format(time.RFC3339)},
		{name: "one entry", body: `{"Source":"app.orders","DetailType":"Order Cancelled","Detail":"{}","Resources":["arn:aws:dynamodb:us-east-1:123456789012:table/orders"]}`,
			wantN: 1, wantSource: "app.orders", wantType: "Order Cancelled", wantTime: now.UTC().Format(time.RFC3339)},
		{name: "delivered event", body: string(alarm), wantN: 1, wantSource: "aws.cloudwatch", wantType: "CloudWatch Alarm State Change", wantTime: "2026-11-20T11:58:40Z"},
		{name: "detail not JSON", body: `{"Source":"a","DetailType":"b","Detail":"nope"}`, wantCode: ora.EINVALID},
		{name: "no detail-type", body: `{"Source":"a","Detail":"{}"}`, wantCode: ora.EINVALID},
		{name: "unknown field", body: `{"Source":"a","DetailType":"b","Detail":"{}","Bus":"x"}`, wantCode: ora.EINVALID},
		{name: "eleven entries", body: `{"Entries":[` + repeatEntry(11) + `]}`, wantCode: ora.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs, ledger := eventsObserver(t)
			h, err := observe.SignDelivery(eventsSource, []byte(tt.body), now, "d-"+tt.name)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := obs.PostEvents(ctx, h, []byte(tt.body))
			if tt.wantCode != "" {
				if ora.ErrorCode(err) != tt.wantCode || ledger.Len() != 0 {
					t.Fatalf("err %v (%d entries), want %s and nothing written", err, ledger.Len(), tt.wantCode)
				}
				return
			}
			if err != nil || len(recs) != tt.wantN {
				t.Fatalf("receipts %+v, %v; want %d", recs, err, tt.wantN)
			}
			sig := signal(t, ledger, recs[0].SignalID)
			if sig.Source.Type != ora.SourceEvent || sig.Source.Provider != tt.wantSource || sig.Source.EventType != tt.wantType ||
				sig.Timestamp.Format(time.RFC3339) != tt.wantTime || sig.DedupKey != recs[0].EventID {
				t.Errorf("signal %+v at %v key %s; want %s %q at %s keyed by event %s", sig.Source, sig.Timestamp, sig.DedupKey, tt.wantSource, tt.wantType, tt.wantTime, recs[0].EventID)
			}
			again, err := obs.PostEvents(ctx, h, []byte(tt.body))
			if err != nil || len(again) != tt.wantN || !again[0].Duplicate || again[0].SignalID != recs[0].SignalID {
				t.Errorf("the same delivery again: %+v, %v; want duplicates of %+v", again, err, recs)
			}
		})
	}
}

func repeatEntry(n int) string {
	s := ""
	for i := range n {
		if i > 0 {
			s += ","
		}
		s += `{"Source":"a","DetailType":"b","Detail":"{}"}`
	}
	return s
}

func TestPostEventsVerifies(t *testing.T) {
	ctx := context.Background()
	body := []byte(`{"Source":"app","DetailType":"Ping","Detail":"{}"}`)
	obs, ledger := eventsObserver(t)
	wrong := eventsSource
	wrong.Secret = "not-the-secret"
	forged, _ := observe.SignDelivery(wrong, body, now, "d-1")
	stale, _ := observe.SignDelivery(eventsSource, body, now.Add(-observe.HMACTolerance-time.Minute), "d-2")
	for name, h := range map[string]http.Header{"wrong secret": forged, "stale": stale, "unsigned": {"Content-Type": {"application/json"}}} {
		t.Run(name, func(t *testing.T) {
			if _, err := obs.PostEvents(ctx, h, body); ora.ErrorCode(err) != ora.EUNAUTHORIZED || ledger.Len() != 0 {
				t.Errorf("err %v, %d entries; want EUNAUTHORIZED and nothing written", err, ledger.Len())
			}
		})
	}
	none, err := observe.New(ledger, &observetest.Waves{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := none.PostEvents(ctx, forged, body); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("no events source: %v, want ENOTFOUND", err)
	}
}

// Rules filter a user table's records as a Lambda event source mapping's
// filter criteria do.
func TestTablePattern(t *testing.T) {
	rec := func(event, status, priority string) []byte {
		return []byte(`{"eventName":"` + event + `","dynamodb":{"NewImage":{"status":{"S":"` + status + `"},"priority":{"N":"` + priority + `"},"tags":{"SS":["vip","eu"]}}}}`)
	}
	tests := []struct {
		name    string
		cfg     observe.TableConfig
		record  []byte
		matches bool
	}{
		{"no filter", observe.TableConfig{Name: "t"}, rec("REMOVE", "x", "1"), true},
		{"event kept", observe.TableConfig{Name: "t", Events: []string{"INSERT"}}, rec("INSERT", "open", "1"), true},
		{"event dropped", observe.TableConfig{Name: "t", Events: []string{"INSERT"}}, rec("MODIFY", "open", "1"), false},
		{"value", observe.TableConfig{Name: "t", NewImage: map[string]any{"status": map[string]any{"S": []any{"open"}}}}, rec("INSERT", "open", "1"), true},
		{"other value", observe.TableConfig{Name: "t", NewImage: map[string]any{"status": map[string]any{"S": []any{"open"}}}}, rec("INSERT", "closed", "1"), false},
		{"prefix", observe.TableConfig{Name: "t", NewImage: map[string]any{"status": map[string]any{"S": []any{map[string]any{"prefix": "op"}}}}}, rec("INSERT", "open", "1"), true},
		{"anything-but", observe.TableConfig{Name: "t", NewImage: map[string]any{"status": map[string]any{"S": []any{map[string]any{"anything-but": []any{"closed"}}}}}}, rec("INSERT", "closed", "1"), false},
		{"exists", observe.TableConfig{Name: "t", NewImage: map[string]any{"assignee": []any{map[string]any{"exists": false}}}}, rec("INSERT", "open", "1"), true},
		{"set element", observe.TableConfig{Name: "t", NewImage: map[string]any{"tags": map[string]any{"SS": []any{"vip"}}}}, rec("INSERT", "open", "1"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := tt.cfg.Matches(tt.record); got != tt.matches {
				t.Errorf("Matches = %v, want %v (pattern %v)", got, tt.matches, tt.cfg.Pattern())
			}
		})
	}
	bad := observe.TableConfig{Name: "t", Events: []string{"UPSERT"}}
	if err := bad.Validate(); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("event UPSERT: %v, want EINVALID", err)
	}
	bad = observe.TableConfig{Name: "t", NewImage: map[string]any{"status": "open"}}
	if err := bad.Validate(); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("a bare value in the pattern: %v, want EINVALID", err)
	}
}
