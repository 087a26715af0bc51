package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ora-runtime/ora/shared/embedded"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/telemetry"
)

var _ = register("dev", "run the embedded runtime: ledger, engine, handlers and HTTP API (no AWS account)", runDev)

const devUsage = `usage: ora dev [--config FILE] [--no-preflight]
               [--sfn-listen ADDR [--sfn-tasks FILE] [--sfn-function NAME=URL]...]

Runs the embedded runtime: the HTTP API, the ledger (SQLite or DynamoDB), the
local Step Functions engine running statemachines/ora.asl.json, every handler
in-process, the schedules and the watched folder. Prints the configuration in
effect (secrets masked) and the commands to send a first signal; stops on
Ctrl-C, and a restart resumes the waves that were running.

Before it starts it checks what the config needs from outside: DynamoDB
reachable when store.kind is dynamodb; AWS credentials and access to the model
when reasoner.kind is bedrock (one Converse call of one output token).

flags:
  --config FILE    the YAML config file, read over the built-in defaults
                   (default: the built-in development config)
  --no-preflight   skip the start checks of DynamoDB and Bedrock
  --sfn-listen ADDR
                   also serve the Step Functions API (AWS JSON 1.0) on ADDR, for
                   the AWS CLI and SDKs (--endpoint-url http://ADDR): a bare
                   port (8083 or :8083) listens on 127.0.0.1 only; give a host
                   (0.0.0.0:8083) to listen beyond this machine, where requests
                   must then be SigV4-signed (default: off)
  --sfn-tasks FILE the tasks file answering the Task states of the state
                   machines created through that API, by state name (the
                   format of ora statemachine run --tasks)
  --sfn-function NAME=URL
                   a Lambda function of those state machines: its tasks POST
                   their payload to URL (repeatable)

exit status: 0 stopped by a signal, 1 a start check failed or the runtime
stopped with an error, 2 bad usage or an invalid config (the key named).
`

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("dev", devUsage, stderr)
	configPath := fs.String("config", "", "YAML config file (default: the built-in development config)")
	noPreflight := fs.Bool("no-preflight", false, "skip the start checks of DynamoDB and Bedrock")
	sfnListen := fs.String("sfn-listen", "", "serve the Step Functions API on ADDR (a bare port: 127.0.0.1 only)")
	sfnTasks := fs.String("sfn-tasks", "", "the tasks file of the state machines created through the Step Functions API")
	sfnFunctions := substitutions{}
	fs.Var(sfnFunctions, "sfn-function", "NAME=URL: a Lambda function of those state machines (repeatable)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ora dev: unexpected argument %q\n\n%s", fs.Arg(0), devUsage)
		return 2
	}
	cfg, err := embedded.LoadConfig(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "ora dev: %v\n", err)
		return 2
	}
	if !*noPreflight {
		if err := preflight(ctx, cfg); err != nil {
			fmt.Fprintf(stderr, "ora dev: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
			return 1
		}
	}
	embedded.TuneGC()
	secrets := cfg.Secrets()
	logger := telemetry.NewLogger(stderr, "ora", func(o *telemetry.LogOptions) { o.Secrets, o.Registry = cfg.SecretValues(), secrets })
	slog.SetDefault(logger) // the stages that log through slog.Default write JSON too
	rt, err := embedded.New(ctx, cfg, func(o *embedded.Options) { o.Logger, o.Secrets = logger, secrets })
	if err != nil {
		fmt.Fprintf(stderr, "ora dev: %v\n", err)
		return 1
	}
	defer rt.Close()
	if *sfnListen != "" {
		stop, err := serveStepFunctions(ctx, rt, *sfnListen, *sfnTasks, sfnFunctions, stdout, logger)
		if err != nil {
			fmt.Fprintf(stderr, "ora dev: %v\n", err)
			return 2
		}
		defer stop()
	}
	err = rt.Serve(ctx, func(addr string) { banner(stdout, cfg, addr, *configPath) })
	if err != nil {
		fmt.Fprintf(stderr, "ora dev: %v\n", err)
		return 1
	}
	return 0
}

// redacted returns cfg as ora dev prints it: secrets and tokens hidden,
// defaults applied where the file's zero means a default (so the print shows
// the value in effect), and only the active reasoner's block.
func redacted(cfg embedded.Config) embedded.Config {
	cfg.Actions.HTTP.TimeoutSeconds = int(cfg.Actions.HTTP.Timeout() / time.Second)
	if cfg.Reasoner.Kind != "bedrock" {
		cfg.Reasoner.Bedrock = reason.Config{}
	}
	// Not one character of a secret: a token is known by its subject and
	// scopes, printed beside it.
	mask := func(string) string { return "[hidden]" }
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
	if cfg.Events.Secret != "" {
		cfg.Events.Secret = mask(cfg.Events.Secret)
	}
	cfg.Connections = append(cfg.Connections[:0:0], cfg.Connections...)
	for i := range cfg.Connections {
		cfg.Connections[i].Auth.Secret = mask(cfg.Connections[i].Auth.Secret)
	}
	return cfg
}

// banner prints the effective configuration and how to send a signal of each
// confidence band; the commands name the binary (self) and --config in use.
func banner(w io.Writer, cfg embedded.Config, addr, path string) {
	from := path
	if from == "" {
		from = "built-in defaults (ora dev --config FILE to change them)"
	}
	fmt.Fprintf(w, "ora dev: listening on http://%s\nconfiguration from %s:\n---\n", addr, from)
	out, _ := yaml.Marshal(redacted(cfg))
	_, _ = w.Write(out)
	var flags []string
	if path != "" {
		flags = []string{"--config", path}
	}
	fmt.Fprintf(w, "---\nThe console: %s/console/\n", listenURL(addr))
	demo := -1 // the first hmac or none source, when the default rules read its payload.confidence
	if cfg.RulesFile == "" {
		for i, src := range cfg.Sources {
			if src.Type == observe.TypeHMAC || src.Type == observe.TypeNone {
				demo = i
				break
			}
		}
	}
	if demo >= 0 {
		name := cfg.Sources[demo].Name
		send := func(band string) string {
			return fmt.Sprintf(`echo '{"confidence":"%s"}' | %s`, band, hint(append([]string{"send", name, "-"}, flags...)...))
		}
		fmt.Fprintf(w, "Send a signal as source %q (the default rules read payload.confidence of hmac and none sources):\n", name)
		fmt.Fprintf(w, "  high, acts at once:               %s\n", send("high"))
		fmt.Fprintf(w, "  medium, acts and requests review: %s\n", send("medium"))
		fmt.Fprintf(w, "  low, waits for a human:           %s\n", send("low"))
	}
	for i, src := range cfg.Sources {
		if i == demo {
			continue
		}
		fmt.Fprintf(w, "Send a delivery as source %q, signed as %s signs it: %s\n", src.Name, signer(src.Type),
			hint(append([]string{"send", src.Name, sampleFor(src.Type)}, flags...)...))
	}
	fmt.Fprintf(w, "Each prints its signal_id. Follow one (a low one also shows its decision_id and how to settle it):\n")
	fmt.Fprintf(w, "  %s    (or: curl %s/signals/<signal_id>)\n", hint(append([]string{"trace", "<signal_id>"}, flags...)...), listenURL(addr))
	fmt.Fprintf(w, "  %s    (or reject)\n", hint(append([]string{"approve", "<decision_id>"}, flags...)...))
	fmt.Fprintf(w, "Files dropped in %s become object signals.\n", cfg.Watch.Dir)
	_ = os.Stdout.Sync()
}

// signer names who signs a source's deliveries, for the start-up hints.
func signer(t string) string {
	switch t {
	case observe.TypeGitHub:
		return "GitHub"
	case observe.TypeSlack:
		return "Slack"
	case observe.TypeStripe:
		return "Stripe"
	case observe.TypeNone:
		return "nobody (unsigned)"
	default:
		return "your sender"
	}
}

// sampleFor names a real-shaped body to send as a source of type t.
func sampleFor(t string) string {
	if t == observe.TypeGitHub {
		return "examples/first-agent/issue-opened.json"
	}
	return "FILE"
}
