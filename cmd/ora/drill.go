package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ora-runtime/ora/shared/embedded"
	"github.com/ora-runtime/ora/shared/observe"
)

var _ = register("drill", "run chaos drills against a throwaway ora dev and report how waves recover", runDrill)

const drillUsage = `usage: ora drill [NAME] [--waves N] [--json]

Runs chaos drills (injected failures the operator must handle), each against a fresh embedded runtime in a
temporary folder: faults injected by configuration at a stage, a crash of
ora dev mid-wave, a store outage. Paused waves are resumed through the API as
an operator would. Per drill it prints: waves started, waves ended with a
verdict, waves stuck, actions run twice (must be 0) and the time to resume
(the operator's MTTR; for the crash, from the restart to the last verdict).

drills:
%s
flags:
  --waves N   waves sent per drill (default 3)
  --json      print the results as JSON

exit status: 0 every drill ended every wave with no action run twice, 1 not,
2 bad usage.
`

// drill is one chaos scenario.
type drill struct {
	name, about string
	faults      []embedded.FaultConfig
	crash       bool // stop the runtime mid-wave and start another on its folder
}

var drills = []drill{
	{name: "orient", about: "a fault at Fetch (orientation) in the first wave",
		faults: []embedded.FaultConfig{{State: "Fetch", Error: "InternalError", Cause: "drill: fetch down", Times: 1}}},
	{name: "reason", about: "a fault at Reason in the first wave",
		faults: []embedded.FaultConfig{{State: "Reason", Error: "InternalError", Cause: "drill: reasoner down", Times: 1}}},
	{name: "act", about: "a fault at Act in the first two waves",
		faults: []embedded.FaultConfig{{State: "Act", Error: "InternalError", Cause: "drill: actor down", Times: 2}}},
	{name: "validate", about: "a fault at the technical validator after the action ran",
		faults: []embedded.FaultConfig{{State: "Technical validator", Error: "InternalError", Cause: "drill: validator down", Times: 1}}},
	{name: "crash", about: "ora dev stops mid-wave and a new one starts on the same folder", crash: true},
	{name: "store-outage", about: "the store answers TransientError to Compile 16 times in a row: a wave's task retries run out, the operator retries it after a backoff",
		faults: []embedded.FaultConfig{{State: "Compile orientation packet", Error: "TransientError", Cause: "drill: store unavailable", Times: 16}}},
}

// DrillResult is one drill's outcome.
type DrillResult struct {
	Name          string  `json:"name"`
	Started       int     `json:"waves_started"`
	Ended         int     `json:"ended_with_verdict"`
	Stuck         int     `json:"stuck"`
	ActionsTwice  int     `json:"actions_run_twice"`
	ResumeSeconds float64 `json:"time_to_resume_seconds"`
	Paused        int     `json:"paused"`
	AutoRetried   int     `json:"auto_retried"`
	Error         string  `json:"error,omitempty"`
}

func drillList() string {
	var b strings.Builder
	for _, d := range drills {
		fmt.Fprintf(&b, "  %-13s %s\n", d.name, d.about)
	}
	return b.String()
}

func runDrill(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	usage := fmt.Sprintf(drillUsage, drillList())
	fs := flag.NewFlagSet("drill", flag.ContinueOnError)
	waves := fs.Int("waves", 3, "waves per drill")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code := parseInterleaved(fs, args, usage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) > 1 || *waves < 1 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	run := drills
	if len(pos) == 1 {
		run = nil
		for _, d := range drills {
			if d.name == pos[0] {
				run = append(run, d)
			}
		}
		if run == nil {
			fmt.Fprintf(stderr, "ora drill: no drill %q\n\n%s", pos[0], usage)
			return 2
		}
	}
	// The actor logs through the default logger: keep the report readable.
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	defer slog.SetDefault(prev)
	var results []DrillResult
	ok := true
	if !*asJSON {
		fmt.Fprintf(stdout, "%-13s %7s %7s %5s %12s %15s\n", "drill", "started", "verdict", "stuck", "actions x2", "time to resume")
	}
	for _, d := range run {
		res := d.run(ctx, *waves)
		results = append(results, res)
		if res.Error != "" || res.Stuck > 0 || res.ActionsTwice > 0 || res.Ended != res.Started {
			ok = false
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "%-13s %7d %7d %5d %12d %15s", res.Name, res.Started, res.Ended, res.Stuck, res.ActionsTwice, seconds(res.ResumeSeconds))
			if res.Error != "" {
				fmt.Fprintf(stdout, "  error: %s", res.Error)
			}
			fmt.Fprintln(stdout)
		}
	}
	if *asJSON {
		b, _ := json.Marshal(results)
		writeJSONIndented(stdout, b)
	}
	if !ok {
		return 1
	}
	return 0
}

// fastClock runs the engine's waits (retry intervals, backoffs) 50 times
// faster, so a drill takes seconds.
type fastClock struct{}

func (fastClock) Now() time.Time                         { return time.Now() }
func (fastClock) After(d time.Duration) <-chan time.Time { return time.After(d / 50) }

// actionCounter counts the notify actions the runtime performs, per decision:
// a count above one is an action run twice.
type actionCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *actionCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *actionCounter) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *actionCounter) WithGroup(string) slog.Handler            { return c }
func (c *actionCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "notify" {
		return nil
	}
	var key string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "decision_id" || a.Key == "subject" {
			key += a.Value.String() + "/"
		}
		return true
	})
	c.mu.Lock()
	c.counts[key]++
	c.mu.Unlock()
	return nil
}

func (c *actionCounter) twice() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.counts {
		if v > 1 && strings.Contains(k, "-") { // a decision's action, not the runtime's own notices
			n++
		}
	}
	return n
}

func (d drill) run(ctx context.Context, waves int) (res DrillResult) {
	res = DrillResult{Name: d.name}
	dir, err := os.MkdirTemp("", "ora-drill-")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer os.RemoveAll(dir)
	faults, _ := yaml.Marshal(map[string]any{"faults": d.faults})
	// A config file names its own sources and tokens (the built-in
	// development credentials are for `make run` alone).
	cfgText := fmt.Sprintf("listen: 127.0.0.1:0\ndata_dir: %s\n", dir) + `sources:
  - {name: demo, type: hmac, secret: drill-demo-secret, header: X-Ora-Signature}
tokens:
  - {token: drill-operator-token, subject: drill, scopes: [ora.approve, ora.operate, ora.read, orientation.read]}
`
	if len(d.faults) > 0 {
		cfgText += string(faults)
	}
	cfgFile := filepath.Join(dir, "ora.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o600); err != nil {
		res.Error = err.Error()
		return res
	}
	cfg, err := embedded.LoadConfig(cfgFile)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	counter := &actionCounter{counts: map[string]int{}}
	start := func() (*embedded.Runtime, *httptest.Server, error) {
		rt, err := embedded.New(ctx, cfg, func(o *embedded.Options) { o.Logger, o.Clock = slog.New(counter), fastClock{} })
		if err != nil {
			return nil, nil, err
		}
		return rt, httptest.NewServer(rt.Handler()), nil
	}
	rt, srv, err := start()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer func() { srv.Close(); rt.Close() }()
	src, _ := cfg.Source("demo")
	token := ""
	for _, t := range cfg.Tokens {
		token = t.Token
	}
	var ids []string
	for i := range waves {
		body := []byte(fmt.Sprintf(`{"confidence":"high","drill":%q,"n":%d}`, d.name, i))
		h, _ := observe.SignDelivery(src, body, time.Now(), fmt.Sprintf("drill-%s-%d-%d", d.name, i, time.Now().UnixNano()))
		status, resp, err := apiCall(ctx, http.MethodPost, srv.URL+"/webhooks/demo", h, body)
		if err != nil || status != http.StatusAccepted {
			res.Error = fmt.Sprintf("webhook: %d %v %s", status, err, resp)
			return res
		}
		var rec observe.Receipt
		_ = json.Unmarshal(resp, &rec)
		ids = append(ids, rec.WaveID)
		res.Started++
	}
	restarted := time.Time{}
	if d.crash {
		time.Sleep(30 * time.Millisecond) // mid-wave
		srv.Close()
		if err := rt.Close(); err != nil {
			res.Error = "crash: " + err.Error()
			return res
		}
		restarted = time.Now()
		if rt, srv, err = start(); err != nil {
			res.Error = "restart: " + err.Error()
			return res
		}
	}
	auth := http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
	done := map[string]bool{}
	lastDone := time.Time{}
	for deadline := time.Now().Add(60 * time.Second); len(done) < len(ids) && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, id := range ids {
			if done[id] {
				continue
			}
			status, resp, err := apiCall(ctx, http.MethodGet, srv.URL+"/waves/"+id, auth, nil)
			if err != nil || status != http.StatusOK {
				continue
			}
			var w struct {
				Status   string `json:"status"`
				Operator struct {
					State string `json:"state"`
				} `json:"operator"`
			}
			_ = json.Unmarshal(resp, &w)
			switch {
			case w.Status != "RUNNING":
				done[id], lastDone = true, time.Now()
			case w.Operator.State == "PAUSED":
				_, _, _ = apiCall(ctx, http.MethodPost, srv.URL+"/waves/"+id+"/resume", auth, []byte(`{"as_is":true}`)) // a drill's faults are passing: nothing to patch
			}
		}
	}
	for _, id := range ids {
		if !done[id] {
			res.Stuck++
			continue
		}
		_, resp, _ := apiCall(ctx, http.MethodGet, srv.URL+"/signals/"+id, auth, nil)
		if strings.Contains(string(resp), `"kind":"final-verdict"`) {
			res.Ended++
		}
	}
	res.ActionsTwice = counter.twice()
	_, resp, _ := apiCall(ctx, http.MethodGet, srv.URL+"/incidents", auth, nil)
	var inc struct {
		Incidents []struct {
			Occurrences []struct {
				Action string `json:"action"`
			} `json:"occurrences"`
		} `json:"incidents"`
		Summary struct {
			MTTR float64 `json:"mttr_seconds"`
		} `json:"summary"`
	}
	_ = json.Unmarshal(resp, &inc)
	for _, i := range inc.Incidents {
		for _, o := range i.Occurrences {
			switch o.Action {
			case "pause":
				res.Paused++
			case "retry":
				res.AutoRetried++
			}
		}
	}
	res.ResumeSeconds = inc.Summary.MTTR
	if d.crash && !lastDone.IsZero() {
		res.ResumeSeconds = lastDone.Sub(restarted).Seconds()
	}
	return res
}
