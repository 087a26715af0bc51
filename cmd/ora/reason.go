package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
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

const reasonUsage = `usage: ora reason --envelope FILE [--fake-bedrock | --bedrock-endpoint URL] [--model ID] [--region R]

Runs one ReasoningEnvelope (the reasoner's immutable input) through the Bedrock reasoner
and prints the ReasoningResult with the model trace: chain length,
crystallization reason, usage and cost. The envelope is JSON:
{"envelope_id", "timestamp" (RFC 3339), "program_id" (SafeOPSDecision,
OPSBlockGenerator, GuardFailureInterpreter or PhaseTransitionValidator),
"goal", "kernel_state_ref": {"mode", "reality_summary": {"reality_green":
true|false}, ...}, "oa_context": {...}, "tools_allowed": [...]};
events/reason/envelope.json is a sample. Credentials and region come from the
default AWS chain (AWS_PROFILE, AWS_ACCESS_KEY_ID, AWS_REGION, ...).

flags:
  --envelope FILE         the ReasoningEnvelope JSON file (required)
  --fake-bedrock          answer from the fake Bedrock the tests use (an HTTP
                          server speaking Converse, started in this process): no
                          AWS account, credentials or cost
  --bedrock-endpoint URL  the Bedrock runtime endpoint (default: the regional
                          AWS endpoint); a proxy, or a fake of your own
  --model ID              the model id (default: ` + reason.DefaultModel + `);
                          another model runs without a fallback
  --region R              the AWS region (default: AWS_REGION, else us-east-1)
  --ledger PATH           the SQLite ledger whose daily spend cap and pattern
                          cache apply, as in the pipeline (default:
                          .ora/ledger.db when it exists; none: neither)

exit status: 0 an OK or DEGRADED result, 1 BLOCKED, FAILED or an error (the
error on stderr), 2 bad usage.
`

// runReason runs `ora reason`; see reasonUsage.
func runReason(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("reason", reasonUsage, stderr)
	envFile := fs.String("envelope", "", "the ReasoningEnvelope JSON file (required)")
	endpoint := fs.String("bedrock-endpoint", "", "Bedrock runtime endpoint URL (default: the regional AWS endpoint)")
	fake := fs.Bool("fake-bedrock", false, "answer from the fake Bedrock the tests use")
	model := fs.String("model", "", "model id (default "+reason.DefaultModel+"); a model other than the defaults runs without a fallback")
	region := fs.String("region", "", "AWS region (default: from the environment, else us-east-1)")
	ledgerPath := fs.String("ledger", "", "SQLite ledger whose spend meter (daily cap) and pattern cache the run uses, as the pipeline does (default "+defaultReasonLedger+" when it exists; none: neither)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *envFile == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ora reason: want --envelope FILE and no arguments\n\n%s", reasonUsage)
		return 2
	}
	if *fake && *endpoint != "" {
		fmt.Fprintf(stderr, "ora reason: --fake-bedrock and --bedrock-endpoint exclude each other\n")
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
	var creds aws.CredentialsProvider
	if *fake {
		srv := startFakeBedrock(env.ProgramID)
		defer srv.Close()
		*endpoint, r, creds = srv.URL, "us-east-1", credentials.NewStaticCredentialsProvider("fake", "fake", "")
	}
	client, err := bedrock.NewClient(ctx, func(o *bedrock.ClientOptions) {
		o.Endpoint, o.Region, o.Credentials = *endpoint, r, creds
	})
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

// fakeDecisions are the fake Bedrock's answers, one per program, in the shape
// each program's schema asks for (the same shapes the reason tests use).
var fakeDecisions = map[ora.ProgramID]map[string]any{
	ora.ProgramSafeOPSDecision: {
		"allowed_action": "PROCEED", "safety_check_summary": "reversible, scoped to one repository",
		"action": map[string]any{"type": "notify", "parameters": map[string]any{"subject": "deploy", "message": "ack"},
			"tier": 1, "allowed_operations": []string{"notify"}, "forbidden_paths": []string{}, "author_type": "architect"},
		"then": []any{},
	},
	ora.ProgramOPSBlockGenerator:        {"ops_block": []string{"make build", "make deploy"}, "complexity_score": 4, "risk_analysis": "deploy is reversible"},
	ora.ProgramGuardFailureInterpreter:  {"root_cause": "disk full on runner", "remediation_plan": "prune caches", "is_transient": true},
	ora.ProgramPhaseTransitionValidator: {"transition_status": "NOT_READY", "missing_criteria": []string{"e2e green"}},
}

// startFakeBedrock starts the tests' fake Bedrock (shared/bedrock/bedrocktest),
// answering every stage with a record_observation call of confidence 0.97
// (so the chain crystallizes at once) carrying program's sample decision.
func startFakeBedrock(program ora.ProgramID) *bedrocktest.Server {
	decision := fakeDecisions[program]
	if decision == nil { // an unknown program: the bridge refuses the envelope first
		decision = map[string]any{}
	}
	return bedrocktest.Start(func(bedrocktest.Request) bedrocktest.Reply {
		return bedrocktest.Tool(reason.ObservationTool, map[string]any{
			"confidence": 0.97, "layers": []string{"SIGNAL", "KERNEL", "SCOPE"},
			"content": "fake Bedrock: a scripted observation (ora reason --fake-bedrock)", "decision": decision,
		})
	})
}
