package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
	"github.com/ora-runtime/ora/shared/taskerr"
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
	obs, err := observe.New(db, waves, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{h: Handler{Observer: obs}, ledger: db, waves: waves}
}

func invoke(t *testing.T, h Handler, payload []byte) Result {
	t.Helper()
	out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), payload)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	var r Result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReplayEvents(t *testing.T) {
	// What each sample becomes: its kind, the source fields rules match, and
	// its dedup key (the event id; S3's the object and its sequencer).
	// rejected: not an event a rule delivers (the POST /events body).
	want := map[string]struct {
		kind                     ora.SourceKind
		name, provider, evType   string
		bucket, path, event, key string
		rejected                 bool
	}{
		"cloudwatch-alarm-state-change.json": {kind: ora.SourceEvent, name: observe.NameEvents, provider: "aws.cloudwatch",
			evType: "CloudWatch Alarm State Change", key: "6f1d3a2e-8c4b-4f6e-9a51-0d2b7c9e4a13"},
		"cloudwatch-alarm-ok.json": {kind: ora.SourceEvent, name: observe.NameEvents, provider: "aws.cloudwatch",
			evType: "CloudWatch Alarm State Change", key: "0b7e5c19-3d2a-4e8f-b6c4-71a9e2d58f30"},
		"codepipeline-execution-failed.json": {kind: ora.SourceEvent, name: observe.NameEvents, provider: "aws.codepipeline",
			evType: "CodePipeline Pipeline Execution State Change", key: "a3f8e217-5c6b-4d09-9e1f-8b2c7d4a6e05"},
		"guardduty-finding.json": {kind: ora.SourceEvent, name: observe.NameEvents, provider: "aws.guardduty",
			evType: "GuardDuty Finding", key: "d41f0b8c-2e7a-4c95-b3d6-9f8e1a2c5b74"},
		"ec2-instance-state-change.json": {kind: ora.SourceEvent, name: observe.NameEvents, provider: "aws.ec2",
			evType: "EC2 Instance State-change Notification", key: "5e9a2c7d-1b4f-4a83-a6e2-0c9d8b7f3a41"},
		"s3-object-created.json": {kind: ora.SourceObject, name: observe.NameS3, bucket: "acme-invoices",
			path: "incoming/2026/INV-20417.pdf", event: "create", key: "s3://acme-invoices/incoming/2026/INV-20417.pdf#00674DB8F0A1C2D3E4"},
		"put-events-entries.json": {rejected: true},
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "event", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in events/event: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("no expectation for events/event/%s: add one", name)
			}
			payload, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fx := newFixture(t)
			if w.rejected {
				if r := invoke(t, fx.h, payload); !r.Rejected || len(fx.waves.Started()) != 0 {
					t.Errorf("result %+v, waves %v; want rejected and no wave", r, fx.waves.Started())
				}
				return
			}
			id := observe.SignalID(w.name, w.key)
			for i, wantDup := range []bool{false, true} { // the second is EventBridge's or Lambda's retry
				r := invoke(t, fx.h, payload)
				if r.Rejected || r.SignalID != id || r.Duplicate != wantDup {
					t.Errorf("invoke %d: %+v, want signal %s duplicate %v", i, r, id, wantDup)
				}
			}
			entries, err := fx.ledger.Entries(context.Background(), id)
			if err != nil || len(entries) != 1 || entries[0].Kind != ora.KindSignalReceived {
				t.Fatalf("entries = %+v, %v; want one signal-received", entries, err)
			}
			var sig ora.NormalizedSignal
			if err := json.Unmarshal(entries[0].Body, &sig); err != nil {
				t.Fatal(err)
			}
			s := sig.Source
			if s.Type != w.kind || s.Provider != w.provider || s.EventType != w.evType || s.Bucket != w.bucket || s.Path != w.path || s.Event != w.event {
				t.Errorf("source = %+v, want %+v", s, w)
			}
			if got := fx.waves.Started(); !slices.Equal(got, []string{id}) {
				t.Errorf("waves = %v, want just %s", got, id)
			}
			again, err := observe.Normalize(sig.Source.Type, sig.Raw)
			if err != nil || again.ID != sig.ID || string(again.Payload) != string(sig.Payload) {
				t.Errorf("normalizing the stored raw again: %v, %s; want the same signal", err, again.ID)
			}
		})
	}
}

func TestFailureIsRetried(t *testing.T) {
	fx := newFixture(t)
	fx.waves.Fail = func(string) error { return ora.Transient(errors.New("throttled"), "start") }
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "event", "guardduty-finding.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = fx.h.Handle(context.Background(), b)
	var transient *taskerr.TransientError
	if !errors.As(err, &transient) {
		t.Errorf("wave start throttled: %T %v, want *taskerr.TransientError (the invocation is retried)", err, err)
	}
}
