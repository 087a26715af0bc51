package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
)

// The secrets and clock events/README.md documents for the signed samples.
var (
	sources = []observe.SourceConfig{
		{Name: "github", Type: observe.TypeGitHub, Secret: "ora-test-github-secret"},
		{Name: "slack", Type: observe.TypeSlack, Secret: "ora-test-slack-signing-secret"},
		{Name: "stripe", Type: observe.TypeStripe, Secret: "whsec_ora_test_stripe_secret"},
	}
	clock = time.Unix(1795176000, 0).UTC()
)

type fixture struct {
	obs    *observe.Observer
	ledger *sqlite.DB
	waves  *observetest.Waves
}

func newFixture(t *testing.T, opts ...func(*observe.Options)) fixture {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ora.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	waves := &observetest.Waves{}
	opts = append([]func(*observe.Options){func(o *observe.Options) { o.Now = func() time.Time { return clock } }}, opts...)
	obs, err := observe.New(db, waves, sources, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{obs: obs, ledger: db, waves: waves}
}

// invoke runs payload through the Lambda runtime's own decoding and encoding.
func invoke(t *testing.T, h Handler, payload []byte) events.APIGatewayV2HTTPResponse {
	t.Helper()
	out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), payload)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	return resp
}

type body struct {
	SignalID  string `json:"signal_id"`
	WaveID    string `json:"wave_id"`
	Duplicate bool   `json:"duplicate"`
	Challenge string `json:"challenge"`
	Probe     bool   `json:"probe"`
	Error     string `json:"error"`
}

func TestReplayEvents(t *testing.T) {
	// What each sample must produce: the status, the signal's dedup key (its id
	// is SignalID(source, key); GitHub's is the body's digest in its replay
	// window), its event type, or the challenge; the signal's time when it is
	// the receive time (an implausible provider time), and the provider time
	// kept in the entry's meta then.
	want := map[string]struct {
		status       int
		source       string
		dedupKey     string
		eventType    string
		challenge    string
		providerTime string
	}{
		"github-push.json":                     {202, "github", githubKey, "push", "", ""},
		"github-issues.json":                   {202, "github", githubKey, "issues.opened", "", ""},
		"github-ping-form.json":                {202, "github", githubKey, "ping", "", ""},
		"github-push-forged.json":              {401, "", "", "", "", ""},
		"slack-event-callback.json":            {202, "slack", "Ev0AB12CDE4F", "app_mention", "", ""},
		"slack-event-callback-retry.json":      {202, "slack", "Ev0AB12CDE4F", "app_mention", "", ""},
		"slack-app-mention-documented.json":    {202, "slack", "Ev123ABC456", "app_mention", "", "1515449522000016"},
		"slack-slash-command.json":             {202, "slack", "8172663094123.1795175999.7b3f0e2c9d8a6b5f4e3d2c1b0a998877", "slash_command.deploy", "", ""},
		"slack-block-actions.json":             {202, "slack", "8172663095456.1795175999.9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a49/approve_deploy@1795175999.204817", "interactive.block_actions", "", ""},
		"slack-url-verification.json":          {200, "", "", "", "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", ""},
		"slack-ssl-check.json":                 {200, "", "", "", "", ""},
		"stripe-payment-intent-succeeded.json": {202, "stripe", "evt_3QkZr2LkdIwHu7ix0aB1cD2e", "payment_intent.succeeded", "", ""},
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "webhook", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in events/webhook: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("no expectation for events/webhook/%s: add one", name)
			}
			payload, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fx := newFixture(t)
			resp := invoke(t, Handler{Observer: fx.obs}, payload)
			var got body
			if err := json.Unmarshal([]byte(resp.Body), &got); err != nil {
				t.Fatalf("body %q: %v", resp.Body, err)
			}
			if resp.StatusCode != w.status {
				t.Fatalf("status = %d (%s), want %d", resp.StatusCode, resp.Body, w.status)
			}
			if got.Challenge != w.challenge {
				t.Errorf("challenge = %q, want %q", got.Challenge, w.challenge)
			}
			if wantProbe := w.status == 200 && w.challenge == ""; got.Probe != wantProbe {
				t.Errorf("probe = %v, want %v", got.Probe, wantProbe)
			}
			if w.status != 202 {
				if fx.waves.Calls() != 0 {
					t.Errorf("%d wave starts, want none", fx.waves.Calls())
				}
				return
			}
			if w.dedupKey == githubKey {
				w.dedupKey = observe.GitHubDedupKey(requestBody(t, payload), clock)
			}
			id := observe.SignalID(w.source, w.dedupKey)
			if got.SignalID != id || got.WaveID != id || got.Duplicate {
				t.Errorf("body = %+v, want ids %s, not duplicate", got, id)
			}
			entries, err := fx.ledger.Entries(context.Background(), id)
			if err != nil || len(entries) != 1 || entries[0].Kind != ora.KindSignalReceived {
				t.Fatalf("entries = %+v, %v; want one signal-received", entries, err)
			}
			var sig ora.NormalizedSignal
			if err := json.Unmarshal(entries[0].Body, &sig); err != nil {
				t.Fatal(err)
			}
			if sig.Source.Name != w.source || sig.Source.EventType != w.eventType || sig.DedupKey != w.dedupKey {
				t.Errorf("signal source %+v dedup %q; want %s %s %s", sig.Source, sig.DedupKey, w.source, w.eventType, w.dedupKey)
			}
			if entries[0].Meta["raw_digest"] != sig.RawDigest || entries[0].Meta["source"] != w.source {
				t.Errorf("meta = %v", entries[0].Meta)
			}
			if got := entries[0].Meta[observe.MetaProviderTimestamp]; got != w.providerTime {
				t.Errorf("meta %s = %q, want %q", observe.MetaProviderTimestamp, got, w.providerTime)
			}
			if w.providerTime != "" && !sig.Timestamp.Equal(clock) {
				t.Errorf("timestamp = %v, want the receive time %v", sig.Timestamp, clock)
			}
			if got := fx.waves.Started(); len(got) != 1 || got[0] != id {
				t.Errorf("waves = %v, want [%s]", got, id)
			}
		})
	}
}

// githubKey marks a GitHub sample's expected dedup key: its body's digest in
// its replay window.
const githubKey = "(github body key)"

// requestBody returns the body of an API Gateway request, decoded.
func requestBody(t *testing.T, payload []byte) []byte {
	t.Helper()
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		t.Fatal(err)
	}
	if !req.IsBase64Encoded {
		return []byte(req.Body)
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRedeliveryGetsTheFirstIDs(t *testing.T) {
	fx := newFixture(t)
	h := Handler{Observer: fx.obs}
	first := invoke(t, h, readSample(t, "slack-event-callback.json"))
	retry := invoke(t, h, readSample(t, "slack-event-callback-retry.json"))
	var a, b body
	_ = json.Unmarshal([]byte(first.Body), &a)
	_ = json.Unmarshal([]byte(retry.Body), &b)
	if first.StatusCode != 202 || retry.StatusCode != 200 {
		t.Fatalf("statuses = %d, %d; want 202, 200", first.StatusCode, retry.StatusCode)
	}
	if !b.Duplicate || b.SignalID != a.SignalID || b.WaveID != a.WaveID {
		t.Errorf("retry body = %+v, want the first's ids %+v and duplicate", b, a)
	}
	if got := fx.waves.Started(); len(got) != 1 {
		t.Errorf("waves = %v, want one", got)
	}
}

func readSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "webhook", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edit returns the sample with fn applied to the decoded request.
func edit(t *testing.T, name string, fn func(*events.APIGatewayV2HTTPRequest)) []byte {
	t.Helper()
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(readSample(t, name), &req); err != nil {
		t.Fatal(err)
	}
	fn(&req)
	b, _ := json.Marshal(req)
	return b
}

func TestStatuses(t *testing.T) {
	tests := []struct {
		name    string
		payload func(t *testing.T) []byte
		opts    func(*observe.Options)
		status  int
		errText string
	}{
		{"unknown source", func(t *testing.T) []byte {
			return edit(t, "github-push.json", func(r *events.APIGatewayV2HTTPRequest) { r.PathParameters["source"] = "gitlab" })
		}, nil, 404, `no webhook source "gitlab"`},
		{"missing signature", func(t *testing.T) []byte {
			return edit(t, "github-push.json", func(r *events.APIGatewayV2HTTPRequest) { delete(r.Headers, "x-hub-signature-256") })
		}, nil, 401, "missing or malformed X-Hub-Signature-256"},
		{"stale slack timestamp", func(t *testing.T) []byte { return readSample(t, "slack-event-callback.json") },
			func(o *observe.Options) { o.Now = func() time.Time { return clock.Add(6 * time.Minute) } }, 401, "X-Slack-Request-Timestamp is stale"},
		{"over the limit", func(t *testing.T) []byte { return readSample(t, "github-push.json") },
			func(o *observe.Options) { o.MaxBody = 100 }, 413, "exceeds the limit of 100"},
		{"base64 body", func(t *testing.T) []byte {
			return edit(t, "github-push.json", func(r *events.APIGatewayV2HTTPRequest) {
				r.IsBase64Encoded = true
				r.Body = "not base64!"
			})
		}, nil, 400, "body: not valid base64"},
		{"signed body that is not UTF-8", func(t *testing.T) []byte {
			return edit(t, "github-push.json", func(r *events.APIGatewayV2HTTPRequest) {
				raw := []byte("{\"ref\":\"refs/heads/\xff\"}")
				h, _ := observe.Sign(sources[0], raw, clock)
				r.Headers["x-hub-signature-256"] = h.Get("X-Hub-Signature-256")
				r.IsBase64Encoded = true
				r.Body = base64.StdEncoding.EncodeToString(raw)
			})
		}, nil, 400, "invalid UTF-8 at byte offset 19"},
		{"internal error", func(t *testing.T) []byte { return readSample(t, "github-push.json") },
			nil, 500, "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []func(*observe.Options)
			if tt.opts != nil {
				opts = append(opts, tt.opts)
			}
			fx := newFixture(t, opts...)
			if tt.status == 500 {
				fx.waves.Fail = func(string) error { return ora.Errorf(ora.EINTERNAL, "secret detail") }
			}
			resp := invoke(t, Handler{Observer: fx.obs}, tt.payload(t))
			var got body
			_ = json.Unmarshal([]byte(resp.Body), &got)
			if resp.StatusCode != tt.status || !strings.Contains(got.Error, tt.errText) {
				t.Errorf("got %d %q, want %d containing %q", resp.StatusCode, got.Error, tt.status, tt.errText)
			}
			if tt.status == 500 && strings.Contains(got.Error, "secret detail") {
				t.Errorf("internal detail leaked: %q", got.Error)
			}
		})
	}
}

// GitHub signs only the body: one captured delivery re-sent with new delivery
// ids is one wave (the later deliveries are duplicates answered with the
// first ids) within the replay window, and an event header the signed body
// contradicts is refused.
func TestGitHubReplayIsOneWave(t *testing.T) {
	fx := newFixture(t)
	h := Handler{Observer: fx.obs}
	first := invoke(t, h, readSample(t, "github-issues.json"))
	var a body
	_ = json.Unmarshal([]byte(first.Body), &a)
	if first.StatusCode != 202 {
		t.Fatalf("first delivery: %d %s", first.StatusCode, first.Body)
	}
	for i, id := range []string{"0b9e3c1a-0001-11f1-8000-000000000001", "0b9e3c1a-0002-11f1-8000-000000000002"} {
		replay := edit(t, "github-issues.json", func(r *events.APIGatewayV2HTTPRequest) { r.Headers["x-github-delivery"] = id })
		resp := invoke(t, h, replay)
		var b body
		_ = json.Unmarshal([]byte(resp.Body), &b)
		if resp.StatusCode != 200 || !b.Duplicate || b.SignalID != a.SignalID || b.WaveID != a.WaveID {
			t.Errorf("replay %d: %d %+v, want 200, duplicate, the first's ids %+v", i, resp.StatusCode, b, a)
		}
	}
	if got := fx.waves.Started(); len(got) != 1 {
		t.Errorf("waves = %v, want one", got)
	}

	retyped := edit(t, "github-issues.json", func(r *events.APIGatewayV2HTTPRequest) {
		r.Headers["x-github-event"] = "push"
		r.Headers["x-github-delivery"] = "0b9e3c1a-0003-11f1-8000-000000000003"
	})
	resp := invoke(t, h, retyped)
	var b body
	_ = json.Unmarshal([]byte(resp.Body), &b)
	if resp.StatusCode != 400 || !strings.Contains(b.Error, `X-GitHub-Event: "push" does not match the signed body`) {
		t.Errorf("retyped replay: %d %q, want 400 naming X-GitHub-Event", resp.StatusCode, b.Error)
	}
	if got := fx.waves.Started(); len(got) != 1 {
		t.Errorf("waves after the retyped replay = %v, want one", got)
	}
}

// The bound of the replay window: the same body a whole window later is a
// new wave (docs/providers.md says so); within it, whatever the window's
// edge, a duplicate.
func TestGitHubReplayWindow(t *testing.T) {
	tests := []struct {
		name  string
		after time.Duration
		dup   bool
	}{
		{"a minute later", time.Minute, true},
		{"across a window's edge", observe.GitHubReplayWindow, true},
		{"two windows later", 2 * observe.GitHubReplayWindow, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := clock
			fx := newFixture(t, func(o *observe.Options) { o.Now = func() time.Time { return at } })
			h := Handler{Observer: fx.obs}
			// GitHub's deliveries carry no timestamp: only the clock moves.
			if resp := invoke(t, h, readSample(t, "github-issues.json")); resp.StatusCode != 202 {
				t.Fatalf("first: %d %s", resp.StatusCode, resp.Body)
			}
			at = clock.Add(tt.after)
			resp := invoke(t, h, edit(t, "github-issues.json", func(r *events.APIGatewayV2HTTPRequest) {
				r.Headers["x-github-delivery"] = "0b9e3c1a-0009-11f1-8000-000000000009"
			}))
			var b body
			_ = json.Unmarshal([]byte(resp.Body), &b)
			if b.Duplicate != tt.dup {
				t.Errorf("%d %+v: duplicate %v, want %v", resp.StatusCode, b, b.Duplicate, tt.dup)
			}
		})
	}
}
