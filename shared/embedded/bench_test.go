package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
)

// BenchmarkWaves sends signed webhooks into the embedded runtime (rules
// reasoner, SQLite) over HTTP and waits for each wave to end, reporting waves
// per second and the p50 / p99 latency from the webhook's POST to the end of
// Record outcome.
func BenchmarkWaves(b *testing.B) {
	cfg := DefaultConfig()
	cfg.DataDir = b.TempDir()
	cfg.Store.SQLitePath = filepath.Join(cfg.DataDir, "ledger.db")
	cfg.Watch.Dir = filepath.Join(cfg.DataDir, "inbox")
	cfg.Actions.Object.Root = filepath.Join(cfg.DataDir, "objects")
	rt, err := New(context.Background(), cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	srv := httptest.NewServer(rt.Handler())
	defer srv.Close()
	src, _ := cfg.Source("demo")
	body := []byte(`{"confidence":"high"}`)

	workers := 8
	if w := os.Getenv("ORA_BENCH_WORKERS"); w != "" {
		fmt.Sscan(w, &workers)
	}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		next      = make(chan int)
		wg        sync.WaitGroup
	)
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				h, _ := observe.SignDelivery(src, body, t0, fmt.Sprintf("bench-%d-%d", b.N, i))
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/demo", strings.NewReader(string(body)))
				req.Header = h
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				var rec observe.Receipt
				_ = json.NewDecoder(resp.Body).Decode(&rec)
				resp.Body.Close()
				ex, err := rt.engine.Wait(context.Background(), fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", region, account, stateMachine, rec.WaveID))
				if err != nil || ex.Status != "SUCCEEDED" {
					b.Errorf("wave %s: %v %+v", rec.WaveID, err, ex)
					return
				}
				mu.Lock()
				latencies = append(latencies, time.Since(t0))
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < b.N; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if len(latencies) == 0 {
		return
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "waves/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
