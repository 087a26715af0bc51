package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"

	"github.com/ora-runtime/ora/shared/operate"
)

var _ = register("reclassify", "correct an incident's classification (the classifier's accuracy counts these)", runReclassify)

const reclassifyUsage = `usage: ora reclassify INCIDENT_ID TAXONOMY --reason R [--config FILE] [--url URL] [--token T] [--json]

Records that the operator's classifier got an incident wrong: TAXONOMY is what
it is (APP-SPEC, APP-BUILD, MOTOR-RULES, MOTOR-PERF or MIXED-DRIFT) and the
reason says why. The classifier's answer stays beside the correction; the
accuracy ora incidents prints per motor version counts the corrections.
Needs a token with scope ora.operate.

flags:
  --reason R      why the classifier was wrong (required)
  --config FILE   the ora dev config file (default: the built-in defaults)
  --url URL       the API's base URL (default: http://<listen of the config>)
  --token T       the bearer token (default: the first config token with
                  scope ora.operate)
  --json          print the API's JSON

exit status: 0 corrected, 1 refused (an unknown class or incident, no scope) or
unreachable, 2 bad usage.
`

func runReclassify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reclassify", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, true)
	reason := fs.String("reason", "", "why the classifier was wrong (required)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code := parseInterleaved(fs, args, reclassifyUsage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "ora reclassify: want INCIDENT_ID and TAXONOMY, got %d argument(s)\n\n%s", len(pos), reclassifyUsage)
		return 2
	}
	if *reason == "" {
		fmt.Fprintf(stderr, "ora reclassify: --reason is required: say why the classifier was wrong\n\n%s", reclassifyUsage)
		return 2
	}
	resp, ok := operatorPost(ctx, "reclassify", cf, "/incidents/"+url.PathEscape(pos[0])+"/classification", map[string]string{"taxonomy": pos[1], "reason": *reason}, stderr)
	if !ok {
		return 1
	}
	if *asJSON {
		writeJSONIndented(stdout, resp)
		return 0
	}
	var inc operate.Incident
	if err := json.Unmarshal(resp, &inc); err != nil || inc.Override == nil {
		fmt.Fprintf(stderr, "ora reclassify: the API answered something unexpected: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "incident %s: classified %s (%s), corrected to %s (%s) by %s\n", inc.ID, inc.Fingerprint.Taxonomy, inc.Classification,
		inc.Override.Taxonomy, inc.Override.Classification, inc.Override.By)
	return 0
}
