package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
)

var now = time.Unix(1795176000, 0).UTC()

var sources = []observe.SourceConfig{
	{Name: "github", Type: observe.TypeGitHub, Secret: "gh-secret"},
	{Name: "slack", Type: observe.TypeSlack, Secret: "slack-secret"},
	{Name: "stripe", Type: observe.TypeStripe, Secret: "whsec_stripe"},
	{Name: "ci", Type: observe.TypeHMAC, Secret: "ci-secret", Header: "X-CI-Signature", Hash: "sha1"},
	{Name: "open", Type: observe.TypeNone},
}

type env struct {
	obs    *observe.Observer
	ledger *observetest.Ledger
	waves  *observetest.Waves
	clock  *clock
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

func newEnv(t *testing.T, opts ...func(*observe.Options)) *env {
	t.Helper()
	e := &env{ledger: &observetest.Ledger{}, waves: &observetest.Waves{}, clock: &clock{t: now}}
	opts = append([]func(*observe.Options){func(o *observe.Options) {
		o.Now = e.clock.Now
		o.Debouncer = &observetest.Debouncer{Now: e.clock.Now}
	}}, opts...)
	obs, err := observe.New(e.ledger, e.waves, sources, opts...)
	if err != nil {
		t.Fatal(err)
	}
	e.obs = obs
	return e
}

func signed(t *testing.T, source string, body string) http.Header {
	t.Helper()
	for _, s := range sources {
		if s.Name == source {
			h, err := observe.Sign(s, []byte(body), now)
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
	}
	t.Fatalf("no source %s", source)
	return nil
}

func readEvent(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stored returns the signal-received entry of id and its signal.
func stored(t *testing.T, l *observetest.Ledger, id string) (ora.Entry, ora.NormalizedSignal) {
	t.Helper()
	entries, err := l.Entries(context.Background(), id)
	if err != nil {
		t.Fatalf("entries of %s: %v", id, err)
	}
	if len(entries) != 1 || entries[0].Kind != ora.KindSignalReceived {
		t.Fatalf("entries of %s = %+v, want one signal-received", id, entries)
	}
	var s ora.NormalizedSignal
	if err := json.Unmarshal(entries[0].Body, &s); err != nil {
		t.Fatal(err)
	}
	return entries[0], s
}

const pushBody = `{"ref":"refs/heads/main","commits":[{"id":"abc"}],"repository":{"full_name":"o/r"}}`

func TestWebhookCapturesAndStartsOneWave(t *testing.T) {
	e := newEnv(t)
	h := signed(t, "github", pushBody)
	r, err := e.obs.Webhook(context.Background(), "github", h, []byte(pushBody))
	if err != nil {
		t.Fatal(err)
	}
	wantKey := observe.GitHubDedupKey([]byte(pushBody), now)
	wantID := observe.SignalID("github", wantKey)
	if r.SignalID != wantID || r.WaveID != wantID || r.Duplicate {
		t.Fatalf("receipt = %+v, want ids %s, not duplicate", r, wantID)
	}
	if len(r.SignalID) != len("sig_")+26 {
		t.Errorf("signal id %q: want sig_ and 26 hex digits", r.SignalID)
	}
	entry, sig := stored(t, e.ledger, r.SignalID)
	if entry.Meta["source"] != "github" || entry.Meta["raw_digest"] != sig.RawDigest || entry.Meta["timestamp"] != now.Format(time.RFC3339Nano) {
		t.Errorf("meta = %v", entry.Meta)
	}
	if sig.Source.Type != ora.SourceWebhook || sig.Source.Provider != "github" || sig.Source.EventType != "push" {
		t.Errorf("source = %+v", sig.Source)
	}
	if sig.DedupKey != wantKey || !bytes.Equal(sig.Payload, []byte(pushBody)) {
		t.Errorf("dedup key %q payload %s", sig.DedupKey, sig.Payload)
	}
	if !sig.NormalizedAt.Equal(now) || entry.AuthorType != "" {
		t.Errorf("normalized_at %v author %q", sig.NormalizedAt, entry.AuthorType)
	}
	in, ok := e.waves.Input(r.SignalID)
	if !ok {
		t.Fatalf("wave %s not started; started %v", r.SignalID, e.waves.Started())
	}
	var input map[string]any
	_ = json.Unmarshal(in, &input)
	if input["signal_id"] != r.SignalID || input["escalation_timeout_seconds"] != float64(86400) {
		t.Errorf("wave input = %s", in)
	}
}

func TestWebhookRedelivery(t *testing.T) {
	e := newEnv(t)
	h := signed(t, "github", pushBody)
	first, err := e.obs.Webhook(context.Background(), "github", h, []byte(pushBody))
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Add(time.Minute)
	again, err := e.obs.Webhook(context.Background(), "github", h, []byte(pushBody))
	if err != nil {
		t.Fatal(err)
	}
	if again.SignalID != first.SignalID || again.WaveID != first.WaveID || !again.Duplicate {
		t.Errorf("redelivery receipt = %+v, want the first's ids %+v and duplicate", again, first)
	}
	if got := e.waves.Started(); len(got) != 1 {
		t.Errorf("waves started = %v, want one", got)
	}
	if _, sig := stored(t, e.ledger, first.SignalID); !sig.NormalizedAt.Equal(now) {
		t.Errorf("stored signal normalized at %v, want the first delivery's %v", sig.NormalizedAt, now)
	}
}

func TestRedeliveryStartsTheWaveTheFirstDeliveryFailedToStart(t *testing.T) {
	e := newEnv(t)
	fail := true
	e.waves.Fail = func(string) error {
		if fail {
			return ora.Transient(errors.New("throttled"), "start execution")
		}
		return nil
	}
	h := signed(t, "github", pushBody)
	_, err := e.obs.Webhook(context.Background(), "github", h, []byte(pushBody))
	if ora.ErrorCode(err) != ora.ETRANSIENT {
		t.Fatalf("first delivery: %v, want %s", err, ora.ETRANSIENT)
	}
	if e.ledger.Len() != 1 || len(e.waves.Started()) != 0 {
		t.Fatalf("after the failed start: %d entries, waves %v; want 1 entry, no wave", e.ledger.Len(), e.waves.Started())
	}
	fail = false
	r, err := e.obs.Webhook(context.Background(), "github", h, []byte(pushBody))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Duplicate || len(e.waves.Started()) != 1 || e.waves.Started()[0] != r.SignalID {
		t.Errorf("redelivery: receipt %+v, waves %v; want duplicate and its wave started", r, e.waves.Started())
	}
	if e.ledger.Len() != 1 {
		t.Errorf("entries = %d, want 1", e.ledger.Len())
	}
}

func TestConcurrentDuplicatesStartOneWave(t *testing.T) {
	e := newEnv(t)
	h := signed(t, "github", pushBody)
	const n = 200
	receipts := make([]observe.Receipt, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			receipts[i], errs[i] = e.obs.Webhook(context.Background(), "github", h.Clone(), []byte(pushBody))
		}()
	}
	close(start)
	wg.Wait()
	fresh := 0
	for i, r := range receipts {
		if errs[i] != nil {
			t.Fatalf("delivery %d: %v", i, errs[i])
		}
		if r.SignalID != receipts[0].SignalID || r.WaveID != receipts[0].WaveID {
			t.Fatalf("delivery %d ids %+v differ from %+v", i, r, receipts[0])
		}
		if !r.Duplicate {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("non-duplicate receipts = %d, want 1", fresh)
	}
	if got := e.waves.Started(); len(got) != 1 || got[0] != receipts[0].SignalID {
		t.Errorf("waves started = %v, want just %s", got, receipts[0].SignalID)
	}
	if e.ledger.Len() != 1 {
		t.Errorf("entries = %d, want 1", e.ledger.Len())
	}
}

func TestWebhookRejectionsWriteNothing(t *testing.T) {
	big := `{"pad":"` + strings.Repeat("x", 300<<10) + `"}`
	tests := []struct {
		name     string
		source   string
		header   func(t *testing.T) http.Header
		body     string
		wantCode string
		tooLarge bool
	}{
		{"unknown source", "gitlab", func(*testing.T) http.Header { return http.Header{} }, pushBody, ora.ENOTFOUND, false},
		{"too large", "github", func(t *testing.T) http.Header { return signed(t, "github", big) }, big, ora.EINVALID, true},
		{"missing signature", "github", func(*testing.T) http.Header {
			return http.Header{"X-Github-Delivery": {"d1"}, "X-Github-Event": {"push"}}
		}, pushBody, ora.EUNAUTHORIZED, false},
		{"forged signature", "github", func(t *testing.T) http.Header { return signed(t, "ci", pushBody) }, pushBody, ora.EUNAUTHORIZED, false},
		{"stale slack", "slack", func(t *testing.T) http.Header {
			h, _ := observe.Sign(sources[1], []byte(`{"type":"event_callback","event_id":"Ev1"}`), now.Add(-10*time.Minute))
			return h
		}, `{"type":"event_callback","event_id":"Ev1"}`, ora.EUNAUTHORIZED, false},
		{"malformed body", "github", func(t *testing.T) http.Header { return signed(t, "github", `{"ref":`) }, `{"ref":`, ora.EINVALID, false},
		{"array body", "stripe", func(t *testing.T) http.Header { return signed(t, "stripe", `[1]`) }, `[1]`, ora.EINVALID, false},
		{"stripe event without id", "stripe", func(t *testing.T) http.Header { return signed(t, "stripe", `{"type":"x"}`) }, `{"type":"x"}`, ora.EINVALID, false},
		{"github without delivery", "github", func(t *testing.T) http.Header {
			h := signed(t, "github", pushBody)
			h.Del("X-GitHub-Delivery")
			return h
		}, pushBody, ora.EINVALID, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			_, err := e.obs.Webhook(context.Background(), tt.source, tt.header(t), []byte(tt.body))
			if got := ora.ErrorCode(err); got != tt.wantCode {
				t.Fatalf("code = %q (%v), want %q", got, err, tt.wantCode)
			}
			var tl *observe.TooLargeError
			if errors.As(err, &tl) != tt.tooLarge {
				t.Errorf("TooLargeError = %v, want %v", errors.As(err, &tl), tt.tooLarge)
			}
			if tt.tooLarge && ora.ErrorField(err) != "body" {
				t.Errorf("field = %q, want body", ora.ErrorField(err))
			}
			if e.ledger.Len() != 0 || e.waves.Calls() != 0 {
				t.Errorf("wrote %d entries and %d wave starts, want none", e.ledger.Len(), e.waves.Calls())
			}
		})
	}
}

func TestSlack(t *testing.T) {
	t.Run("url_verification answers the challenge and writes nothing", func(t *testing.T) {
		e := newEnv(t)
		body := `{"token":"t","challenge":"abc123","type":"url_verification"}`
		r, err := e.obs.Webhook(context.Background(), "slack", signed(t, "slack", body), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if r != (observe.Receipt{Challenge: "abc123"}) || e.ledger.Len() != 0 || e.waves.Calls() != 0 {
			t.Errorf("receipt %+v, %d entries, %d starts; want only the challenge", r, e.ledger.Len(), e.waves.Calls())
		}
	})
	t.Run("a retry is the same signal", func(t *testing.T) {
		e := newEnv(t)
		body := `{"type":"event_callback","event_id":"Ev42","event_time":1795175990,"event":{"type":"app_mention","text":"hi"}}`
		first, err := e.obs.Webhook(context.Background(), "slack", signed(t, "slack", body), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		h := signed(t, "slack", body)
		h.Set("X-Slack-Retry-Num", "1")
		h.Set("X-Slack-Retry-Reason", "http_timeout")
		retry, err := e.obs.Webhook(context.Background(), "slack", h, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if !retry.Duplicate || retry.SignalID != first.SignalID || first.SignalID != observe.SignalID("slack", "Ev42") {
			t.Errorf("first %+v retry %+v", first, retry)
		}
		_, sig := stored(t, e.ledger, first.SignalID)
		if sig.Source.EventType != "app_mention" || !sig.Timestamp.Equal(time.Unix(1795175990, 0)) {
			t.Errorf("event type %q timestamp %v", sig.Source.EventType, sig.Timestamp)
		}
	})
	t.Run("form-encoded slash command", func(t *testing.T) {
		e := newEnv(t)
		body := "command=%2Fora&text=status&user_id=U1"
		h := signed(t, "slack", body)
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		r, err := e.obs.Webhook(context.Background(), "slack", h, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		_, sig := stored(t, e.ledger, r.SignalID)
		if string(sig.Payload) != `{"command":"/ora","text":"status","user_id":"U1"}` {
			t.Errorf("payload = %s", sig.Payload)
		}
	})
}

func TestGenericSources(t *testing.T) {
	e := newEnv(t)
	body := `{"type":"build.finished","status":"green"}`
	h, err := observe.SignDelivery(sources[3], []byte(body), now, "build-981")
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.obs.Webhook(context.Background(), "ci", h, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if r.SignalID != observe.SignalID("ci", "build-981") {
		t.Errorf("id = %s, want the one of the Idempotency-Key", r.SignalID)
	}
	_, sig := stored(t, e.ledger, r.SignalID)
	if sig.Source.Provider != "hmac" || sig.Source.EventType != "build.finished" {
		t.Errorf("source = %+v", sig.Source)
	}
	r2, err := e.obs.Webhook(context.Background(), "open", http.Header{}, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if r2.SignalID != observe.SignalID("open", "body:"+ora.Digest([]byte(body))) {
		t.Errorf("none source id = %s, want the one of the body digest", r2.SignalID)
	}
}

// The witness's check: normalizing a stored signal's raw bytes again gives the
// stored signal, except normalized_at.
func TestNormalizeReproducesStoredSignals(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var ids []string
	add := func(r observe.Receipt, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.SignalID)
	}
	add(e.obs.Webhook(ctx, "github", signed(t, "github", pushBody), []byte(pushBody)))
	stripeBody := `{"id":"evt_9","type":"invoice.paid","created":1795175000,"data":{"object":{"amount":12.50}}}`
	add(e.obs.Webhook(ctx, "stripe", signed(t, "stripe", stripeBody), []byte(stripeBody)))
	add(e.obs.Schedule(ctx, readEvent(t, "schedule/scheduler-nightly-review.json")))
	for _, f := range []string{"object/s3-object-created.json", "table/dynamodb-modify.json"} {
		var ev struct{ Records []json.RawMessage }
		_ = json.Unmarshal(readEvent(t, f), &ev)
		if strings.HasPrefix(f, "object") {
			add(e.obs.Object(ctx, ev.Records[0]))
		} else {
			add(e.obs.TableChange(ctx, ev.Records[0]))
		}
	}
	add(e.obs.CommitmentChanged(ctx, "insert", ora.Commitment{ID: "cmt_1", Title: "t", Status: "open", OpenedAt: now, Version: 1}))
	for _, id := range ids {
		_, sig := stored(t, e.ledger, id)
		again, err := observe.Normalize(sig.Source.Type, sig.Raw)
		if err != nil {
			t.Fatalf("%s: normalize: %v", id, err)
		}
		again.NormalizedAt = sig.NormalizedAt
		a, _ := json.Marshal(again)
		b, _ := json.Marshal(sig)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: normalized again\n%s\nwant\n%s", id, a, b)
		}
	}
}

func TestSchedule(t *testing.T) {
	tests := []struct {
		file, wantJob, wantKey, wantExpr string
	}{
		{"schedule/scheduler-nightly-review.json", "nightly-review", "nightly-review@2026-11-20T03:00:00Z", "cron(0 3 * * ? *)"},
		{"schedule/eventbridge-scheduled-event.json", "hourly-sync", "hourly-sync@2026-11-20T12:00:00Z", ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			e := newEnv(t)
			r, err := e.obs.Schedule(context.Background(), readEvent(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			_, sig := stored(t, e.ledger, r.SignalID)
			if sig.Source.JobName != tt.wantJob || sig.DedupKey != tt.wantKey || sig.Source.Schedule != tt.wantExpr {
				t.Errorf("source %+v dedup %q; want job %s key %s", sig.Source, sig.DedupKey, tt.wantJob, tt.wantKey)
			}
			if r.SignalID != observe.SignalID(observe.NameSchedule, tt.wantKey) {
				t.Errorf("id %s", r.SignalID)
			}
		})
	}
	t.Run("no job", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.obs.Schedule(context.Background(), []byte(`{"scheduled_time":"2026-11-20T03:00:00Z"}`))
		if ora.ErrorField(err) != "job" || e.ledger.Len() != 0 {
			t.Errorf("err %v, %d entries; want EINVALID on job and nothing written", err, e.ledger.Len())
		}
	})
}

func TestScheduler(t *testing.T) {
	e := newEnv(t)
	if _, err := observe.NewScheduler(e.obs, []observe.Job{{Name: "bad", Expression: "every day"}}); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("bad expression: %v, want EINVALID", err)
	}
	if _, err := observe.NewScheduler(e.obs, []observe.Job{{Name: "a", Expression: "@hourly"}, {Name: "a", Expression: "@daily"}}); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("duplicate job: %v, want EINVALID", err)
	}
	job := observe.Job{Name: "hourly", Expression: "0 * * * *"}
	s, err := observe.NewScheduler(e.obs, []observe.Job{job})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 20, 13, 0, 0, 0, time.UTC)
	r1, err := s.Fire(context.Background(), job, at)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Fire(context.Background(), job, at)
	if err != nil {
		t.Fatal(err)
	}
	r3, err := s.Fire(context.Background(), job, at.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r1.SignalID != observe.SignalID("schedule", "hourly@2026-11-20T13:00:00Z") || !r2.Duplicate || r3.Duplicate || r3.SignalID == r1.SignalID {
		t.Errorf("firings %+v %+v %+v: want one signal per scheduled time", r1, r2, r3)
	}
	if got := len(e.waves.Started()); got != 2 {
		t.Errorf("waves = %d, want 2", got)
	}
}

func TestObjects(t *testing.T) {
	e := newEnv(t)
	out, err := e.obs.Objects(context.Background(), readEvent(t, "object/s3-object-created.json"))
	if err != nil || len(out) != 1 || out[0].Err != nil {
		t.Fatalf("outcomes %+v, err %v", out, err)
	}
	_, sig := stored(t, e.ledger, out[0].Receipt.SignalID)
	wantKey := "s3://ora-inbox-123456789012/reports/2026-11-20/daily summary.json#0055AED6DCD90281E5"
	if sig.Source.Path != "reports/2026-11-20/daily summary.json" || sig.Source.Event != "create" || sig.DedupKey != wantKey {
		t.Errorf("source %+v dedup %q; want the decoded key, create, %s", sig.Source, sig.DedupKey, wantKey)
	}
	if out[0].Ref != "ora-inbox-123456789012/reports/2026-11-20/daily+summary.json" {
		t.Errorf("ref = %q", out[0].Ref)
	}
	out, err = e.obs.Objects(context.Background(), []byte(`{"Records":[{"eventSource":"aws:s3","eventName":"ObjectRestore:Completed"}]}`))
	if err != nil || ora.ErrorCode(out[0].Err) != ora.EINVALID {
		t.Errorf("restore event: %+v %v, want an EINVALID outcome", out, err)
	}
	if _, err := e.obs.Objects(context.Background(), []byte(`{"detail":{}}`)); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("not a notification: %v, want EINVALID", err)
	}
}

func TestTableChanges(t *testing.T) {
	e := newEnv(t)
	out, err := e.obs.TableChanges(context.Background(), readEvent(t, "table/dynamodb-insert.json"))
	if err != nil || len(out) != 2 {
		t.Fatalf("outcomes %+v, err %v", out, err)
	}
	if out[0].Err != nil || out[0].Skipped || out[1].Skipped || out[1].Err != nil || !out[1].Receipt.Duplicate {
		t.Fatalf("outcomes %+v: want the commitment captured and the recorded signal's wave started", out)
	}
	if _, ok := e.waves.Input(out[1].Receipt.WaveID); !ok {
		t.Errorf("waves %v: want the recorded signal %s's wave started", e.waves.Started(), out[1].Receipt.WaveID)
	}
	_, sig := stored(t, e.ledger, out[0].Receipt.SignalID)
	var p struct {
		New map[string]any `json:"new"`
	}
	_ = json.Unmarshal(sig.Payload, &p)
	body, _ := p.New["body"].(map[string]any)
	if sig.Source.Table != "ora-ledger" || sig.Source.Event != "insert" || p.New["title"] != "Reply to the customer about order ord_1042" ||
		body["due_hours"] != float64(24) || len(body["tags"].([]any)) != 2 {
		t.Errorf("source %+v payload %s", sig.Source, sig.Payload)
	}
	if e.ledger.Len() != 1 {
		t.Errorf("entries = %d, want 1", e.ledger.Len())
	}
}

func TestDebounce(t *testing.T) {
	ctx := context.Background()
	c := ora.Commitment{ID: "cmt_7", Title: "t", Status: "open", OpenedAt: now, Version: 1}
	t.Run("a repeat within the window is the first's duplicate", func(t *testing.T) {
		e := newEnv(t)
		appends := 0
		e.ledger.AppendHook = func(ora.Entry) error { appends++; return nil }
		first, err := e.obs.CommitmentChanged(ctx, "insert", c)
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Add(100 * time.Millisecond)
		repeat, err := e.obs.CommitmentChanged(ctx, "insert", c)
		if err != nil {
			t.Fatal(err)
		}
		if !repeat.Duplicate || repeat.SignalID != first.SignalID || appends != 1 {
			t.Errorf("repeat %+v after %d appends; want a duplicate that tried no second append", repeat, appends)
		}
		e.clock.Add(time.Second)
		later, err := e.obs.CommitmentChanged(ctx, "insert", c)
		if err != nil {
			t.Fatal(err)
		}
		if !later.Duplicate || later.SignalID != first.SignalID || appends != 2 || len(e.waves.Started()) != 1 || e.ledger.Len() != 1 {
			t.Errorf("repeat after the window: %+v, %d appends; want the ledger's duplicate and still one wave", later, appends)
		}
	})
	t.Run("a repeat within the window captures what the first failed to append", func(t *testing.T) {
		e := newEnv(t)
		e.ledger.AppendHook = func(ora.Entry) error { return ora.Transient(errors.New("throttled"), "put") }
		if _, err := e.obs.CommitmentChanged(ctx, "insert", c); ora.ErrorCode(err) != ora.ETRANSIENT {
			t.Fatalf("first: %v, want %s", err, ora.ETRANSIENT)
		}
		e.ledger.AppendHook = nil
		e.clock.Add(100 * time.Millisecond)
		r, err := e.obs.CommitmentChanged(ctx, "insert", c)
		if err != nil {
			t.Fatal(err)
		}
		if r.Duplicate || e.ledger.Len() != 1 || len(e.waves.Started()) != 1 {
			t.Errorf("retry %+v, %d entries, waves %v; want it captured and its wave started", r, e.ledger.Len(), e.waves.Started())
		}
	})
	t.Run("a repeat within the window starts the wave the first failed to start", func(t *testing.T) {
		e := newEnv(t)
		e.waves.Fail = func(string) error { return ora.Transient(errors.New("throttled"), "start") }
		if _, err := e.obs.CommitmentChanged(ctx, "insert", c); ora.ErrorCode(err) != ora.ETRANSIENT {
			t.Fatalf("first: %v, want %s", err, ora.ETRANSIENT)
		}
		e.waves.Fail = nil
		e.clock.Add(100 * time.Millisecond)
		r, err := e.obs.CommitmentChanged(ctx, "insert", c)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Duplicate || len(e.waves.Started()) != 1 || e.waves.Started()[0] != r.SignalID {
			t.Errorf("retry %+v, waves %v; want a duplicate whose wave is now started", r, e.waves.Started())
		}
	})
}

func TestWatcher(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mtime time.Time) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	write("old.txt", "baseline", now.Add(-time.Hour))
	e := newEnv(t)
	w, err := observe.NewWatcher(e.obs, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Scan(context.Background()); err != nil || len(r) != 0 {
		t.Fatalf("baseline scan: %v %v, want nothing reported", r, err)
	}
	write("in/new.json", `{"a":1}`, now)
	write("old.txt", "changed!", now.Add(time.Second))
	r, err := w.Scan(context.Background())
	if err != nil || len(r) != 2 {
		t.Fatalf("scan: %+v %v, want two changes", r, err)
	}
	events := map[string]string{}
	for _, rec := range r {
		_, sig := stored(t, e.ledger, rec.SignalID)
		events[sig.Source.Path] = sig.Source.Event
	}
	if events["in/new.json"] != "create" || events["old.txt"] != "modify" {
		t.Errorf("events = %v", events)
	}
	if r, err := w.Scan(context.Background()); err != nil || len(r) != 0 {
		t.Errorf("unchanged scan: %v %v, want nothing", r, err)
	}
	if err := os.Remove(filepath.Join(dir, "old.txt")); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(time.Second)
	r, err = w.Scan(context.Background())
	if err != nil || len(r) != 1 {
		t.Fatalf("scan after delete: %+v %v", r, err)
	}
	if _, sig := stored(t, e.ledger, r[0].SignalID); sig.Source.Event != "delete" || sig.Source.Path != "old.txt" {
		t.Errorf("delete signal source = %+v", sig.Source)
	}
	if _, err := observe.NewWatcher(e.obs, filepath.Join(dir, "missing"), 0); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("missing folder: %v, want EINVALID", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name    string
		sources []observe.SourceConfig
		opt     func(*observe.Options)
	}{
		{"duplicate source", []observe.SourceConfig{sources[0], sources[0]}, func(*observe.Options) {}},
		{"invalid source", []observe.SourceConfig{{Name: "x", Type: "github"}}, func(*observe.Options) {}},
		{"zero body limit", nil, func(o *observe.Options) { o.MaxBody = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := observe.New(&observetest.Ledger{}, &observetest.Waves{}, tt.sources, tt.opt)
			if ora.ErrorCode(err) != ora.EINVALID {
				t.Errorf("New: %v, want EINVALID", err)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	env := map[string]string{"ORA_ESCALATION_TIMEOUT_SECONDS": "600", "ORA_MAX_BODY_BYTES": "1024"}
	opt, err := observe.EnvOptions(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	var o observe.Options
	opt(&o)
	if o.EscalationTimeout != 10*time.Minute || o.MaxBody != 1024 {
		t.Errorf("options = %+v, want 10m and 1024", o)
	}
	env["ORA_MAX_BODY_BYTES"] = "lots"
	if _, err := observe.EnvOptions(func(k string) string { return env[k] }); ora.ErrorField(err) != "ORA_MAX_BODY_BYTES" {
		t.Errorf("bad max body: %v, want EINVALID naming ORA_MAX_BODY_BYTES", err)
	}
	got, err := observe.ParseSources([]byte(`[{"name":"ci","type":"hmac","secret":"k"}]`))
	if err != nil || len(got) != 1 || got[0].Header != observe.DefaultHMACHeader {
		t.Errorf("ParseSources = %+v, %v", got, err)
	}
	for _, bad := range []string{`{"name":"x"}`, `[{"name":"x","type":"github"}]`, `[{"name":"x","type":"none","extra":1}]`,
		`[{"name":"x","type":"none"},{"name":"x","type":"none"}]`} {
		if _, err := observe.ParseSources([]byte(bad)); ora.ErrorCode(err) != ora.EINVALID {
			t.Errorf("ParseSources(%s) = %v, want EINVALID", bad, err)
		}
	}
}

func TestSchedulerRunsCron(t *testing.T) {
	e := newEnv(t, func(o *observe.Options) { o.Now = time.Now })
	s, err := observe.NewScheduler(e.obs, []observe.Job{{Name: "tick", Expression: "@every 1s"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	deadline := time.Now().Add(15 * time.Second)
	for len(e.waves.Started()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	<-s.Stop().Done()
	started := e.waves.Started()
	if len(started) == 0 {
		t.Fatal("no firing within 15 s")
	}
	_, sig := stored(t, e.ledger, started[0])
	if sig.Source.JobName != "tick" || sig.Timestamp.Nanosecond() != 0 || sig.DedupKey != "tick@"+sig.Timestamp.Format(time.RFC3339Nano) {
		t.Errorf("signal source %+v at %v dedup %q: want job tick at a whole second", sig.Source, sig.Timestamp, sig.DedupKey)
	}
}
