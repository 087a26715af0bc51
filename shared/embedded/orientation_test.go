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
			want := map[string]int{"reject": http.StatusConflict, "none": http.StatusNotFound}
			w := http.StatusOK
			for suffix, c := range want {
				if strings.HasSuffix(rt.path, suffix) {
					w = c
				}
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

// inFlight counts the objects jobs reading at once.
type inFlight struct {
	orient.ObjectReader
	now, most atomic.Int64
}

func (c *inFlight) Get(ctx context.Context, key string, max int64) ([]byte, orient.ObjectInfo, error) {
	n := c.now.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	defer c.now.Add(-1)
	return c.ObjectReader.Get(ctx, key, max)
}

// waveJobs is how many objects jobs BenchmarkWaveManyJobs plans. With the
// INLINE Map the jobs travel in the state, under the 256 KiB payload limit
// (about 900 jobs); 10,000 need the Distributed Map with an ItemReader.
const waveJobs = 100

// BenchmarkWaveManyJobs runs one wave whose profile plans waveJobs objects
// jobs (one small file each) through ora dev: the real ASL on the local
// engine, SQLite ledger. It reports the wave's wall time and the most jobs in
// flight at once (the Map's MaxConcurrency is 128).
func BenchmarkWaveManyJobs(b *testing.B) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.DataDir = b.TempDir()
	if err := cfg.complete(); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(cfg.Actions.Object.Root, "bulk")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range waveJobs {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%05d.json", i)), fmt.Appendf(nil, `{"n":%d}`, i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	counter := &inFlight{ObjectReader: orient.Folder{Dir: cfg.Actions.Object.Root}}
	rt, err := New(ctx, cfg, func(o *Options) { o.Logger = discard(); o.objects = counter })
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	ps := orient.NewProfiles(rt.ledger, rt.orientOptions())
	p, err := ps.Current(ctx, "default")
	if err != nil {
		b.Fatal(err)
	}
	pred, _ := json.Marshal(orient.ObjectPredicate{Prefix: "bulk/", Limit: waveJobs})
	p.Version, p.UpdatedBy = 2, "bench"
	p.Rules = []ora.AttentionRule{{ID: "bulk", SourceType: orient.FamilyObjects, Predicate: pred, Band: ora.BandExploration, PriorityWeight: 1, Enabled: true}}
	if _, err := ps.Put(ctx, p); err != nil {
		b.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // the files are older than the signal
	src, _ := cfg.Source("demo")
	for i := 0; b.Loop(); i++ {
		body := []byte(`{"confidence":"high"}`)
		h, _ := observe.SignDelivery(src, body, time.Now(), fmt.Sprintf("bulk-%d", i))
		start := time.Now()
		rec, err := rt.observer.Webhook(ctx, "demo", h, body)
		if err != nil {
			b.Fatal(err)
		}
		w, err := waves{rt}.Wave(ctx, rec.WaveID)
		for err == nil && w.Status == "RUNNING" {
			time.Sleep(20 * time.Millisecond)
			w, err = waves{rt}.Wave(ctx, rec.WaveID)
		}
		if err != nil || w.Status != "SUCCEEDED" {
			b.Fatalf("wave: %s %s %s %v", w.Status, w.Error, w.Cause, err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/wave")
	}
	b.ReportMetric(float64(counter.most.Load()), "max_in_flight")
}
