package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/sqlite"
)

// benchRuntime starts an embedded runtime (rules reasoner, SQLite; DynamoDB
// Local with ORA_BENCH_STORE=dynamodb) behind an HTTP server, closed when the
// benchmark ends.
func benchRuntime(b *testing.B, configure ...func(*Config)) (*Runtime, *httptest.Server, observe.SourceConfig) {
	b.Helper()
	TuneGC() // as ora dev runs
	cfg := DefaultConfig()
	for _, f := range configure {
		f(&cfg)
	}
	cfg.DataDir = b.TempDir()
	cfg.Store.SQLitePath = filepath.Join(cfg.DataDir, "ledger.db")
	switch store := os.Getenv("ORA_BENCH_STORE"); store {
	case "", "sqlite":
	case "dynamodb":
		onDynamoDBLocal(b, &cfg, "bench")
	default:
		b.Fatalf("ORA_BENCH_STORE=%q: want sqlite or dynamodb", store)
	}
	cfg.Watch.Dir = filepath.Join(cfg.DataDir, "inbox")
	cfg.Actions.Object.Root = filepath.Join(cfg.DataDir, "objects")
	rt, err := New(context.Background(), cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(rt.Handler())
	b.Cleanup(func() {
		srv.Close()
		rt.Close()
	})
	src, _ := cfg.Source("demo")
	return rt, srv, src
}

// onDynamoDBLocal puts cfg's ledger and idempotency tables (named for name,
// created if missing) on DynamoDB Local, started by dynamotest.
func onDynamoDBLocal(b testing.TB, cfg *Config, name string) {
	b.Helper()
	cfg.Store.Kind = "dynamodb"
	cfg.Store.DynamoDB.Endpoint = dynamotest.Endpoint(b)
	cfg.Store.DynamoDB.Table = dynamotest.TableName(name)
	cfg.Store.DynamoDB.IdempotencyTable = dynamotest.TableName(name + "-idem")
	cfg.Store.DynamoDB.CreateTables = true
	if err := cfg.complete(); err != nil {
		b.Fatal(err)
	}
}

// sendWaves sends n signed webhooks from workers concurrent senders, each
// waiting for its wave to end before sending the next, and calls done with
// the index and latency (POST to the end of the wave) of each.
func sendWaves(b *testing.B, rt *Runtime, srv *httptest.Server, src observe.SourceConfig, prefix string, n, workers int, done func(i int, d time.Duration)) {
	b.Helper()
	body := []byte(`{"confidence":"high"}`)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				t0 := time.Now()
				h, _ := observe.SignDelivery(src, body, t0, fmt.Sprintf("%s-%d", prefix, i))
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/demo", bytes.NewReader(body))
				req.Header = h
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Error(err)
					continue
				}
				var rec observe.Receipt
				_ = json.NewDecoder(resp.Body).Decode(&rec)
				resp.Body.Close()
				ex, err := rt.engine.Wait(context.Background(), rt.executionArn(rec.WaveID))
				if err != nil || ex.Status != "SUCCEEDED" {
					b.Errorf("wave %s: %v %+v", rec.WaveID, err, ex)
					continue
				}
				done(i, time.Since(t0))
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// envInt returns the integer in the environment variable name, or def.
func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	return def
}

// BenchmarkWaves sends signed webhooks into the embedded runtime (rules
// reasoner, SQLite) over HTTP and waits for each wave to end, reporting waves
// per second and the p50 / p99 latency from the webhook's POST to the end of
// Record outcome. ORA_BENCH_WORKERS sets the concurrent senders (default 8).
func BenchmarkWaves(b *testing.B) {
	rt, srv, src := benchRuntime(b)
	workers := envInt("ORA_BENCH_WORKERS", 8)
	var (
		mu        sync.Mutex
		latencies []time.Duration
	)
	data0 := settledBytes(b, rt)
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU()
	sendWaves(b, rt, srv, src, fmt.Sprintf("bench-%d", b.N), b.N, workers, func(_ int, d time.Duration) {
		mu.Lock()
		latencies = append(latencies, d)
		mu.Unlock()
	})
	elapsed, cpu := time.Since(start), processCPU()-cpu0
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
	// The process's CPU (server and senders, user and system) per wave: what
	// bounds the rate on a few cores, and much steadier than wall time when
	// other work shares the machine.
	b.ReportMetric(float64(cpu)/1e6/float64(len(latencies)), "cpu-ms/wave")
	// What a wave leaves on disk before any retention applies (WALs
	// checkpointed and truncated first).
	b.ReportMetric(float64(settledBytes(b, rt)-data0)/1024/float64(len(latencies)), "disk-KB/wave")
}

// settledBytes checkpoints the runtime's SQLite files, truncating their WALs,
// and returns the bytes of its data dir.
func settledBytes(b *testing.B, rt *Runtime) int64 {
	b.Helper()
	for _, db := range []*sqlite.DB{rt.ledgerDB, rt.engineDB} {
		if db != nil {
			if err := db.TruncateWAL(context.Background()); err != nil {
				b.Logf("truncate the WAL of %s: %v", db.Path(), err)
			}
		}
	}
	return dirBytes(rt.cfg.DataDir)
}

// BenchmarkSoak is `make bench-soak`: ORA_SOAK_WAVES waves (default 100,000)
// from ORA_BENCH_WORKERS concurrent senders (default 8) into one runtime,
// printing waves/s per window of ORA_SOAK_WINDOW waves (default 10,000) and
// the process's RSS, and reporting the first and last windows' rates, their
// ratio and the RSS at the start and the end. ORA_SOAK_RETENTION (default
// 2m) is the retention of facts, packets, jobs files and finished
// executions, swept every second: past it, the data dir should stay flat.
// It runs the soak once,
// whatever b.N is: run it with -benchtime 1x. Being long, it runs only when
// ORA_SOAK_WAVES is set (make bench-soak sets it), not under make bench.
func BenchmarkSoak(b *testing.B) {
	if os.Getenv("ORA_SOAK_WAVES") == "" {
		b.Skip("the soak runs with ORA_SOAK_WAVES set: make bench-soak")
	}
	keep := 2 * time.Minute
	if v := os.Getenv("ORA_SOAK_RETENTION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("ORA_SOAK_RETENTION=%q: want a positive duration", v)
		}
		keep = d
	}
	rt, srv, src := benchRuntime(b, func(c *Config) {
		k := Duration(keep)
		c.Retention.Facts, c.Retention.Packets, c.Retention.Jobs, c.Retention.Executions = k, k, k, k
		c.Retention.SweepEvery = Duration(time.Second)
	})
	waves := envInt("ORA_SOAK_WAVES", 100_000)
	window := min(envInt("ORA_SOAK_WINDOW", 10_000), waves)
	workers := envInt("ORA_BENCH_WORKERS", 8)
	rss0 := rssKB()
	var (
		mu      sync.Mutex
		count   int
		winT0   = time.Now()
		rates   []float64
		winLats []time.Duration
		data    []int64 // the data dir's bytes at the end of each window
	)
	start := winT0
	b.ResetTimer()
	sendWaves(b, rt, srv, src, "soak", waves, workers, func(_ int, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		count++
		winLats = append(winLats, d)
		if count%window != 0 {
			return
		}
		now := time.Now()
		rate := float64(window) / now.Sub(winT0).Seconds()
		rates = append(rates, rate)
		sort.Slice(winLats, func(i, j int) bool { return winLats[i] < winLats[j] })
		n := dirBytes(rt.cfg.DataDir)
		growth := "-"
		if len(data) > 0 {
			growth = fmt.Sprintf("%+.1f KB/wave", float64(n-data[len(data)-1])/1024/float64(window))
		}
		data = append(data, n)
		fmt.Fprintf(os.Stderr, "soak: waves %d-%d: %.1f waves/s, p50 %.1f ms, p99 %.1f ms, RSS %d MB, data %.1f MB (%s), %s\n",
			count-window+1, count, rate,
			float64(winLats[len(winLats)/2].Microseconds())/1000,
			float64(winLats[int(0.99*float64(len(winLats)-1))].Microseconds())/1000,
			rssKB()/1024, float64(n)/(1<<20), growth, now.Sub(start).Round(time.Second))
		winT0, winLats = now, winLats[:0]
	})
	b.StopTimer()
	if len(rates) == 0 {
		return
	}
	first, last := rates[0], rates[len(rates)-1]
	b.ReportMetric(float64(count)/time.Since(start).Seconds(), "waves/s")
	b.ReportMetric(first, "first-window-waves/s")
	b.ReportMetric(last, "last-window-waves/s")
	b.ReportMetric(last/first, "last/first")
	b.ReportMetric(float64(rss0)/1024, "rss-start-MB")
	b.ReportMetric(float64(rssKB())/1024, "rss-end-MB")
	b.ReportMetric(float64(data[len(data)-1])/(1<<20), "data-end-MB")
}

// dirBytes returns the bytes of the files under dir (the runtime's data:
// the ledger and engine databases, their WALs, the jobs and bodies folders),
// and of the folders themselves. The soak reports it beside RSS.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// processCPU is the user and system CPU the process has spent so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssKB returns the process's resident set size in kB (VmRSS), 0 where
// /proc is not there.
func rssKB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}
