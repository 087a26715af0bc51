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

	"github.com/ora-runtime/ora/shared/embedded"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
)

var _ = register("orientation", "orientation profiles, proposals, packets and replay verification", runOrientation)

const orientationUsage = `usage: ora orientation COMMAND [ARG] [--config FILE] [--url URL] [--token T] [--reason R]

commands:
  profile            print the current orientation profile (orientation.read)
  propose FILE       send the profile_change_proposal in FILE, "-" for stdin
                     (orientation.propose); prints its status: pending, or
                     rejected with the guard's code
  approve ID         approve a pending proposal (orientation.approve)
  reject ID          reject a pending proposal (orientation.approve)
  packet WAVE_ID     print a wave's orientation packet (orientation.read)
  verify WAVE_ID     recompile the wave's packet from its stored facts and
                     pinned profile, compare the digests and record the audit
                     action orientation.packet.replay_verified (reads the
                     ledger of --config directly)

flags:
  --config FILE   the ora dev config file (default: the built-in defaults)
  --url URL       the API's base URL (default: http://<listen of the config>)
  --token T       the bearer token (default: the first config token with
                  the command's scope)
  --reason R      why (reject)

exit status: 0 done (verify: the digests match), 1 refused, failed or a
mismatch, 2 bad usage.
`

func runOrientation(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("orientation", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, true)
	reason := fs.String("reason", "", "why")
	pos, code := parseInterleaved(fs, args, orientationUsage, stderr)
	if code >= 0 {
		return code
	}
	want := map[string]int{"profile": 0, "propose": 1, "approve": 1, "reject": 1, "packet": 1, "verify": 1}
	if len(pos) == 0 {
		fmt.Fprint(stderr, orientationUsage)
		return 2
	}
	n, ok := want[pos[0]]
	if !ok || len(pos) != n+1 {
		fmt.Fprintf(stderr, "ora orientation: bad command %q\n\n%s", pos, orientationUsage)
		return 2
	}
	cfg, base, err := cf.load()
	if err != nil {
		fmt.Fprintf(stderr, "ora orientation: %v\n", err)
		return 1
	}
	if pos[0] == "verify" {
		v, err := embedded.VerifyPacket(ctx, cfg, pos[1])
		if err != nil {
			fmt.Fprintf(stderr, "ora orientation verify: %s\n", ora.ErrorMessage(err))
			return 1
		}
		b, _ := json.Marshal(v)
		writeJSONIndented(stdout, b)
		if !v.Match {
			fmt.Fprintf(stderr, "ora orientation verify: the replayed digest %s differs from the stored %s\n", v.ReplayDigest, v.StoredDigest)
			return 1
		}
		return 0
	}
	var method, path, scope string
	var body []byte
	switch pos[0] {
	case "profile":
		method, path, scope = http.MethodGet, "/api/orientation/profile/current", httpapi.ScopeOrientationRead
	case "packet":
		method, path, scope = http.MethodGet, "/api/orientation/packets/"+url.PathEscape(pos[1]), httpapi.ScopeOrientationRead
	case "approve":
		method, path, scope = http.MethodPost, "/api/orientation/proposals/"+url.PathEscape(pos[1])+"/approve", httpapi.ScopeOrientationApprove
	case "reject":
		method, path, scope = http.MethodPost, "/api/orientation/proposals/"+url.PathEscape(pos[1])+"/reject", httpapi.ScopeOrientationApprove
		body, _ = json.Marshal(map[string]string{"reason": *reason})
	case "propose":
		method, path, scope = http.MethodPost, "/api/orientation/proposals", httpapi.ScopeOrientationPropose
		if pos[1] == "-" {
			body, err = io.ReadAll(os.Stdin)
		} else {
			body, err = os.ReadFile(pos[1])
		}
		if err != nil {
			fmt.Fprintf(stderr, "ora orientation propose: %v\n", err)
			return 1
		}
	}
	header := cf.jsonHeader(cfg, scope)
	status, out, err := apiCall(ctx, method, base+path, header, body)
	if err != nil {
		fmt.Fprintf(stderr, "ora orientation %s: %v\n", pos[0], err)
		return 1
	}
	if status != http.StatusOK {
		fmt.Fprintf(stderr, "ora orientation %s: %d %s: %s\n", pos[0], status, http.StatusText(status), apiErrorMessage(out))
		return 1
	}
	writeJSONIndented(stdout, out)
	return 0
}
