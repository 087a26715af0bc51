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
	"sort"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/operate"
)

var (
	_ = register("incidents", "list the operator's incidents, with MTTR and resumption rate", runIncidents)
	_ = register("resume", "resume a paused wave at the stage that failed", runResume)
)

const incidentsUsage = `usage: ora incidents [--config FILE] [--url URL] [--token T] [--json]

Lists the operator's incidents (failures deduplicated by class, stage, error and
motor version), newest first, then the KPIs: occurrences, paused, resumed,
resumption rate and MTTR (mean time from failure to resume).

flags:
  --config FILE   the ora dev config file (default: the built-in defaults)
  --url URL       the API's base URL (default: http://<listen of the config>)
  --token T       the bearer token (default: the first config token with
                  scope ora.read; none is needed on loopback)
  --json          print the API's JSON

exit status: 0 listed, 1 refused or unreachable, 2 bad usage.
`

func runIncidents(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("incidents", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, true)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code := parseInterleaved(fs, args, incidentsUsage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		fmt.Fprintf(stderr, "ora incidents: no arguments expected, got %d\n\n%s", len(pos), incidentsUsage)
		return 2
	}
	cfg, base, err := cf.load()
	if err != nil {
		fmt.Fprintf(stderr, "ora incidents: %v\n", err)
		return 1
	}
	header := cf.jsonHeader(cfg, httpapi.ScopeOperatorRead)
	status, resp, err := apiCall(ctx, http.MethodGet, base+"/incidents", header, nil)
	if err != nil {
		fmt.Fprintf(stderr, "ora incidents: %v\n", err)
		return 1
	}
	if status != http.StatusOK {
		fmt.Fprintf(stderr, "ora incidents: %d %s: %s\n", status, http.StatusText(status), apiErrorMessage(resp))
		return 1
	}
	if *asJSON {
		writeJSONIndented(stdout, resp)
		return 0
	}
	var list struct {
		Incidents []operate.Incident `json:"incidents"`
		Summary   operate.Summary    `json:"summary"`
	}
	if err := json.Unmarshal(resp, &list); err != nil {
		fmt.Fprintf(stderr, "ora incidents: the API answered something that is not an incident list: %v\n", err)
		return 1
	}
	printIncidents(stdout, list.Incidents, list.Summary)
	return 0
}

func printIncidents(w io.Writer, incs []operate.Incident, sum operate.Summary) {
	if len(incs) == 0 {
		fmt.Fprintln(w, "no incidents")
	}
	for _, inc := range incs {
		fp := inc.Fingerprint
		fmt.Fprintf(w, "%s  %-8s %-11s %-6s at %s: %s (motor %s)\n", inc.ID, inc.Status, fp.Taxonomy, inc.Classification, fp.Stage, fp.Error, fp.MotorVersion)
		fmt.Fprintf(w, "  occurrences %d, resumed %d, MTTR %s, last seen %s, sources %v\n",
			len(inc.Occurrences), inc.Resumed, seconds(inc.MTTRSeconds), inc.LastSeen.UTC().Format(traceTime), inc.Sources)
		if o := inc.Override; o != nil {
			fmt.Fprintf(w, "  corrected to %s (%s) by %s: %s\n", o.Taxonomy, o.Classification, o.By, o.Reason)
		}
		if inc.ClosedBy != nil {
			fmt.Fprintf(w, "  closed by motor %s (wave %s)", inc.ClosedBy.MotorVersion, inc.ClosedBy.WaveID)
			if inc.Impact != nil {
				fmt.Fprintf(w, "; occurrences before %d, after %d", inc.Impact.Before, inc.Impact.After)
			}
			fmt.Fprintln(w)
		}
		for _, o := range inc.Occurrences {
			state := o.Action
			if !o.ResumedAt.IsZero() {
				state = "resumed under motor " + o.ResumedUnder + " by " + o.ResumedBy
			}
			fmt.Fprintf(w, "    wave %s  %s  %s\n", o.WaveID, o.At.UTC().Format(traceTime), state)
		}
	}
	fmt.Fprintf(w, "\nincidents %d (open %d), occurrences %d, paused or retried %d, resumed %d\n", sum.Incidents, sum.Open, sum.Occurrences, sum.Paused, sum.Resumed)
	fmt.Fprintf(w, "resumption rate %.0f%%, MTTR %s, classification accuracy %.0f%%\n", sum.ResumptionRate*100, seconds(sum.MTTRSeconds), sum.ClassificationAccuracy*100)
	versions := make([]string, 0, len(sum.ByMotor))
	for v := range sum.ByMotor {
		versions = append(versions, v)
	}
	sort.Strings(versions)
	for _, v := range versions {
		k := sum.ByMotor[v]
		fmt.Fprintf(w, "  motor %s: incidents %d, classification accuracy %.0f%%, resumption rate %.0f%%, MTTR %s\n",
			v, k.Incidents, k.ClassificationAccuracy*100, k.ResumptionRate*100, seconds(k.MTTRSeconds))
	}
}

func seconds(s float64) string {
	if s == 0 {
		return "-"
	}
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}

const resumeUsage = `usage: ora resume WAVE_ID [--motor VERSION] [--patch-kind K --patch-target T --patch-value JSON] [--as-is] [--reason R] [--config FILE] [--url URL] [--token T] [--json]

Resumes a paused wave at the stage that failed, by its incident's
classification: an app incident retries under the motor version it failed
under, with the app patch given (a new value for one field of the
signal's payload: an input patch; mapping and spec patches are refused,
nothing applies them); a motor
incident resumes under the proposed motor version given, which is promoted
through the gate first (a failing gate refuses the resume and names the
failing cases); a mixed incident takes the version, then the patch. The
operator records PATCHING, VALIDATING and RESUMING and each step's result,
then hands the wave's task token back. Stages that finished do not run
again, and an action that already ran is not run twice.

flags:
  --motor VERSION      the proposed motor version to promote and resume under
  --patch-kind K       an app patch: input (mapping and spec are refused)
  --patch-target T     the field the patch replaces: a dotted path into the
                       signal's payload (issue.title)
  --patch-value JSON   the field's new value, as JSON (@FILE reads a file)
  --as-is              retry unchanged (nothing to patch: an outage, a drill)
  --reason R           recorded with the promotion
  --config FILE   the ora dev config file (default: the built-in defaults)
  --url URL       the API's base URL (default: http://<listen of the config>)
  --token T       the bearer token (default: the first config token with
                  scope ora.operate)
  --json          print the API's JSON

exit status: 0 resumed, 1 not paused or already resumed (409), unknown,
refused or unreachable, 2 bad usage.
`

func runResume(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("resume", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, true)
	var req operate.ResumeRequest
	fs.StringVar(&req.MotorVersion, "motor", "", "the proposed motor version")
	kind := fs.String("patch-kind", "", "an app patch: input, mapping or spec")
	target := fs.String("patch-target", "", "what the patch replaces")
	value := fs.String("patch-value", "", "the patch's value, JSON or @FILE")
	fs.BoolVar(&req.AsIs, "as-is", false, "retry unchanged")
	fs.StringVar(&req.Reason, "reason", "", "recorded with the promotion")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code := parseInterleaved(fs, args, resumeUsage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "ora resume: want one WAVE_ID, got %d argument(s)\n\n%s", len(pos), resumeUsage)
		return 2
	}
	if *kind != "" || *target != "" || *value != "" {
		v := []byte(*value)
		if f, ok := strings.CutPrefix(*value, "@"); ok {
			b, err := os.ReadFile(f)
			if err != nil {
				fmt.Fprintf(stderr, "ora resume: --patch-value: %v\n", err)
				return 2
			}
			v = b
		}
		req.Patch = &operate.AppPatch{Kind: *kind, Target: *target, Value: json.RawMessage(v)}
		if !json.Valid(v) {
			fmt.Fprintf(stderr, "ora resume: --patch-value is not JSON\n")
			return 2
		}
	}
	resp, ok := operatorPost(ctx, "resume", cf, "/waves/"+url.PathEscape(pos[0])+"/resume", req, stderr)
	if !ok {
		return 1
	}
	if *asJSON {
		writeJSONIndented(stdout, resp)
		return 0
	}
	var r operate.Resumed
	if err := json.Unmarshal(resp, &r); err != nil {
		fmt.Fprintf(stderr, "ora resume: the API answered something unexpected: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wave %s resumed at %s under motor %s (incident %s)\n", r.WaveID, r.ResumeAt, r.MotorVersion, r.IncidentID)
	for _, st := range r.Steps {
		fmt.Fprintf(stdout, "  %-11s %-8s %s\n", st.Step, st.Target, st.Result)
	}
	fmt.Fprintf(stdout, "follow the wave: ora trace %s\n", r.WaveID)
	return 0
}

var _ = register("resolve", "say whether an action whose outcome is unknown ran, and resume its wave", runResolve)

const resolveUsage = `usage: ora resolve WAVE_ID --executed|--not-executed [--reason R] [--config FILE] [--url URL] [--token T] [--json]

Answers for a wave paused because an action's request went out and no answer
came back (OutcomeUnknown): check the target, then say what happened. The
answer is recorded as an operator decision and the wave resumes:

  --executed      the action took effect: Act is not run again, the wave goes
                  on to validation
  --not-executed  it did not: the wave resumes at Act, which runs that action
                  once more under a new idempotency key (actions that already
                  ran are not run again)

flags:
  --reason R      why (recorded with the answer)
  --config FILE   the ora dev config file (default: the built-in defaults)
  --url URL       the API's base URL (default: http://<listen of the config>)
  --token T       the bearer token (default: the first config token with
                  scope ora.operate)
  --json          print the API's JSON

exit status: 0 resolved and resumed, 1 not paused on an unknown outcome or
already resolved (409), refused or unreachable, 2 bad usage.
`

func runResolve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("resolve", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, true)
	executed := fs.Bool("executed", false, "the action ran")
	notExecuted := fs.Bool("not-executed", false, "the action did not run")
	reason := fs.String("reason", "", "why")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code := parseInterleaved(fs, args, resolveUsage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "ora resolve: want one WAVE_ID, got %d argument(s)\n\n%s", len(pos), resolveUsage)
		return 2
	}
	if *executed == *notExecuted {
		fmt.Fprintf(stderr, "ora resolve: give exactly one of --executed and --not-executed\n\n%s", resolveUsage)
		return 2
	}
	resp, ok := operatorPost(ctx, "resolve", cf, "/waves/"+url.PathEscape(pos[0])+"/resolve", map[string]any{"executed": *executed, "reason": *reason}, stderr)
	if !ok {
		return 1
	}
	if *asJSON {
		writeJSONIndented(stdout, resp)
		return 0
	}
	var r operate.Resolution
	if err := json.Unmarshal(resp, &r); err != nil {
		fmt.Fprintf(stderr, "ora resolve: the API answered something unexpected: %v\n", err)
		return 1
	}
	ran := "did not run: it runs again (attempt " + fmt.Sprint(r.Attempt) + ")"
	if r.Executed {
		ran = "ran: on to validation"
	}
	fmt.Fprintf(stdout, "wave %s: action %d of decision %s %s; resumed at %s\n", r.WaveID, r.Index, r.DecisionID, ran, r.ResumeAt)
	fmt.Fprintf(stdout, "follow the wave: ora trace %s\n", r.WaveID)
	return 0
}

// apiAnswered reports whether the call of `ora name` got a 2xx answer; if
// not, it writes the one-line error (the transport's, or the status and the
// API's message) to stderr.
func apiAnswered(name string, status int, resp []byte, err error, stderr io.Writer) bool {
	if err != nil {
		fmt.Fprintf(stderr, "ora %s: %v\n", name, err)
		return false
	}
	if status/100 != 2 {
		fmt.Fprintf(stderr, "ora %s: %d %s: %s\n", name, status, http.StatusText(status), apiErrorMessage(resp))
		return false
	}
	return true
}

// operatorPost loads cf's config, takes its ora.operate token, POSTs body
// (JSON; nil sends none) to path under the API's base URL and returns the
// answer of a 200. Otherwise it has written one line to stderr, prefixed
// "ora NAME:", and ok is false (exit status 1).
func operatorPost(ctx context.Context, name string, cf clientFlags, path string, body any, stderr io.Writer) (resp []byte, ok bool) {
	cfg, base, err := cf.load()
	if err != nil {
		fmt.Fprintf(stderr, "ora %s: %v\n", name, err)
		return nil, false
	}
	tok := cf.bearer(cfg, httpapi.ScopeOperate)
	if tok == "" {
		fmt.Fprintf(stderr, "ora %s: no token: pass --token, or give a config token scope %s\n", name, httpapi.ScopeOperate)
		return nil, false
	}
	header := http.Header{"Accept": {"application/json"}, "Authorization": {"Bearer " + tok}}
	var b []byte
	if body != nil {
		header.Set("Content-Type", "application/json")
		b, _ = json.Marshal(body) // maps of strings and booleans: cannot fail
	}
	status, resp, err := apiCall(ctx, http.MethodPost, base+path, header, b)
	if err != nil {
		fmt.Fprintf(stderr, "ora %s: %v\n", name, err)
		return nil, false
	}
	if status != http.StatusOK {
		fmt.Fprintf(stderr, "ora %s: %d %s: %s\n", name, status, http.StatusText(status), apiErrorMessage(resp))
		return nil, false
	}
	return resp, true
}
