package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/embedded"
	"github.com/ora-runtime/ora/shared/motor"
)

const recordUsage = `usage: ora motor record [--config FILE] [--golden DIR] [--file BUNDLE] [--json]

Runs the golden set once through the configured model (reasoner.kind:
bedrock) and keeps each answer beside the set, in DIR/recordings, under the
sha256 digest of its Converse request. The promotion gate then replays the
set from these recordings: deterministic, free, and nothing leaves the
machine. A motor whose prompts, model, or packets differ asks other
requests, so record each candidate before promoting it.

flags:
  --config FILE   the ora dev config file (default: the built-in defaults)
  --golden DIR    the golden set (default: operate.golden_dir; without one,
                  the set that ships with ora, recorded into the data folder)
  --file BUNDLE   the motor version to record, as ora motor propose reads it
                  (default: the configured rules file, the base version)
  --json          print the replay report as JSON

exit status: 0 recorded and every wave as expected, 1 recorded with waves
that differ from what the golden set expects (the gate will refuse them), or
could not record, 2 bad usage.
`

func runMotorRecord(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("motor record", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "the ora dev config file")
	goldenDir := fs.String("golden", "", "the golden set")
	file := fs.String("file", "", "the motor version to record")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code := parseInterleaved(fs, args, recordUsage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 0 {
		fmt.Fprintf(stderr, "ora motor record: unexpected arguments %q\n\n%s", strings.Join(pos, " "), recordUsage)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "ora motor record: %v\n", err)
		return 1
	}
	cfg, err := embedded.LoadConfig(*cfgPath)
	if err != nil {
		return fail(err)
	}
	if *goldenDir != "" {
		cfg.Operate.GoldenDir = *goldenDir
	}
	golden, err := motor.Golden()
	if cfg.Operate.GoldenDir != "" {
		golden, err = motor.LoadGolden(cfg.Operate.GoldenDir)
	}
	if err != nil {
		return fail(err)
	}
	var b motor.Bundle
	if *file != "" {
		b, err = readBundle(*file)
	} else {
		text := defaultrules.Default
		if cfg.RulesFile != "" {
			text, err = os.ReadFile(cfg.RulesFile)
		}
		if err == nil {
			b, err = motor.NewBase(text, "the configured rules file", cfg.TokenBudget)
		}
	}
	if err != nil {
		return fail(err)
	}
	rec := &bedrock.Recorder{Store: bedrock.DirRecordings(cfg.RecordingsDir())}
	build, err := cfg.ReplayBuild(ctx, rec)
	if err != nil {
		return fail(err)
	}
	if build == nil {
		return fail(fmt.Errorf("reasoner.kind is %q: only a model reasoner (bedrock) is recorded; the rules reasoner replays as it is", cfg.Reasoner.Kind))
	}
	rep, err := motor.ReplayWith(ctx, b, golden, build)
	if err != nil {
		return fail(err)
	}
	if *asJSON {
		j, _ := json.Marshal(rep)
		writeJSONIndented(stdout, j)
	} else {
		fmt.Fprintf(stdout, "recorded %d model calls for %d golden waves under motor %s in %s\n", len(rec.Kept()), len(rep.Waves), rep.Motor, cfg.RecordingsDir())
		for _, c := range rep.Waves {
			if len(c.Changed) == 0 {
				continue
			}
			why := c.Error
			if why == "" {
				why = fmt.Sprintf("decision %s -> %s, band %s -> %s, verdict %s -> %s", c.Want.Action, c.Got.Action, c.Want.Band, c.Got.Band, c.Want.Verdict, c.Got.Verdict)
			}
			fmt.Fprintf(stdout, "  %-20s CHANGED %s: %s\n", c.Name, strings.Join(c.Changed, ","), why)
		}
	}
	if len(rep.Failing) > 0 {
		fmt.Fprintf(stderr, "ora motor record: %d of %d golden waves differ from what the set expects: the gate will refuse motor %s\n", len(rep.Failing), len(rep.Waves), rep.Motor)
		return 1
	}
	return 0
}
