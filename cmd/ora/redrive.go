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

var _ = register("redrive", "restart a failed, timed-out or stopped wave at the state that did not finish", runRedrive)

const redriveUsage = `usage: ora redrive WAVE_ID [--config FILE] [--url URL] [--token T] [--json]

Restarts a wave whose execution failed, timed out or was stopped before the
wave had its final verdict, as Step Functions' RedriveExecution does: the
execution continues at the state that did not finish, with the input it had;
states that finished keep their results and do not run again, and an action
that already ran is not run twice. A running wave, a completed one, or one
whose final verdict is recorded (failed, rejected) cannot be redriven: send
its signal again for a new wave.

flags:
  --config FILE   the ora dev config file (default: the built-in defaults)
  --url URL       the API's base URL (default: http://<listen of the config>)
  --token T       the bearer token (default: the first config token with
                  scope ora.operate)
  --json          print the API's JSON

exit status: 0 redriven, 1 not redrivable (409: running, succeeded, or a
final verdict), unknown, refused or unreachable, 2 bad usage.
`

func runRedrive(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("redrive", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, true)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code := parseInterleaved(fs, args, redriveUsage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "ora redrive: want one WAVE_ID, got %d argument(s)\n\n%s", len(pos), redriveUsage)
		return 2
	}
	resp, ok := operatorPost(ctx, "redrive", cf, "/waves/"+url.PathEscape(pos[0])+"/redrive", nil, stderr)
	if !ok {
		return 1
	}
	if *asJSON {
		writeJSONIndented(stdout, resp)
		return 0
	}
	var r operate.Redriven
	if err := json.Unmarshal(resp, &r); err != nil {
		fmt.Fprintf(stderr, "ora redrive: the API answered something unexpected: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wave %s redriven (redrive %d, by %s): it continues at the state that did not finish\n", r.WaveID, r.Redrive, r.By)
	fmt.Fprintf(stdout, "follow the wave: ora trace %s\n", r.WaveID)
	return 0
}
