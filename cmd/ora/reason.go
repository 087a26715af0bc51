package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/sqlite"
)

var _ = register("reason", "run a reasoning envelope through Bedrock and print the result", runReason)

// reasonOutput is what `ora reason` prints: the ReasoningResult and the model
// trace (chain length, crystallization reason, usage, cost).
type reasonOutput struct {
	ora.ReasoningResult
	Model ora.ModelTrace `json:"model"`
}

// runReason runs `ora reason --envelope FILE [--bedrock-endpoint URL] [--model ID]`.
// It exits 0 for an OK or DEGRADED result, 1 for BLOCKED, FAILED or an error,
// 2 for bad usage.
func runReason(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reason", flag.ContinueOnError)
	fs.SetOutput(stderr)
	envFile := fs.String("envelope", "", "the ReasoningEnvelope JSON file (required)")
	endpoint := fs.String("bedrock-endpoint", "", "Bedrock runtime endpoint URL (default: the regional AWS endpoint)")
	model := fs.String("model", "", "model id (default "+reason.DefaultModel+"); a model other than the defaults runs without a fallback")
	region := fs.String("region", "", "AWS region (default: from the environment, else us-east-1)")
	ledgerPath := fs.String("ledger", "", "SQLite ledger whose spend meter (daily cap) and pattern cache the run uses, as the pipeline does (default "+defaultReasonLedger+" when it exists; none: neither)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *envFile == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: ora reason --envelope FILE [--bedrock-endpoint URL] [--model ID] [--region R]")
		return 2
	}
	b, err := os.ReadFile(*envFile)
	if err != nil {
		fmt.Fprintf(stderr, "ora reason: %v\n", err)
		return 1
	}
	var env ora.ReasoningEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		fmt.Fprintf(stderr, "ora reason: %s: %v\n", *envFile, err)
		return 1
	}
	cfg := reason.DefaultConfig()
	if *model != "" && *model != cfg.Model {
		if _, known := cfg.Prices[*model]; !known {
			cfg.Prices[*model] = reason.Price{}
			fmt.Fprintf(stderr, "ora reason: no price for %s: cost is reported as 0\n", *model)
		}
		cfg.Model, cfg.FallbackModels = *model, nil
	}
	r := *region
	if r == "" && os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		r = "us-east-1"
	}
	client, err := bedrock.NewClient(ctx, func(o *bedrock.ClientOptions) { o.Endpoint, o.Region = *endpoint, r })
	if err != nil {
		fmt.Fprintf(stderr, "ora reason: %v\n", err)
		return 1
	}
	opts, closeLedger, err := reasonStores(ctx, *ledgerPath, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "ora reason: %v\n", err)
		return 1
	}
	defer closeLedger()
	bridge, err := reason.NewBridge(bedrock.New(client), cfg, opts)
	if err != nil {
		fmt.Fprintf(stderr, "ora reason: %v\n", err)
		return 1
	}
	out, err := bridge.Run(ctx, env, reason.Input{})
	if err != nil {
		fmt.Fprintf(stderr, "ora reason: %v\n", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(reasonOutput{ReasoningResult: out.Result, Model: out.Trace}); err != nil {
		fmt.Fprintf(stderr, "ora reason: %v\n", err)
		return 1
	}
	if out.Result.Status == ora.ReasoningBlocked || out.Result.Status == ora.ReasoningFailed {
		return 1
	}
	return 0
}

// defaultReasonLedger is `ora dev`'s ledger at its default data_dir.
const defaultReasonLedger = ".ora/ledger.db"

// reasonStores opens the SQLite ledger at path (the default one only when
// it exists) and returns the bridge options using its spend meter, pattern
// cache, as the pipeline does, and a close function.
func reasonStores(ctx context.Context, path string, stderr io.Writer) (func(*reason.Options), func(), error) {
	none := func(*reason.Options) {}
	switch path {
	case "none":
		fmt.Fprintln(stderr, "ora reason: --ledger none: no daily spend cap and no pattern cache")
		return none, func() {}, nil
	case "":
		if _, err := os.Stat(defaultReasonLedger); err != nil {
			fmt.Fprintf(stderr, "ora reason: no ledger at %s (run ora dev, or pass --ledger): no daily spend cap and no pattern cache\n", defaultReasonLedger)
			return none, func() {}, nil
		}
		path = defaultReasonLedger
	}
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	return func(o *reason.Options) {
		o.Patterns, o.Spend = db.Patterns(), db.Spend()
	}, func() { db.Close() }, nil
}
