package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
)

type fixture struct {
	h      Handler
	ledger *sqlite.DB
	waves  *observetest.Waves
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ora.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	waves := &observetest.Waves{}
	obs, err := observe.New(db, waves, nil, func(o *observe.Options) { o.Debouncer = db })
	if err != nil {
		t.Fatal(err)
	}
	return fixture{h: Handler{Observer: obs}, ledger: db, waves: waves}
}

func invoke(t *testing.T, h Handler, payload []byte) events.DynamoDBEventResponse {
	t.Helper()
	out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), payload)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	var resp events.DynamoDBEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestReplayEvents(t *testing.T) {
	// The commitment record each sample carries, and the signal whose
	// signal-received insert it carries (the outbox: its wave is started);
	// other records must be skipped.
	want := map[string]struct{ eventID, event, status, recorded string }{
		"dynamodb-insert.json": {"c4ca4238a0b923820dcc509a6f75849b", "insert", "open", "sig_5d1e0c7a9b3f2e4d6c8a0b1e2f"},
		"dynamodb-modify.json": {"eccbc87e4b5ce2fe28308fd9f2a7baf3", "modify", "closed", ""},
		"dynamodb-remove.json": {"a87ff679a2f3e71d9181a67b7542122c", "remove", "", ""},
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "table", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in events/table: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("no expectation for events/table/%s: add one", name)
			}
			payload, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fx := newFixture(t)
			if resp := invoke(t, fx.h, payload); len(resp.BatchItemFailures) != 0 {
				t.Fatalf("batch item failures = %+v, want none", resp.BatchItemFailures)
			}
			id := observe.SignalID(observe.NameDynamoDB, "ora-ledger#"+w.eventID)
			entries, err := fx.ledger.Entries(context.Background(), id)
			if err != nil || len(entries) != 1 || entries[0].Kind != ora.KindSignalReceived {
				t.Fatalf("entries = %+v, %v; want one signal-received", entries, err)
			}
			var sig ora.NormalizedSignal
			_ = json.Unmarshal(entries[0].Body, &sig)
			var p struct {
				New map[string]any `json:"new"`
			}
			_ = json.Unmarshal(sig.Payload, &p)
			if sig.Source.Table != "ora-ledger" || sig.Source.Event != w.event || p.New["status"] != nilIfEmpty(w.status) {
				t.Errorf("signal source %+v new status %v; want %s %q", sig.Source, p.New["status"], w.event, w.status)
			}
			waves := []string{id}
			if w.recorded != "" {
				waves = append(waves, w.recorded)
				sort.Strings(waves)
			}
			if got := fx.waves.Started(); !slices.Equal(got, waves) {
				t.Errorf("waves = %v, want just %v (other records skipped)", got, waves)
			}
			if resp := invoke(t, fx.h, payload); len(resp.BatchItemFailures) != 0 || len(fx.waves.Started()) != len(waves) {
				t.Errorf("retried batch: failures %+v, waves %v; want none and still one wave", resp.BatchItemFailures, fx.waves.Started())
			}
		})
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func TestFailedRecordsAreBatchItemFailures(t *testing.T) {
	fx := newFixture(t)
	fx.waves.Fail = func(string) error { return ora.Transient(errors.New("throttled"), "start") }
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "table", "dynamodb-insert.json"))
	if err != nil {
		t.Fatal(err)
	}
	resp := invoke(t, fx.h, b)
	if len(resp.BatchItemFailures) != 2 || resp.BatchItemFailures[0].ItemIdentifier != "111100000000012345678901" ||
		resp.BatchItemFailures[1].ItemIdentifier != "111200000000012345678902" {
		t.Errorf("batch item failures = %+v, want the commitment's and the recorded signal's sequence numbers", resp.BatchItemFailures)
	}
}
