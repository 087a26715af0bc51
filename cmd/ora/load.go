package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/embedded"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/observe"
)

var _ = register("load", "send N signed webhooks from M senders to ora dev and measure waves/s and signal-to-verdict latency", runLoad)

const loadUsage = `usage: ora load [--config FILE] [--url URL] [--token T] [--source NAME]
                [--n N] [--senders M] [--body FILE] [--poll D] [--timeout D]
                [--pid PID] [--json]

Sends N webhooks signed as the source NAME of the config file from M
concurrent senders to a running ora dev. Each sender posts one webhook, waits
until its wave has its verdict (it polls GET /waves/{id} until the wave's
execution has ended), then posts the next. Prints the waves per second (from
the first post to the last verdict) and the p50 and p99 latency from a
webhook's post to its wave's end: the time of the execution's last history
event, read from the same clock when ora load runs on ora dev's host, else
the time the sender saw the wave ended.

flags:
  --config FILE   the ora dev config file (default: the built-in defaults)
  --url URL       the API's base URL (default: http://<listen of the config>)
  --token T       the bearer token for GET /waves (default: the first config
                  token with ora.read)
  --source NAME   the webhook source (default: the first hmac source)
  --n N           the webhooks to send (default 3000)
  --senders M     the concurrent senders (default 8)
  --body FILE     the webhook body (default {"confidence":"high"}: a wave
                  the default rules decide at once)
  --poll D        the shortest wait between two polls of a wave (default
                  1ms); the wait grows to a quarter of the time waited so far,
                  up to 50ms or D if longer. A longer D leaves the senders
                  idle longer; ora dev's CPU barely changes (the last poll,
                  which renders the whole history, costs the most)
  --timeout D     how long to wait for all the verdicts (default 10m)
  --pid PID       ora dev's process id, on the same Linux host: also print the
                  CPU it spent per wave (user and system, from /proc)
  --json          print the figures as one JSON object

exit status: 0 every wave reached a verdict, 1 a webhook was refused, a wave
did not end in time or the API is unreachable (the first error on stderr),
2 bad usage.
`

// loadResult is what ora load measured; --json prints it.
type loadResult struct {
	Sent     int            `json:"sent"`
	Senders  int            `json:"senders"`
	Accepted int            `json:"accepted"`
	Verdicts int            `json:"verdicts"`
	ByStatus map[string]int `json:"by_status"`
	Errors   int            `json:"errors"`
	Seconds  float64        `json:"seconds"`
	WavesPS  float64        `json:"waves_per_second"`
	P50ms    float64        `json:"p50_ms"`
	P99ms    float64        `json:"p99_ms"`
	MaxMs    float64        `json:"max_ms"`
	// ServerCPUms is the CPU ora dev spent per wave (--pid), 0 when unknown.
	ServerCPUms float64 `json:"server_cpu_ms_per_wave,omitempty"`
	// ServerClock reports whether the latencies were read from the waves'
	// histories (the same clock) rather than seen by the senders.
	ServerClock bool `json:"server_clock"`
}

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("load", loadUsage, stderr)
	var cf clientFlags
	cf.register(fs, true)
	source := fs.String("source", "", "the webhook source")
	n := fs.Int("n", 3000, "the webhooks to send")
	senders := fs.Int("senders", 8, "the concurrent senders")
	bodyFile := fs.String("body", "", "the webhook body")
	poll := fs.Duration("poll", time.Millisecond, "the shortest wait between two polls of a wave")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long to wait for all the verdicts")
	pid := fs.Int("pid", 0, "ora dev's process id")
	asJSON := fs.Bool("json", false, "print the figures as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || *n < 1 || *senders < 1 {
		fmt.Fprintf(stderr, "ora load: want no arguments, --n and --senders at least 1\n\n%s", loadUsage)
		return 2
	}
	cfg, base, err := cf.load()
	if err != nil {
		fmt.Fprintf(stderr, "ora load: %v\n", err)
		return 1
	}
	src, err := loadSource(cfg, *source)
	if err != nil {
		fmt.Fprintf(stderr, "ora load: %v\n", err)
		return 1
	}
	body := []byte(`{"confidence":"high"}`)
	if *bodyFile != "" {
		if body, err = readSendInput(*bodyFile); err != nil {
			fmt.Fprintf(stderr, "ora load: %v\n", err)
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	l := loader{
		base: base, src: src, body: body, read: cf.jsonHeader(cfg, httpapi.ScopeRead),
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *senders}},
		prefix: fmt.Sprintf("load-%d", time.Now().UnixNano()), poll: max(*poll, time.Millisecond),
	}
	cpu0, cpuErr := processCPU(*pid)
	res, firstErr := l.run(ctx, *n, *senders)
	if cpu1, err := processCPU(*pid); *pid > 0 && cpuErr == nil && err == nil && res.Verdicts > 0 {
		res.ServerCPUms = float64(cpu1-cpu0) / 1e6 / float64(res.Verdicts)
	} else if *pid > 0 {
		fmt.Fprintf(stderr, "ora load: the CPU of process %d: %v\n", *pid, errors.Join(cpuErr, err))
	}
	if *asJSON {
		writeJSONIndented(stdout, marshalOrNull(res))
	} else {
		fmt.Fprintf(stdout, "load: %d waves from %d senders in %.1f s: %.1f waves/s; webhook -> verdict p50 %.1f ms, p99 %.1f ms, max %.1f ms; verdicts %d of %d %v",
			res.Verdicts, res.Senders, res.Seconds, res.WavesPS, res.P50ms, res.P99ms, res.MaxMs, res.Verdicts, res.Sent, res.ByStatus)
		if res.ServerCPUms > 0 {
			fmt.Fprintf(stdout, "; ora dev's CPU %.1f ms/wave", res.ServerCPUms)
		}
		fmt.Fprintln(stdout)
	}
	if firstErr != nil {
		fmt.Fprintf(stderr, "ora load: %d error(s), the first: %v\n", res.Errors, firstErr)
		return 1
	}
	return 0
}

// loadSource is the source named name, or the config's first hmac source.
func loadSource(cfg embedded.Config, name string) (observe.SourceConfig, error) {
	if name != "" {
		if src, ok := cfg.Source(name); ok {
			return src, nil
		}
		return observe.SourceConfig{}, fmt.Errorf("no source %q in the config (sources: %s)", name, sourceNames(cfg))
	}
	for _, s := range cfg.Sources {
		if src, ok := cfg.Source(s.Name); ok && src.Type == observe.TypeHMAC {
			return src, nil
		}
	}
	return observe.SourceConfig{}, fmt.Errorf("no hmac source in the config to sign as (sources: %s): name one with --source", sourceNames(cfg))
}

// loader sends the webhooks and waits for their waves.
type loader struct {
	base   string
	src    observe.SourceConfig
	body   []byte
	read   http.Header
	client *http.Client
	prefix string
	poll   time.Duration // the shortest wait between two polls
}

// waveOutcome is what one webhook came to.
type waveOutcome struct {
	status  string
	latency time.Duration
	server  bool // latency read from the wave's history
}

func (l loader) run(ctx context.Context, n, senders int) (loadResult, error) {
	res := loadResult{Sent: n, Senders: senders, ByStatus: map[string]int{}, ServerClock: true}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		firstErr  error
	)
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range senders {
		wg.Go(func() {
			for i := range next {
				out, accepted, err := l.one(ctx, i)
				mu.Lock()
				if accepted {
					res.Accepted++
				}
				if err != nil {
					res.Errors++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					res.Verdicts++
					res.ByStatus[out.status]++
					res.ServerClock = res.ServerClock && out.server
					latencies = append(latencies, out.latency)
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	res.Seconds = elapsed.Seconds()
	if len(latencies) > 0 {
		slices.Sort(latencies)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		res.WavesPS = float64(len(latencies)) / elapsed.Seconds()
		res.P50ms = ms(latencies[len(latencies)/2])
		res.P99ms = ms(latencies[int(0.99*float64(len(latencies)-1))])
		res.MaxMs = ms(latencies[len(latencies)-1])
	}
	if firstErr == nil && res.Verdicts < n {
		firstErr = fmt.Errorf("%d of %d waves reached a verdict before the timeout", res.Verdicts, n)
	}
	return res, firstErr
}

// one posts the i-th webhook and waits for its wave to end.
func (l loader) one(ctx context.Context, i int) (waveOutcome, bool, error) {
	id := fmt.Sprintf("%s-%d", l.prefix, i)
	t0 := time.Now()
	h, err := observe.SignDelivery(l.src, l.body, t0, id)
	if err != nil {
		return waveOutcome{}, false, fmt.Errorf("sign as %s: %w", l.src.Name, err)
	}
	h.Set("Idempotency-Key", id)
	h.Set("Content-Type", "application/json")
	status, b, err := clientCall(ctx, l.client, http.MethodPost, l.base+"/webhooks/"+url.PathEscape(l.src.Name), h, l.body)
	if err != nil {
		return waveOutcome{}, false, err
	}
	if status < 200 || status > 299 {
		return waveOutcome{}, false, fmt.Errorf("webhook %d: %d %s: %s", i, status, http.StatusText(status), apiErrorMessage(b))
	}
	var rec observe.Receipt
	if err := json.Unmarshal(b, &rec); err != nil || rec.WaveID == "" {
		return waveOutcome{}, true, fmt.Errorf("webhook %d: the receipt names no wave: %s", i, strings.TrimSpace(string(b)))
	}
	// Poll at a growing interval: a quarter of the time waited so far,
	// between l.poll and 50 ms (or l.poll), so that a quick wave is seen
	// quickly and a slow one is not asked about hundreds of times.
	for {
		wait := min(max(time.Since(t0)/4, l.poll), max(l.poll, 50*time.Millisecond))
		select {
		case <-ctx.Done():
			return waveOutcome{}, true, fmt.Errorf("wave %s: no verdict: %w", rec.WaveID, ctx.Err())
		case <-time.After(wait):
		}
		status, b, err := clientCall(ctx, l.client, http.MethodGet, l.base+"/waves/"+url.PathEscape(rec.WaveID), l.read, nil)
		seen := time.Since(t0)
		if err != nil {
			return waveOutcome{}, true, err
		}
		if status != http.StatusOK {
			return waveOutcome{}, true, fmt.Errorf("wave %s: %d %s: %s", rec.WaveID, status, http.StatusText(status), apiErrorMessage(b))
		}
		var w struct {
			Status  string `json:"status"`
			History []struct {
				Timestamp time.Time `json:"timestamp"`
			} `json:"history"`
		}
		if err := json.Unmarshal(b, &w); err != nil {
			return waveOutcome{}, true, fmt.Errorf("wave %s: the API answered something that is not a wave: %v", rec.WaveID, err)
		}
		if w.Status == "RUNNING" || w.Status == "PENDING_REDRIVE" {
			continue
		}
		out := waveOutcome{status: w.Status, latency: seen}
		// The end as the wave's history has it, when that clock agrees
		// with this one (the same host): the latency is then not rounded up
		// to the next poll.
		if len(w.History) > 0 {
			if d := w.History[len(w.History)-1].Timestamp.Sub(t0); d > 0 && d <= seen {
				out.latency, out.server = d, true
			}
		}
		return out, true, nil
	}
}

// processCPU returns the user and system CPU process pid has spent, from
// /proc/PID/stat (Linux); 0 and no error for pid 0.
func processCPU(pid int) (time.Duration, error) {
	if pid <= 0 {
		return 0, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command (in parentheses, which may hold spaces):
	// state is the 3rd field of the line, utime the 14th and stime the 15th.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command, want at least 13", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	// USER_HZ is 100 on every Linux platform Go supports.
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
