package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
)

var (
	_ = register("motor", "list, propose, promote or roll back motor versions", runMotor)
	_ = register("replay", "replay the golden waves under a motor version and report what changed", runReplay)
)

const motorUsage = `usage: ora motor list|propose FILE|promote VERSION|rollback|canary VERSION|record [--reason R] [--config FILE] [--url URL] [--token T] [--json]

The motor is what turns signals into decisions: the rules file, the prompts
and model profile, the validator settings, the orientation profile, as one
semantic version.

  list              the versions (current, previous, proposed, retired), each
                    with its diff from the current one, and the promotions
  propose FILE      store a new version; FILE is YAML: version, rules_file (a
                    path relative to FILE) or rules (inline), model,
                    validators, orientation.token_budget, changelog, and
                    learned: the ids of the learned patterns it carries
                    (ora patterns list); without learned it carries the
                    current version's, learned: [] none. Any other key is
                    refused
  promote VERSION   make it current; refused (409) unless it passes the golden
                    replay and the contract checks, naming the failing waves
  rollback          make the previous version current again
  canary VERSION    let it serve a share of the waves, then promote or roll
                    it back by policy (ora motor canary --help)
  record            run the golden set once through the configured model and
                    keep its answers for the gate (ora motor record --help)

flags:
  --reason R      why (promote, rollback): recorded with the change
  --config FILE   the ora dev config file (default: the built-in defaults)
  --url URL       the API's base URL (default: http://<listen of the config>)
  --token T       the bearer token (default: the first config token with
                  scope ora.operate, or ora.read for list)
  --json          print the API's JSON

exit status: 0 done, 1 refused (409), unknown or unreachable, 2 bad usage.
`

// bundleFile is the YAML a proposal is written in.
type bundleFile struct {
	Version     string            `yaml:"version"`
	Rules       string            `yaml:"rules"`
	RulesFile   string            `yaml:"rules_file"`
	Model       any               `yaml:"model"`
	Validators  any               `yaml:"validators"`
	Orientation motor.Orientation `yaml:"orientation"`
	Changelog   string            `yaml:"changelog"`
	// Learned are the ids of the learned patterns the version carries;
	// absent (nil): the current version's.
	Learned *[]string `yaml:"learned"`
}

// proposal is a proposal file read: the bundle, and the learned patterns'
// ids it names (nil: the key is absent).
type proposal struct {
	motor.Bundle
	learned *[]string
}

// readBundle reads a proposal file's bundle (its learned ids left out).
func readBundle(path string) (motor.Bundle, error) {
	p, err := readProposal(path)
	return p.Bundle, err
}

// readProposal reads a proposal file; a key it does not know is refused.
func readProposal(path string) (proposal, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return proposal{}, err
	}
	var f bundleFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return proposal{}, fmt.Errorf("%s: %w (the keys: version, rules or rules_file, model, validators, orientation, changelog, learned)", path, err)
	}
	if f.RulesFile != "" {
		if f.Rules != "" {
			return proposal{}, fmt.Errorf("%s: give rules or rules_file, not both", path)
		}
		p := f.RulesFile
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		r, err := os.ReadFile(p)
		if err != nil {
			return proposal{}, fmt.Errorf("%s: rules_file: %w", path, err)
		}
		f.Rules = string(r)
	}
	out := motor.Bundle{Version: f.Version, Rules: f.Rules, Orientation: f.Orientation, Changelog: f.Changelog}
	for _, x := range []struct {
		v   any
		dst *json.RawMessage
	}{{f.Model, &out.Model}, {f.Validators, &out.Validators}} {
		if x.v != nil {
			j, err := json.Marshal(x.v)
			if err != nil {
				return proposal{}, fmt.Errorf("%s: %w", path, err)
			}
			*x.dst = j
		}
	}
	return proposal{Bundle: out, learned: f.Learned}, nil
}

// withLearned sets the learned patterns p names from the patterns the API
// knows (GET /motor/patterns, fetched by list), in the order named. An id
// it does not know, or one named twice, is refused: nothing is proposed.
// The JSON returned carries "learned" even when empty (carry none), which
// the bundle's own encoding would leave out (carry the current's).
func (p proposal) withLearned(list func() ([]operate.Pattern, error)) ([]byte, error) {
	if p.learned == nil {
		return json.Marshal(p.Bundle)
	}
	known, err := list()
	if err != nil {
		return nil, fmt.Errorf("learned: reading the learned patterns: %w", err)
	}
	byID := map[string]operate.Pattern{}
	for _, q := range known {
		byID[q.ID] = q
	}
	p.Bundle.Learned = []operate.Pattern{}
	seen := map[string]bool{}
	for _, id := range *p.learned {
		q, ok := byID[id]
		switch {
		case !ok:
			return nil, fmt.Errorf("learned: %q is not a learned pattern (ora patterns list shows them); nothing proposed", id)
		case seen[id]:
			return nil, fmt.Errorf("learned: %q is named twice; nothing proposed", id)
		}
		seen[id] = true
		q.Motor = "" // the version carrying it is the bundle's own
		p.Bundle.Learned = append(p.Bundle.Learned, q)
	}
	body, err := json.Marshal(p.Bundle)
	if err != nil || len(p.Bundle.Learned) > 0 {
		return body, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	m["learned"] = json.RawMessage("[]")
	return json.Marshal(m)
}

func runMotor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "canary" {
		return runMotorCanary(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "record" {
		return runMotorRecord(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("motor", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, true)
	reason := fs.String("reason", "", "why")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code := parseInterleaved(fs, args, motorUsage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) == 0 {
		fmt.Fprint(stderr, "ora motor: want a subcommand\n\n"+motorUsage)
		return 2
	}
	want := map[string]int{"list": 1, "propose": 2, "promote": 2, "rollback": 1}
	if n, ok := want[pos[0]]; !ok || len(pos) != n {
		fmt.Fprintf(stderr, "ora motor: bad arguments %q\n\n%s", strings.Join(pos, " "), motorUsage)
		return 2
	}
	cfg, base, err := cf.load()
	if err != nil {
		fmt.Fprintf(stderr, "ora motor: %v\n", err)
		return 1
	}
	scope := httpapi.ScopeOperate
	if pos[0] == "list" {
		scope = httpapi.ScopeOperatorRead
	}
	header := cf.jsonHeader(cfg, scope)
	var method, path string
	var body []byte
	switch pos[0] {
	case "list":
		method, path = http.MethodGet, "/motor/versions"
	case "propose":
		p, err := readProposal(pos[1])
		if err == nil {
			body, err = p.withLearned(func() ([]operate.Pattern, error) {
				return listPatterns(ctx, base, cf.jsonHeader(cfg, httpapi.ScopeOperatorRead))
			})
		}
		if err != nil {
			fmt.Fprintf(stderr, "ora motor propose: %v\n", err)
			return 1
		}
		method, path = http.MethodPost, "/motor/versions"
	case "promote":
		body, _ = json.Marshal(map[string]string{"reason": *reason})
		method, path = http.MethodPost, "/motor/versions/"+url.PathEscape(pos[1])+"/promote"
	case "rollback":
		body, _ = json.Marshal(map[string]string{"reason": *reason})
		method, path = http.MethodPost, "/motor/rollback"
	}
	status, resp, err := apiCall(ctx, method, base+path, header, body)
	if !apiAnswered("motor "+pos[0], status, resp, err, stderr) {
		return 1
	}
	if *asJSON {
		writeJSONIndented(stdout, resp)
		return 0
	}
	switch pos[0] {
	case "list":
		var l struct {
			Current  string          `json:"current"`
			Versions []motor.Version `json:"versions"`
			Events   []motor.Event   `json:"events"`
		}
		if err := json.Unmarshal(resp, &l); err != nil {
			fmt.Fprintf(stderr, "ora motor list: %v\n", err)
			return 1
		}
		for _, v := range l.Versions {
			fmt.Fprintf(stdout, "%-14s %-9s %s\n", v.Version, v.Status, firstLine(v.Changelog))
			for _, d := range v.Diff {
				fmt.Fprintf(stdout, "    %s\n", d)
			}
		}
		for _, e := range l.Events {
			fmt.Fprintf(stdout, "#%d %s %s (from %s) by %s at %s: %s\n", e.Seq, e.Type, e.Version, e.Previous, e.By, e.At.UTC().Format(traceTime), e.Reason)
			if e.Canary != nil {
				fmt.Fprintf(stdout, "    %s\n", canaryScope(*e.Canary))
			}
			if c := e.Comparison; c != nil {
				for _, a := range []motor.Arm{c.Candidate, c.Active} {
					fmt.Fprintf(stdout, "    %-14s %d waves, pass rate %.1f%%, cost $%.4g, latency %.0fms\n", a.Version, a.Waves, 100*a.PassRate, a.CostUSD, a.LatencyMS)
				}
			}
		}
	case "propose":
		var b motor.Bundle
		_ = json.Unmarshal(resp, &b)
		fmt.Fprintf(stdout, "motor %s proposed (digest %s); promote it with: ora motor promote %s\n", b.Version, b.Digest, b.Version)
	default:
		var e motor.Event
		_ = json.Unmarshal(resp, &e)
		fmt.Fprintf(stdout, "motor %s is current (%s from %s)\n", e.Version, e.Type, e.Previous)
	}
	return 0
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

const replayUsage = `usage: ora replay [--golden DIR | --from-ledger [--since D] [--wave ID]] [--motor VERSION]
                  [--config FILE] [--url URL] [--token T] [--json]

Re-runs recorded waves (signal and packet; the golden set that ships with
ora, a directory of exported waves, or the waves the ledger recorded) under
a motor version (default: the current one, read from the API) and reports,
wave by wave, what changed: decision, band, verdict.

flags:
  --golden DIR    a directory of exported waves (JSON, one per file)
  --from-ledger   the waves the ledger recorded (GET /motor/waves), compared
                  with what each decided then
  --since D       with --from-ledger: waves since D, a duration back from now
                  (24h, 7d) or a time (2026-11-23, RFC 3339); default 7d
  --wave ID       with --from-ledger: only this wave
  --motor VERSION the motor version to replay under
  --config, --url, --token   where the motor versions are read from
  --json          print the report as JSON

exit status: 0 nothing changed, 1 some wave changed (or an error), 2 bad usage.
`

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, true)
	goldenDir := fs.String("golden", "", "a directory of exported waves")
	fromLedger := fs.Bool("from-ledger", false, "the waves the ledger recorded")
	since := fs.String("since", "", "with --from-ledger: waves since")
	waveID := fs.String("wave", "", "with --from-ledger: one wave")
	version := fs.String("motor", "", "the motor version")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code := parseInterleaved(fs, args, replayUsage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		fmt.Fprintf(stderr, "ora replay: no arguments expected\n\n%s", replayUsage)
		return 2
	}
	if *fromLedger && *goldenDir != "" {
		fmt.Fprintf(stderr, "ora replay: give --golden or --from-ledger, not both\n\n%s", replayUsage)
		return 2
	}
	if !*fromLedger && (*since != "" || *waveID != "") {
		fmt.Fprintf(stderr, "ora replay: --since and --wave go with --from-ledger\n\n%s", replayUsage)
		return 2
	}
	var sinceAt time.Time
	if *fromLedger {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			fmt.Fprintf(stderr, "ora replay: --since: %v\n\n%s", err, replayUsage)
			return 2
		}
		sinceAt = t
	}
	cfg, base, err := cf.load()
	if err != nil {
		fmt.Fprintf(stderr, "ora replay: %v\n", err)
		return 1
	}
	header := cf.jsonHeader(cfg, httpapi.ScopeOperatorRead)
	var golden []motor.GoldenWave
	recordedMotor := map[string]string{}
	switch {
	case *fromLedger:
		q := url.Values{"since": {sinceAt.UTC().Format(time.RFC3339)}}
		if *waveID != "" {
			q.Set("wave", *waveID)
		}
		status, resp, err := apiCall(ctx, http.MethodGet, base+"/motor/waves?"+q.Encode(), header, nil)
		if err != nil || status != http.StatusOK {
			fmt.Fprintf(stderr, "ora replay: read the recorded waves: %d %v %s\n", status, err, apiErrorMessage(resp))
			return 1
		}
		var l struct {
			Waves []motor.Recorded `json:"waves"`
		}
		if err := json.Unmarshal(resp, &l); err != nil {
			fmt.Fprintf(stderr, "ora replay: the recorded waves: %v\n", err)
			return 1
		}
		for _, w := range l.Waves {
			golden = append(golden, w.GoldenWave)
			recordedMotor[w.Name] = w.MotorVersion
		}
		if len(golden) == 0 {
			fmt.Fprintf(stderr, "ora replay: the ledger recorded no decided wave since %s\n", sinceAt.UTC().Format(time.RFC3339))
			return 1
		}
	case *goldenDir != "":
		golden, err = motor.LoadGolden(*goldenDir)
	default:
		golden, err = motor.Golden()
	}
	if err != nil {
		fmt.Fprintf(stderr, "ora replay: %v\n", err)
		return 1
	}
	status, resp, err := apiCall(ctx, http.MethodGet, base+"/motor/versions", header, nil)
	if err != nil || status != http.StatusOK {
		fmt.Fprintf(stderr, "ora replay: read the motor versions: %d %v %s\n", status, err, apiErrorMessage(resp))
		return 1
	}
	var l struct {
		Current  string          `json:"current"`
		Versions []motor.Version `json:"versions"`
	}
	if err := json.Unmarshal(resp, &l); err != nil {
		fmt.Fprintf(stderr, "ora replay: %v\n", err)
		return 1
	}
	want := *version
	if want == "" {
		want = l.Current
	}
	var b *motor.Bundle
	for i := range l.Versions {
		if l.Versions[i].Version == want {
			b = &l.Versions[i].Bundle
		}
	}
	if b == nil {
		fmt.Fprintf(stderr, "ora replay: no motor version %q\n", want)
		return 1
	}
	// The golden set replays through the configured reasoner, a model one
	// answering from the set's recordings (ora motor record); the ledger's
	// waves have none, so they replay under the rules.
	var build motor.ReplayBuild
	if !*fromLedger {
		rc := cfg
		if *goldenDir != "" {
			rc.Operate.GoldenDir = *goldenDir
		}
		if build, err = rc.ReplayBuild(ctx, &bedrock.Replayer{Recordings: bedrock.DirRecordings(rc.RecordingsDir())}); err != nil {
			fmt.Fprintf(stderr, "ora replay: %v\n", err)
			return 1
		}
	}
	rep, err := motor.ReplayWith(ctx, *b, golden, build)
	if err != nil {
		fmt.Fprintf(stderr, "ora replay: %v\n", err)
		return 1
	}
	if *asJSON {
		j, _ := json.Marshal(rep)
		writeJSONIndented(stdout, j)
	} else {
		incidents := 0
		for _, c := range rep.Waves {
			if c.Want.Classification != "" {
				incidents++
			}
		}
		if incidents > 0 {
			fmt.Fprintf(stdout, "replay of %d waves and %d incidents under motor %s\n", len(rep.Waves)-incidents, incidents, rep.Motor)
		} else {
			fmt.Fprintf(stdout, "replay of %d waves under motor %s\n", len(rep.Waves), rep.Motor)
		}
		for _, c := range rep.Waves {
			mark := "same"
			if len(c.Changed) > 0 {
				mark = "CHANGED " + strings.Join(c.Changed, ",")
			}
			was := ""
			if v := recordedMotor[c.Name]; v != "" {
				was = " (recorded under motor " + v + ")"
			}
			if c.Want.Classification != "" { // a golden incident
				fmt.Fprintf(stdout, "  %-20s %-24s incident classified %s/%s -> %s/%s\n", c.Name, mark,
					c.Want.Classification, c.Want.Taxonomy, c.Got.Classification, c.Got.Taxonomy)
				continue
			}
			fmt.Fprintf(stdout, "  %-20s %-24s decision %s -> %s, band %s -> %s, verdict %s -> %s%s %s\n", c.Name, mark,
				c.Want.Action, c.Got.Action, c.Want.Band, c.Got.Band, c.Want.Verdict, c.Got.Verdict, was, c.Error)
		}
		fmt.Fprintf(stdout, "%d changed\n", len(rep.Failing))
	}
	if len(rep.Failing) > 0 {
		return 1
	}
	return 0
}

// parseSince reads --since: empty (7 days back), a duration back from now
// ("24h", "90m", or whole days "7d"), a date (2026-11-23, UTC) or an RFC 3339
// time.
func parseSince(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return now.Add(-httpapi.DefaultRecordedSince), nil
	}
	if d, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a duration (24h, 7d), a date (2026-11-23) or an RFC 3339 time", v)
}

// listPatterns reads the learned patterns (GET /motor/patterns).
func listPatterns(ctx context.Context, base string, header http.Header) ([]operate.Pattern, error) {
	status, resp, err := apiCall(ctx, http.MethodGet, base+"/motor/patterns", header, nil)
	if err != nil {
		return nil, err
	}
	if status/100 != 2 {
		return nil, fmt.Errorf("GET /motor/patterns: %d %s: %s", status, http.StatusText(status), apiErrorMessage(resp))
	}
	var l struct {
		Patterns []operate.Pattern `json:"patterns"`
	}
	if err := json.Unmarshal(resp, &l); err != nil {
		return nil, fmt.Errorf("GET /motor/patterns: %w", err)
	}
	return l.Patterns, nil
}
