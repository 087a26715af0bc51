package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/motor"
)

const canaryUsage = `usage: ora motor canary VERSION [--share F] [--sources A,B] [--waves N] [--duration D]
                  [--tolerance F] [--max-cost F] [--max-latency F] [--reason R]
                  [--config FILE] [--url URL] [--token T] [--json]

Lets a proposed motor version serve part of the waves beside the current
one: a share of them (chosen by the wave id, so a wave always goes the same
way) and every wave of the named sources. When it has decided N waves or D
has passed, the first wave after that compares the two versions over the
window (validator pass rate, cost and latency per wave) and promotes the
candidate or rolls it back; the comparison is recorded with the decision and
shown by ora motor list.

flags:
  --share F        the fraction of the waves it serves, 0 to 1 (0.1: 10%)
  --sources A,B    sources whose waves it always serves
  --waves N        end after it has decided N waves
  --duration D     end after D (30m, 24h), whichever comes first
  --tolerance F    promote only if its pass rate is at least the current
                   version's minus F (default 0.05: five points)
  --max-cost F     promote only if its cost per wave is at most the current
                   version's plus F (default 0.2: 20%)
  --max-latency F  likewise for the latency per wave (default 0.2)
  --reason R       why: recorded with the canary
  --config FILE    the ora dev config file (default: the built-in defaults)
  --url URL        the API's base URL (default: http://<listen of the config>)
  --token T        the bearer token (default: the first config token with
                   scope ora.operate)
  --json           print the API's JSON

exit status: 0 started, 1 refused (a canary already runs, the gate failed,
not proposed), unknown or unreachable, 2 bad usage.
`

// runMotorCanary is "ora motor canary": POST /motor/versions/{v}/canary.
func runMotorCanary(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("motor canary", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, true)
	var req motor.CanaryRequest
	fs.Float64Var(&req.Share, "share", 0, "the fraction of the waves")
	sources := fs.String("sources", "", "sources it always serves")
	fs.IntVar(&req.Waves, "waves", 0, "end after N waves")
	fs.StringVar(&req.Duration, "duration", "", "end after D")
	tolerance := fs.Float64("tolerance", motor.DefaultPassTolerance, "pass rate tolerance")
	maxCost := fs.Float64("max-cost", motor.DefaultMaxCostIncrease, "cost increase allowed")
	maxLatency := fs.Float64("max-latency", motor.DefaultMaxLatencyIncrease, "latency increase allowed")
	fs.StringVar(&req.Reason, "reason", "", "why")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code := parseInterleaved(fs, args, canaryUsage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "ora motor canary: want one VERSION\n\n%s", canaryUsage)
		return 2
	}
	if req.Share == 0 && *sources == "" {
		fmt.Fprintf(stderr, "ora motor canary: give --share or --sources\n\n%s", canaryUsage)
		return 2
	}
	if req.Waves == 0 && req.Duration == "" {
		fmt.Fprintf(stderr, "ora motor canary: give --waves or --duration\n\n%s", canaryUsage)
		return 2
	}
	for _, s := range strings.Split(*sources, ",") {
		if s = strings.TrimSpace(s); s != "" {
			req.Sources = append(req.Sources, s)
		}
	}
	req.PassTolerance, req.MaxCostIncrease, req.MaxLatencyIncrease = tolerance, maxCost, maxLatency
	cfg, base, err := cf.load()
	if err != nil {
		fmt.Fprintf(stderr, "ora motor canary: %v\n", err)
		return 1
	}
	body, _ := json.Marshal(req)
	status, resp, err := apiCall(ctx, http.MethodPost, base+"/motor/versions/"+url.PathEscape(pos[0])+"/canary", cf.jsonHeader(cfg, httpapi.ScopeOperate), body)
	if err != nil {
		fmt.Fprintf(stderr, "ora motor canary: %v\n", err)
		return 1
	}
	if status/100 != 2 {
		fmt.Fprintf(stderr, "ora motor canary: %d %s: %s\n", status, http.StatusText(status), apiErrorMessage(resp))
		return 1
	}
	if *asJSON {
		writeJSONIndented(stdout, resp)
		return 0
	}
	var ev motor.Event
	if err := json.Unmarshal(resp, &ev); err != nil || ev.Canary == nil {
		fmt.Fprintf(stderr, "ora motor canary: unexpected answer %s\n", resp)
		return 1
	}
	fmt.Fprintf(stdout, "motor %s is a canary beside %s: %s\n", ev.Version, ev.Previous, canaryScope(*ev.Canary))
	return 0
}

// canaryScope says in words what a canary serves and until when.
func canaryScope(c motor.Canary) string {
	var serves, until []string
	if c.Share > 0 {
		serves = append(serves, fmt.Sprintf("%g%% of the waves", 100*c.Share))
	}
	if len(c.Sources) > 0 {
		serves = append(serves, "the waves of "+strings.Join(c.Sources, ", "))
	}
	if c.Waves > 0 {
		until = append(until, fmt.Sprintf("it has decided %d waves", c.Waves))
	}
	if !c.Until.IsZero() {
		until = append(until, c.Until.UTC().Format(traceTime))
	}
	return fmt.Sprintf("serves %s until %s (pass rate within %g points, cost +%g%%, latency +%g%%)",
		strings.Join(serves, " and "), strings.Join(until, " or "), 100*c.Policy.PassTolerance, 100*c.Policy.MaxCostIncrease, 100*c.Policy.MaxLatencyIncrease)
}
