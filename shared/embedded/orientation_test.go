package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

func orientationRuntime(t *testing.T) (*httptest.Server, Config) {
	t.Helper()
	cfg := testConfig(t, t.TempDir())
	cfg.Tokens = []httpapi.Token{
		{Token: "reader-token-0000", Subject: "reader", Scopes: []string{httpapi.ScopeOrientationRead}},
		{Token: "agent-token-00000", Subject: "agent", Scopes: []string{httpapi.ScopeOrientationPropose, httpapi.ScopeOrientationRead}},
		{Token: "tenant-token-0000", Subject: "tenant", Namespace: "team-x", Scopes: []string{httpapi.ScopeOrientationPropose}},
		{Token: "approver-token-00", Subject: "alice", Scopes: []string{httpapi.ScopeOrientationApprove, httpapi.ScopeOrientationRead}},
		{Token: "admin-token-00000", Subject: "root", Scopes: []string{httpapi.ScopeOrientationAdmin}},
	}
	rt, err := New(context.Background(), cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rt.Handler())
	t.Cleanup(func() { srv.Close(); _ = rt.Close() })
	return srv, cfg
}

func call(t *testing.T, srv *httptest.Server, method, path, token string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, srv.URL+path, r)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestOrientationRoutesScopes(t *testing.T) {
	srv, _ := orientationRuntime(t)
	p := map[string]any{"proposal_id": "p-scope", "base_profile_id": "default", "base_profile_version": 1,
		"effective_waves": 2, "horizon_policy": "revert", "change": map[string]any{"max_source_share": 0.4}}
	routes := []struct {
		method, path, scopeHolder string
		body                      any
	}{
		{"GET", "/api/orientation/profile/current", "reader-token-0000", nil},
		{"POST", "/api/orientation/proposals", "agent-token-00000", p},
		{"POST", "/api/orientation/proposals/p-scope/approve", "approver-token-00", nil},
		{"POST", "/api/orientation/proposals/p-scope/reject", "approver-token-00", nil},
		{"GET", "/api/orientation/packets/none", "reader-token-0000", nil},
		{"GET", "/api/orientation/feedback/none", "reader-token-0000", nil},
		{"POST", "/api/orientation/feedback/none", "agent-token-00000", map[string]any{"feedback_id": "f1", "decision_regret": true}},
		{"POST", "/api/orientation/packets/none/verify", "reader-token-0000", nil},
		{"GET", "/api/orientation/admin", "reader-token-0000", nil},
		{"PUT", "/api/orientation/admin", "admin-token-00000", map[string]any{"max_horizon_waves": 20}},
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			if code, _ := call(t, srv, rt.method, rt.path, "", rt.body); code != http.StatusUnauthorized {
				t.Errorf("no token: got %d, want 401", code)
			}
			if code, _ := call(t, srv, rt.method, rt.path, "stale-or-unknown-token", rt.body); code != http.StatusUnauthorized {
				t.Errorf("unknown token: got %d, want 401", code)
			}
			wrong := "reader-token-0000"
			if rt.scopeHolder == wrong {
				wrong = "tenant-token-0000"
			}
			if code, _ := call(t, srv, rt.method, rt.path, wrong, rt.body); code != http.StatusForbidden {
				t.Errorf("token without the scope: got %d, want 403", code)
			}
			code, b := call(t, srv, rt.method, rt.path, rt.scopeHolder, rt.body)
			w := http.StatusOK
			switch {
			case strings.HasSuffix(rt.path, "/reject"):
				w = http.StatusConflict
			case strings.Contains(rt.path, "/none"):
				w = http.StatusNotFound
			}
			if code != w {
				t.Errorf("with the scope: got %d %s, want %d", code, b, w)
			}
		})
	}
	t.Run("namespace comes from the token", func(t *testing.T) {
		spoof := map[string]any{"proposal_id": "p-spoof", "namespace": "main", "requested_by": "admin", "base_profile_id": "default",
			"base_profile_version": 1, "effective_waves": 2, "horizon_policy": "revert", "change": map[string]any{"max_source_share": 0.4}}
		code, b := call(t, srv, "POST", "/api/orientation/proposals", "tenant-token-0000", spoof)
		var v ora.ProposalView
		_ = json.Unmarshal(b, &v)
		if code != http.StatusOK || v.Proposal.Namespace != "team-x" || v.Proposal.RequestedBy != "tenant" || v.Status != ora.ProposalRejected {
			t.Errorf("got %d %s; want the proposal recorded for tenant in team-x and rejected (outside the envelope)", code, b)
		}
	})
	t.Run("admin settings need a body naming what to change", func(t *testing.T) {
		if code, b := call(t, srv, "PUT", "/api/orientation/admin", "admin-token-00000", nil); code != http.StatusBadRequest || !strings.Contains(string(b), "body") {
			t.Errorf("empty PUT: got %d %s, want 400 naming the body", code, b)
		}
		if code, b := call(t, srv, "PUT", "/api/orientation/admin", "admin-token-00000", map[string]any{"max_horizon": 5}); code != http.StatusBadRequest || !strings.Contains(string(b), "max_horizon") {
			t.Errorf("unknown setting: got %d %s, want 400 naming max_horizon", code, b)
		}
	})
	t.Run("malformed proposal fails closed", func(t *testing.T) {
		code, b := call(t, srv, "POST", "/api/orientation/proposals", "agent-token-00000", map[string]any{"proposal_id": "p-bad", "grant_admin": true})
		if code != http.StatusBadRequest || !strings.Contains(string(b), "grant_admin") {
			t.Errorf("got %d %s, want 400 naming grant_admin", code, b)
		}
	})
}

// TestAttentionShiftOverHTTP is the B2 exit through ora dev: a proposal
// shifting attention to the objects family for N waves is approved over the
// API, the next N waves' packets carry object facts, wave N+1's does not.
func TestAttentionShiftOverHTTP(t *testing.T) {
	srv, cfg := orientationRuntime(t)
	dir := filepath.Join(cfg.Actions.Object.Root, "weather")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("r%d.json", i)), fmt.Appendf(nil, `{"station":%d}`, i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, b := call(t, srv, "GET", "/api/orientation/profile/current", "reader-token-0000", nil)
	var base ora.Profile
	if err := json.Unmarshal(b, &base); err != nil || base.Version != 1 {
		t.Fatalf("current profile: %s", b)
	}
	pred, _ := json.Marshal(orient.ObjectPredicate{Prefix: "weather/", Limit: 10})
	rules := append(base.Rules, ora.AttentionRule{ID: "weather", SourceType: orient.FamilyObjects, Predicate: pred, Band: ora.BandExploration, PriorityWeight: 2, Enabled: true})
	const n = 2
	p := map[string]any{"proposal_id": "weather-first", "base_profile_id": "default", "base_profile_version": 1,
		"effective_waves": n, "horizon_policy": "revert", "change": map[string]any{"rules": rules}}
	if code, b := call(t, srv, "POST", "/api/orientation/proposals", "agent-token-00000", p); code != http.StatusOK || !strings.Contains(string(b), `"pending"`) {
		t.Fatalf("propose: %d %s", code, b)
	}
	if code, b := call(t, srv, "POST", "/api/orientation/proposals/weather-first/approve", "approver-token-00", nil); code != http.StatusOK {
		t.Fatalf("approve: %d %s", code, b)
	}
	time.Sleep(20 * time.Millisecond) // the objects are older than the next signals
	src, _ := cfg.Source("demo")
	for i := 1; i <= n+1; i++ {
		body := []byte(`{"confidence":"high"}`)
		h, _ := observe.SignDelivery(src, body, time.Now(), fmt.Sprintf("shift-%d", i))
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/demo", bytes.NewReader(body))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("webhook %d: %v %v", i, resp, err)
		}
		var rec observe.Receipt
		_ = json.NewDecoder(resp.Body).Decode(&rec)
		resp.Body.Close()
		var pkt ora.OrientationPacket
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			code, b := call(t, srv, "GET", "/api/orientation/packets/"+rec.WaveID, "reader-token-0000", nil)
			if code == http.StatusOK {
				_ = json.Unmarshal(b, &pkt)
				break
			}
		}
		objects := 0
		for _, band := range pkt.Bands {
			for _, f := range band.Facts {
				if f.SourceType == orient.FamilyObjects {
					objects++
				}
			}
		}
		wantVersion, wantObjects := 2, 3
		if i == n+1 {
			wantVersion, wantObjects = 3, 0
		}
		if pkt.ProfileVersion != wantVersion || objects != wantObjects {
			t.Errorf("wave %d: profile v%d with %d object facts, want v%d with %d", i, pkt.ProfileVersion, objects, wantVersion, wantObjects)
		}
	}
}

// inFlight counts the objects jobs reading at once, the most at once, and
// all of them.
type inFlight struct {
	orient.ObjectReader
	now, most, total atomic.Int64
}

func (c *inFlight) Get(ctx context.Context, key string, max int64) ([]byte, orient.ObjectInfo, error) {
	c.total.Add(1)
	n := c.now.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	defer c.now.Add(-1)
	return c.ObjectReader.Get(ctx, key, max)
}

// waveJobs is how many objects jobs a many-jobs wave plans: the seed's
// MAX_OBSERVATION_JOBS_PER_WAVE. Plan writes them to the jobs folder and the
// Distributed Map's ItemReader reads them there, so they never travel in
// the execution's state (an INLINE Map hit States.DataLimitExceeded past
// about 900).
const waveJobs = 10000

// manyJobs is an ora dev runtime whose profile plans n objects jobs (one
// small file each), jobs of timeoutMS each, and counts the jobs in flight.
type manyJobs struct {
	rt      *Runtime
	counter *inFlight
	n       int
}

func newManyJobs(tb testing.TB, n, timeoutMS int) *manyJobs {
	tb.Helper()
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.DataDir = tb.TempDir()
	if err := cfg.complete(); err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(cfg.Actions.Object.Root, "bulk")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%05d.json", i)), fmt.Appendf(nil, `{"n":%d}`, i), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	counter := &inFlight{ObjectReader: orient.Folder{Dir: cfg.Actions.Object.Root}}
	rt, err := New(ctx, cfg, func(o *Options) { o.Logger = discard(); o.objects = counter })
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = rt.Close() })
	ps := orient.NewProfiles(rt.ledger, rt.orientOptions())
	p, err := ps.Current(ctx, "default")
	if err != nil {
		tb.Fatal(err)
	}
	pred, _ := json.Marshal(orient.ObjectPredicate{Prefix: "bulk/", Limit: n})
	p.Version, p.UpdatedBy = 2, "bench"
	p.Limits.JobTimeoutMS = timeoutMS
	p.Rules = []ora.AttentionRule{{ID: "bulk", SourceType: orient.FamilyObjects, Predicate: pred, Band: ora.BandExploration, PriorityWeight: 1, Enabled: true}}
	if _, err := ps.Put(ctx, p); err != nil {
		tb.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // the files are older than the signal
	return &manyJobs{rt: rt, counter: counter, n: n}
}

// wave runs one wave through the webhook and waits for its end.
func (m *manyJobs) wave(tb testing.TB, id string) string {
	tb.Helper()
	ctx := context.Background()
	src, _ := m.rt.cfg.Source("demo")
	body := []byte(`{"confidence":"high"}`)
	h, _ := observe.SignDelivery(src, body, time.Now(), id)
	rec, err := m.rt.observer.Webhook(ctx, "demo", h, body)
	if err != nil {
		tb.Fatal(err)
	}
	// The engine's description, not the API's wave (which reads the ledger's
	// 10,000 facts on every poll).
	x, err := m.rt.engine.Wait(ctx, m.rt.executionArn(rec.WaveID))
	if err != nil || x.Status != "SUCCEEDED" {
		tb.Fatalf("wave: %s %s %s %v", x.Status, x.Error, x.Cause, err)
	}
	return rec.SignalID
}

// A wave planning 10,000 objects jobs runs every one of them through the
// Distributed Map, never more than 128 at once (MaxConcurrency, each child
// running its batch one job after the other).
func TestWaveTenThousandJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 jobs: not in -short")
	}
	m := newManyJobs(t, waveJobs, 1000)
	signalID := m.wave(t, "bulk-test")
	if got := m.counter.total.Load(); got != waveJobs {
		t.Errorf("%d jobs ran, want %d", got, waveJobs)
	}
	if most := m.counter.most.Load(); most < 1 || most > 128 {
		t.Errorf("at most %d jobs in flight, want 1..128", most)
	}
	facts := 0
	es, err := m.rt.ledger.Entries(context.Background(), signalID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Kind == ora.KindObservedFact {
			facts++
		}
	}
	if facts != waveJobs {
		t.Errorf("the wave holds %d facts, want one per job, %d", facts, waveJobs)
	}
	t.Logf("10,000 jobs: at most %d in flight", m.counter.most.Load())
}

// BenchmarkWaveManyJobs runs one wave whose profile plans waveJobs objects
// jobs (one small file each, 1 s job timeout: batches of 50) through ora
// dev: the real ASL on the local engine, SQLite ledger. It reports the
// wave's wall time and the most jobs in flight at once (the Map's
// MaxConcurrency is 128).
func BenchmarkWaveManyJobs(b *testing.B) {
	m := newManyJobs(b, waveJobs, 1000)
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		m.wave(b, fmt.Sprintf("bulk-%d", i))
		b.ReportMetric(time.Since(start).Seconds(), "s/wave")
	}
	b.ReportMetric(float64(m.counter.most.Load()), "max_in_flight")
}
