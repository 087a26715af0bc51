package embedded

import (
	"context"
	"fmt"
	"os"

	compileh "github.com/ora-runtime/ora/functions/compile/handler"
	fetchh "github.com/ora-runtime/ora/functions/fetch/handler"
	planh "github.com/ora-runtime/ora/functions/plan/handler"
	reasonh "github.com/ora-runtime/ora/functions/reason/handler"
	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/rules"
	"github.com/ora-runtime/ora/shared/stepfn"
	"github.com/ora-runtime/ora/shared/telemetry"
	"github.com/ora-runtime/ora/shared/validate"
)

// functionNames are the functions the wave's state machine invokes; each is
// registered with the engine under its name, through aws-lambda-go's own
// handler so payloads decode and errors are named exactly as on Lambda, and
// through telemetry.Task so each logs and counts as its Lambda does.
var functionNames = []string{
	"plan", "fetch", "compile", "reason", "flag-review", "escalate", "act",
	"validate-technical", "validate-safety", "validate-intent", "witness", "record", "operate",
}

// registerHandlers registers every task handler with the engine.
func (r *Runtime) registerHandlers(ctx context.Context) error {
	hs, err := r.taskHandlers(ctx)
	if err != nil {
		return err
	}
	for name, h := range hs {
		r.registerHandler(name, h)
	}
	return nil
}

// registerHandler routes the function name's tasks to h, in the wave's
// engine and in the children's.
func (r *Runtime) registerHandler(name string, h stepfn.Handler) {
	r.engine.RegisterHandler(name, h)
	r.children.e.RegisterHandler(name, h)
}

// taskHandlers builds every task handler over the runtime's stores, the same
// handler types the Lambdas in functions/* start, keyed by function name.
func (r *Runtime) taskHandlers(ctx context.Context) (map[string]stepfn.Handler, error) {
	if err := r.openMCP(); err != nil {
		return nil, err
	}
	reasoner, err := r.reasoner(ctx)
	if err != nil {
		return nil, err
	}
	opts := r.orientOptions()
	handlers := map[string]any{
		"plan":    planh.Handler{Planner: orient.NewPlanner(r.ledger, opts)}.Handle,
		"fetch":   fetchh.Handler{Fetcher: orient.NewFetcher(r.ledger, opts)}.Handle,
		"compile": compileh.Handler{Compiler: orient.NewCompiler(r.ledger, opts)}.Handle,
		"reason":  reasonh.Handler{Ledger: r.ledger, Reasoner: reasoner, Proposals: orient.NewProfiles(r.ledger, opts), AppVersion: r.appVersion(), Parameters: act.StandardParameters()}.Handle,
	}
	models, err := r.modelValidators(ctx)
	if err != nil {
		return nil, err
	}
	acting, err := r.actHandlers(models)
	if err != nil {
		return nil, err
	}
	for name, h := range acting {
		handlers[name] = h
	}
	out := make(map[string]stepfn.Handler, len(functionNames))
	for _, name := range functionNames {
		h, ok := handlers[name]
		if !ok {
			return nil, fmt.Errorf("embedded: no handler for function %s", name)
		}
		// Telemetry outermost: an injected fault is logged and counted as
		// the stage's failure, as a real one is.
		out[name] = telemetry.Task(name, r.faults.wrap(stepfn.LambdaHandler(h)), r.logger, r.metrics, func(o *telemetry.TaskOptions) {
			o.AuthorType = "rules"
			if r.cfg.Reasoner.Kind == "bedrock" {
				o.AuthorType = "model"
			}
			o.Classify = classifyError
		})
	}
	return out, nil
}

// modelValidators returns the validators' model-backed checks when the
// reasoner is Bedrock: the guardrail (when configured) for the safety
// validator and the intent judge for tier-3 decisions.
func (r *Runtime) modelValidators(ctx context.Context) (func(*validate.Options), error) {
	if r.cfg.Reasoner.Kind != "bedrock" {
		return func(*validate.Options) {}, nil
	}
	bc := r.cfg.Reasoner.Bedrock
	client, err := bedrock.NewClient(ctx, func(o *bedrock.ClientOptions) {
		o.Endpoint, o.Region = r.cfg.Reasoner.BedrockEndpoint, r.cfg.Reasoner.Region
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: bedrock client: %w", err)
	}
	// The judge's model calls count in the reasoner's daily spend meter.
	judge, err := reason.NewIntentJudge(bedrock.New(client).Redacting(r.secrets), bc, func(o *reason.IntentOptions) { o.Spend = r.spend })
	if err != nil {
		return nil, fmt.Errorf("embedded: reasoner.bedrock: %w", err)
	}
	var guard *bedrock.Guard
	if bc.Guardrail.Enabled() {
		if guard, err = bedrock.NewGuard(client, bc.Guardrail); err != nil {
			return nil, fmt.Errorf("embedded: reasoner.bedrock.guardrail: %w", err)
		}
	}
	return func(o *validate.Options) {
		o.IntentJudge = judge
		if guard != nil {
			o.Guardrail = guard
		}
	}, nil
}

// reasoner returns the configured reasoner: the rules file, or Bedrock.
func (r *Runtime) reasoner(ctx context.Context) (ora.Reasoner, error) {
	text := defaultrules.Default
	if r.cfg.RulesFile != "" {
		b, err := os.ReadFile(r.cfg.RulesFile)
		if err != nil {
			return nil, fmt.Errorf("embedded: rules_file: %w", err)
		}
		text = b
	}
	set, err := rules.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("embedded: rules_file: %w", err)
	}
	if err := r.openMotor(set.Version(), text); err != nil {
		return nil, err
	}
	if r.cfg.Reasoner.Kind != "bedrock" {
		return motor.NewReasoner(r.motors, nil), nil
	}
	bc := r.cfg.Reasoner.Bedrock
	bc.RulesVersion = set.Version()
	if _, err := bc.WithProfile(nil, set.Version()); err != nil {
		return nil, fmt.Errorf("embedded: reasoner.bedrock: %w", err)
	}
	client, err := bedrock.NewClient(ctx, func(o *bedrock.ClientOptions) {
		o.Endpoint, o.Region = r.cfg.Reasoner.BedrockEndpoint, r.cfg.Reasoner.Region
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: bedrock client: %w", err)
	}
	// reasoner.record: a share of the waves is recorded for the gate.
	if r.liveRec, err = r.cfg.LiveRecorder(ctx, r.mcp, r.secrets, r.logger, r.metrics); err != nil {
		return nil, err
	}
	// Each motor version's reasoner: the configuration with its model
	// profile laid over; signals of one source within the batch window share
	// a model call.
	return motor.NewReasoner(r.motors, r.liveRec.Wrap(func(b motor.Bundle) (ora.Reasoner, error) {
		c, err := bc.WithProfile(b.Model, b.Version)
		if err != nil {
			return nil, err
		}
		var guard reason.InputGuard
		if c.Guardrail.Enabled() {
			if guard, err = bedrock.NewGuard(client, c.Guardrail); err != nil {
				return nil, fmt.Errorf("reasoner.bedrock.guardrail: %w", err)
			}
		}
		// The version's rules may name a program per rule; the model is
		// shown the actions this runtime can run, with the configured
		// bounds, and the MCP servers' tools and mcp.call with r.mcp (made
		// by openMCP): as the promotion gate replays it (motor.ModelOptions).
		version, err := motor.ModelOptions(b, r.cfg.Catalogue(r.connections.Names()...), r.mcp)
		if err != nil {
			return nil, err
		}
		rs, err := reason.NewReasoner(bedrock.New(client).Redacting(r.secrets), c, version, func(o *reason.Options) {
			o.Patterns, o.Spend, o.Stages, o.Ledger = r.patterns, r.spend, r.patterns, r.ledger
			// reality_green from the operator's state: diagnostic mode when not.
			o.Kernel = reason.NewKernel(reason.CacheIncidents(operate.New(r.ledger), r.ledger, nil), r.ledger, c.Reality, nil)
			// The guardrail screens every payload.
			o.Guard = guard
		})
		if err != nil {
			return nil, fmt.Errorf("reasoner.bedrock: %w", err)
		}
		return reason.NewBatcher(rs, c.Batch, reason.RealClock{}), nil
	})), nil
}

// classifyError is the incident class (app, motor, mixed) a failure's error
// name alone suggests, for the stage metrics; the operator's record has the
// classification that also weighs the wave's history.
func classifyError(name string) string {
	return operate.Classify(operate.Facts{Error: name}).Classification
}

// openMCP makes r.mcp, the client of the configured MCP servers (none
// without servers), closed with the runtime. Stdio servers start on first
// use. A server naming a connection needs the connections wired
// (mcp.Options.HTTPClient).
func (r *Runtime) openMCP() error {
	if r.mcp != nil || len(r.cfg.MCPServers) == 0 {
		return nil
	}
	c, err := mcp.New(r.cfg.MCPServers, true, func(o *mcp.Options) { o.Log, o.HTTPClient = r.logger, r.connections.ClientFor })
	if err != nil {
		return fmt.Errorf("embedded: mcp_servers: %w", err)
	}
	r.mcp = c
	r.closers = append(r.closers, c.Close)
	return nil
}
