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
	"github.com/ora-runtime/ora/shared/ora"
)

var (
	_ = register("approve", "approve a decision that awaits a human", func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return runSettle(ctx, "approve", args, stdout, stderr)
	})
	_ = register("reject", "reject a decision that awaits a human", func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return runSettle(ctx, "reject", args, stdout, stderr)
	})
)

const settleUsage = `usage: ora %[1]s DECISION_ID [--reason R] [--config FILE] [--url URL] [--token T] [--json]

%[2]s a decision that awaits a human (a low-confidence decision the wave
escalated; ora trace shows it as architect-intent) and prints the decision's
state after.

flags:
  --reason R      why, recorded in the human-verdict entry
  --config FILE   the ora dev config file (default: the built-in defaults)
  --url URL       the API's base URL (default: http://<listen of the config>)
  --token T       the bearer token (default: the first config token with
                  scope ora.approve)
  --json          print the decision state as JSON

exit status: 0 settled, 1 already settled (409), unknown, refused or
unreachable, 2 bad usage.
`

// runSettle runs approve or reject (verb).
func runSettle(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) int {
	usage := fmt.Sprintf(settleUsage, verb, strings.ToUpper(verb[:1])+verb[1:]+"s")
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, true)
	reason := fs.String("reason", "", "why")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code := parseInterleaved(fs, args, usage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "ora %s: want one DECISION_ID, got %d argument(s)\n\n%s", verb, len(pos), usage)
		return 2
	}
	id := pos[0]
	cfg, base, err := cf.load()
	if err != nil {
		fmt.Fprintf(stderr, "ora %s: %v\n", verb, err)
		return 1
	}
	header := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	tok := cf.bearer(cfg, httpapi.ScopeApprove)
	if tok == "" {
		fmt.Fprintf(stderr, "ora %s: no token: pass --token, or give a config token scope %s\n", verb, httpapi.ScopeApprove)
		return 1
	}
	header.Set("Authorization", "Bearer "+tok)
	body, err := json.Marshal(map[string]string{"reason": *reason})
	if err != nil {
		fmt.Fprintf(stderr, "ora %s: %v\n", verb, err)
		return 1
	}
	status, resp, err := apiCall(ctx, http.MethodPost, base+"/decisions/"+url.PathEscape(id)+"/"+verb, header, body)
	if err != nil {
		fmt.Fprintf(stderr, "ora %s: %v\n", verb, err)
		return 1
	}
	switch status {
	case http.StatusOK:
	case http.StatusConflict:
		fmt.Fprintf(stderr, "ora %s: decision %s already settled: %s\n", verb, id, apiErrorMessage(resp))
		return 1
	case http.StatusNotFound:
		fmt.Fprintf(stderr, "ora %s: no decision %s in the ledger: ora trace SIGNAL_ID prints a wave's decision id\n", verb, id)
		return 1
	case http.StatusUnauthorized, http.StatusForbidden:
		fmt.Fprintf(stderr, "ora %s: %d %s: %s (the token needs scope %s)\n", verb, status, http.StatusText(status), apiErrorMessage(resp), httpapi.ScopeApprove)
		return 1
	default:
		fmt.Fprintf(stderr, "ora %s: %d %s: %s\n", verb, status, http.StatusText(status), apiErrorMessage(resp))
		return 1
	}
	if *asJSON {
		writeJSONIndented(stdout, resp)
		return 0
	}
	var st ora.DecisionState
	if err := json.Unmarshal(resp, &st); err != nil {
		fmt.Fprintf(stderr, "ora %s: the API answered something that is not a decision state: %v\n", verb, err)
		return 1
	}
	fmt.Fprintf(stdout, "decision %s: %s\n", st.DecisionID, st.Status)
	fmt.Fprintf(stdout, "  signal   %s\n", st.SignalID)
	if st.Reason != "" {
		fmt.Fprintf(stdout, "  reason   %s\n", st.Reason)
	}
	fmt.Fprintf(stdout, "  version  %d, updated %s\n", st.Version, st.UpdatedAt.UTC().Format(traceTime))
	fmt.Fprintf(stdout, "follow the wave: %s\n", hint(append([]string{"trace", st.SignalID}, cf.hintFlags()...)...))
	return 0
}
