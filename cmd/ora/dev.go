package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/ora-runtime/ora/shared/embedded"
	"github.com/ora-runtime/ora/shared/telemetry"
)

var _ = register("dev", "run the embedded runtime: ledger, engine, handlers and HTTP API (no AWS account)", runDev)

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ora dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML config file (default: the built-in development config)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := embedded.LoadConfig(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "ora dev: %v\n", err)
		return 2
	}
	logger := telemetry.NewLogger(stderr, "ora", func(o *telemetry.LogOptions) { o.Secrets = cfg.SecretValues() })
	slog.SetDefault(logger) // the stages that log through slog.Default write JSON too
	rt, err := embedded.New(ctx, cfg, func(o *embedded.Options) { o.Logger = logger })
	if err != nil {
		fmt.Fprintf(stderr, "ora dev: %v\n", err)
		return 1
	}
	defer rt.Close()
	err = rt.Serve(ctx, func(addr string) { banner(stdout, cfg, addr, *configPath) })
	if err != nil {
		fmt.Fprintf(stderr, "ora dev: %v\n", err)
		return 1
	}
	return 0
}

// redacted returns cfg with its secrets and tokens masked, for printing.
func redacted(cfg embedded.Config) embedded.Config {
	mask := func(s string) string {
		if len(s) <= 4 {
			return "****"
		}
		return "****" + s[len(s)-4:]
	}
	cfg.Sources = append(cfg.Sources[:0:0], cfg.Sources...)
	for i := range cfg.Sources {
		if cfg.Sources[i].Secret != "" {
			cfg.Sources[i].Secret = mask(cfg.Sources[i].Secret)
		}
	}
	cfg.Tokens = append(cfg.Tokens[:0:0], cfg.Tokens...)
	for i := range cfg.Tokens {
		cfg.Tokens[i].Token = mask(cfg.Tokens[i].Token)
	}
	if cfg.Actions.HTTP.SigningSecret != "" {
		cfg.Actions.HTTP.SigningSecret = mask(cfg.Actions.HTTP.SigningSecret)
	}
	return cfg
}

// banner prints the effective configuration and how to send the first signal.
func banner(w io.Writer, cfg embedded.Config, addr, path string) {
	from := path
	if from == "" {
		from = "built-in defaults (ora dev --config FILE to change them)"
	}
	fmt.Fprintf(w, "ora dev: listening on http://%s\nconfiguration from %s:\n---\n", addr, from)
	out, _ := yaml.Marshal(redacted(cfg))
	_, _ = w.Write(out)
	src := cfg.Sources[0]
	flags := ""
	if path != "" {
		flags = " --config " + path
	}
	fmt.Fprintf(w, `---
Send a first signal (signed as source %q):
  echo '{"confidence":"high","note":"hello"}' > /tmp/signal.json
  ./bin/ora send%s %s /tmp/signal.json
Then follow it:
  ./bin/ora trace%s <signal_id>         (or: curl http://%s/signals/<signal_id>)
Low-confidence decisions wait for you:  ./bin/ora approve%s <decision_id>
Files dropped in %s become object signals.
`, src.Name, flags, src.Name, flags, addr, flags, cfg.Watch.Dir)
	_ = os.Stdout.Sync()
}
