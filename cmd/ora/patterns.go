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
	"github.com/ora-runtime/ora/shared/operate"
)

var _ = register("patterns", "list learned patterns, or promote one into the motor", runPatterns)

const patternsUsage = `usage: ora patterns [list] | promote PATTERN_ID [--reason R] [--config FILE] [--url URL] [--token T] [--json]

A learned pattern is an incident's fingerprint (its class, stage and error)
with a confirmed fix: a wave paused on it was resumed with a new motor
version or an app patch, and then completed. Promoted, the pattern becomes
part of the next motor version (its sha256 covers it), through the same gate
as any motor change; the operator then classifies a failure that matches it
as the fix confirmed.

  list                the patterns, each with its fix and the motor version
                      that carries it (or "candidate")
  promote PATTERN_ID  propose the current motor with the pattern as the next
                      patch version and promote it; refused (409) naming the
                      failing gate cases

flags:
  --reason R      why (promote): recorded with the promotion
  --config FILE   the ora dev config file (default: the built-in defaults)
  --url URL       the API's base URL (default: http://<listen of the config>)
  --token T       the bearer token (default: the first config token with
                  scope ora.operate, or ora.read for list)
  --json          print the API's JSON

exit status: 0 done, 1 refused (409), unknown or unreachable, 2 bad usage.
`

func runPatterns(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("patterns", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, true)
	reason := fs.String("reason", "", "why")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code := parseInterleaved(fs, args, patternsUsage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) == 0 {
		pos = []string{"list"}
	}
	if !(pos[0] == "list" && len(pos) == 1) && !(pos[0] == "promote" && len(pos) == 2) {
		fmt.Fprintf(stderr, "ora patterns: bad arguments %q\n\n%s", strings.Join(pos, " "), patternsUsage)
		return 2
	}
	cfg, base, err := cf.load()
	if err != nil {
		fmt.Fprintf(stderr, "ora patterns: %v\n", err)
		return 1
	}
	method, path, scope, body := http.MethodGet, "/motor/patterns", httpapi.ScopeOperatorRead, []byte(nil)
	if pos[0] == "promote" {
		body, _ = json.Marshal(map[string]string{"reason": *reason})
		method, path, scope = http.MethodPost, "/motor/patterns/"+url.PathEscape(pos[1])+"/promote", httpapi.ScopeOperate
	}
	status, resp, err := apiCall(ctx, method, base+path, cf.jsonHeader(cfg, scope), body)
	if !apiAnswered("patterns "+pos[0], status, resp, err, stderr) {
		return 1
	}
	if *asJSON {
		writeJSONIndented(stdout, resp)
		return 0
	}
	if pos[0] == "promote" {
		var p struct {
			Version string      `json:"version"`
			Digest  string      `json:"digest"`
			Event   motor.Event `json:"event"`
		}
		_ = json.Unmarshal(resp, &p)
		fmt.Fprintf(stdout, "motor %s is current (sha256 %s), carrying pattern %s (promoted from %s)\n", p.Version, p.Digest, pos[1], p.Event.Previous)
		return 0
	}
	var l struct {
		Patterns []operate.Pattern `json:"patterns"`
	}
	if err := json.Unmarshal(resp, &l); err != nil {
		fmt.Fprintf(stderr, "ora patterns: the API answered something unexpected: %v\n", err)
		return 1
	}
	if len(l.Patterns) == 0 {
		fmt.Fprintln(stdout, "no learned patterns: none of the incidents was resumed with a fix that completed its wave")
	}
	for _, p := range l.Patterns {
		where := "candidate"
		if p.Motor != "" {
			where = "in motor " + p.Motor
		}
		fmt.Fprintf(stdout, "%s  %s (%s) at %s: %s, fixed by %s, confirmed %d; %s\n", p.ID, p.Taxonomy, p.Classification, p.Stage, p.Error, p.Fix, p.Confirmed, where)
	}
	return 0
}
