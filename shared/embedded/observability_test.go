package embedded

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/telemetry"
)

// syncBuffer is a bytes.Buffer safe for the runtime's concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWaveLogsAndMetrics runs a wave that waits for a human through the
// HTTP API, approves it, and checks the logs (one JSON object per line, the
// correlation keys on every stage line, no planted secret anywhere) and the
// counters GET /metrics shows.
func TestWaveLogsAndMetrics(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, t.TempDir())
	// Planted secrets: a webhook secret, a bearer token and the signing secret.
	cfg.Sources[0].Secret = "planted-webhook-secret-1"
	cfg.Tokens[0].Token = "planted-bearer-token-2"
	cfg.Actions.HTTP.SigningSecret = "planted-signing-secret-3"
	var logs syncBuffer
	logger := telemetry.NewLogger(&logs, "ora", func(o *telemetry.LogOptions) { o.Secrets = cfg.SecretValues() })
	rt, err := New(ctx, cfg, func(o *Options) { o.Logger = logger })
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	srv := httptest.NewServer(rt.Handler())
	defer srv.Close()

	body := []byte(`{"confidence":"low"}`)
	h, _ := observe.Sign(cfg.Sources[0], body, time.Now())
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/"+cfg.Sources[0].Name, bytes.NewReader(body))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook: %v %v", resp, err)
	}
	var rec observe.Receipt
	_ = json.NewDecoder(resp.Body).Decode(&rec)
	resp.Body.Close()
	decision := waitIntent(t, rt, rec.SignalID)
	var taskToken string
	entries, _ := rt.ledger.Entries(ctx, rec.SignalID)
	for _, e := range entries {
		if e.Kind == ora.KindArchitectIntent {
			var in struct {
				TaskToken string `json:"task_token"`
			}
			_ = json.Unmarshal(e.Body, &in)
			taskToken = in.TaskToken
		}
	}
	if taskToken == "" {
		t.Fatal("no task token in the architect-intent entry")
	}
	metrics := func() string {
		t.Helper()
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics: %v %v", resp, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if m := metrics(); !strings.Contains(m, "ora_escalations_pending 1\n") || strings.Contains(m, `ora_waves_total{outcome="completed"}`) {
		t.Errorf("before the approval:\n%s", m)
	}

	req, _ = http.NewRequest(http.MethodPost, srv.URL+"/decisions/"+decision+"/approve", strings.NewReader(`{"reason":"fine"}`))
	req.Header.Set("Authorization", "Bearer "+cfg.Tokens[0].Token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("approve: %v %v", resp, err)
	}
	resp.Body.Close()
	w, err := waves{rt}.Wave(ctx, rec.WaveID)
	for deadline := time.Now().Add(30 * time.Second); err == nil && w.Status == "RUNNING" && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		w, err = waves{rt}.Wave(ctx, rec.WaveID)
	}
	if err != nil || w.Status != "SUCCEEDED" {
		t.Fatalf("wave: %+v, %v", w, err)
	}

	// The approved action opens a commitment, whose table-change signal
	// starts a second wave: counters are at least the first wave's.
	m := metrics()
	for _, want := range []string{
		"\nora_waves_started_total ",
		`ora_waves_total{outcome="completed"} `,
		`ora_decisions_total{author_type="rules",band="low"} 1` + "\n",
		"ora_escalations_total 1\n",
		`ora_stage_duration_seconds_count{outcome="ok",stage="act"} `,
		`ora_validator_verdicts_total{validator="technical",verdict=`,
		// Seed 002's orientation metrics, from shared/orient.
		"\nora_orientation_packet_tokens_used_count ",
		`ora_observation_jobs_total{source="ledger",status=`,
		`ora_observation_job_latency_ms_count{source="ledger"} `,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("GET /metrics lacks %q:\n%s", want, m)
		}
	}

	out := logs.String()
	for _, planted := range append(cfg.SecretValues(), taskToken) {
		if strings.Contains(out, planted) {
			t.Errorf("planted secret %q is in the log", planted)
		}
	}
	stages, sawAction := map[string]bool{}, false
	trace, traced := telemetry.TraceIDOf("", rec.WaveID), map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("not one JSON object per line: %q", sc.Text())
		}
		for _, k := range []string{"level", "message", "timestamp", "service"} {
			if _, ok := line[k]; !ok {
				t.Errorf("line lacks %s: %s", k, sc.Text())
			}
		}
		if line["message"] == "action" && line["type"] == "commitment.open" && line["outcome"] == "success" {
			sawAction = true // the actor's line, in the runtime's log
		}
		if msg, _ := line["message"].(string); line["wave_id"] == rec.WaveID && (strings.HasPrefix(msg, "orientation ") || msg == "stage ok") {
			// Every orientation and stage line of the wave carries its trace id.
			if line["trace_id"] != trace {
				t.Errorf("trace_id %v, want the wave's %s: %s", line["trace_id"], trace, sc.Text())
			}
			traced[msg] = true
		}
		if line["message"] != "stage ok" {
			continue
		}
		stage, _ := line["stage"].(string)
		if line["wave_id"] == rec.WaveID {
			stages[stage] = true
		}
		if line["wave_id"] == nil || line["wave_id"] != line["signal_id"] {
			t.Errorf("stage line without the wave's keys: %s", sc.Text())
		}
		if _, ok := line["latency_ms"].(float64); !ok {
			t.Errorf("stage line without latency_ms: %s", sc.Text())
		}
		if stage != "plan" && stage != "fetch" && stage != "compile" && line["decision_id"] == nil && stage != "reason" {
			t.Errorf("stage line without decision_id: %s", sc.Text())
		}
	}
	for _, s := range []string{"plan", "compile", "reason", "escalate", "act", "validate-technical", "witness", "record"} {
		if !stages[s] {
			t.Errorf("no stage ok line for %s", s)
		}
	}
	if !sawAction {
		t.Error("no action line for the approved commitment.open in the runtime's log")
	}
	if !traced["orientation compile"] || !traced["stage ok"] {
		t.Errorf("traced lines %v, want the wave's orientation compile and stage lines", traced)
	}
}

// ora dev's whole handler (the API behind the metrics and console routes)
// answers a dot-segment path with 404, never a redirect to the cleaned path.
func TestDevDotSegmentsAreNotFound(t *testing.T) {
	r, err := New(context.Background(), testConfig(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, path := range []string{"/webhooks/../webhooks/demo", "/console/../metrics", "/./healthz"} {
		rec := httptest.NewRecorder()
		r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d (Location %q), want 404", path, rec.Code, rec.Header().Get("Location"))
		}
	}
}
