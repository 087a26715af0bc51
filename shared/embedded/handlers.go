package embedded

import (
	"context"
	"fmt"

	compileh "github.com/ora-runtime/ora/functions/compile/handler"
	fetchh "github.com/ora-runtime/ora/functions/fetch/handler"
	planh "github.com/ora-runtime/ora/functions/plan/handler"
	reasonh "github.com/ora-runtime/ora/functions/reason/handler"
	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/rules"
	"github.com/ora-runtime/ora/shared/telemetry"
)

// functionNames are the functions the wave's state machine invokes; each is
// registered with the engine under its name, through aws-lambda-go's own
// handler so payloads decode and errors are named exactly as on Lambda, and
// through telemetry.Task so each logs and counts as its Lambda does.
var functionNames = []string{
	"plan", "fetch", "compile", "reason", "flag-review", "escalate", "act",
	"validate-technical", "validate-safety", "validate-intent", "witness", "record", "operate",
}

// registerHandlers builds every task handler over the runtime's stores, the
// same handler types the Lambdas in functions/* start.
func (r *Runtime) registerHandlers(ctx context.Context) error {
	reasoner, err := r.reasoner(ctx)
	if err != nil {
		return err
	}
	budget := func(o *orient.Options) { o.TokenBudget = r.cfg.TokenBudget }
	handlers := map[string]any{
		"plan":    planh.Handler{Planner: orient.NewPlanner(r.ledger)}.Handle,
		"fetch":   fetchh.Handler{Fetcher: orient.NewFetcher(r.ledger)}.Handle,
		"compile": compileh.Handler{Compiler: orient.NewCompiler(r.ledger, budget)}.Handle,
		"reason":  reasonh.Handler{Ledger: r.ledger, Reasoner: reasoner}.Handle,
	}
	for name, h := range r.actHandlers() {
		handlers[name] = h
	}
	for _, name := range functionNames {
		h, ok := handlers[name]
		if !ok {
			return fmt.Errorf("embedded: no handler for function %s", name)
		}
		r.engine.RegisterHandler(name, telemetry.Task(name, h, r.logger, r.metrics, func(o *telemetry.TaskOptions) {
			o.AuthorType = "rules"
			if r.cfg.Reasoner.Kind == "bedrock" {
				o.AuthorType = "model"
			}
			o.Classify = func(name string) string { class, _ := operate.Classify(name); return class }
		}))
	}
	return nil
}

// reasoner returns the configured reasoner: the rules file, or Bedrock.
func (r *Runtime) reasoner(ctx context.Context) (ora.Reasoner, error) {
	set, err := rules.Load(r.cfg.RulesFile, defaultrules.Default)
	if err != nil {
		return nil, fmt.Errorf("embedded: rules_file: %w", err)
	}
	if r.cfg.Reasoner.Kind != "bedrock" {
		return rules.New(set), nil
	}
	bc := r.cfg.Reasoner.Bedrock
	bc.RulesVersion = set.Version()
	client, err := bedrock.NewClient(ctx, func(o *bedrock.ClientOptions) {
		o.Endpoint, o.Region = r.cfg.Reasoner.BedrockEndpoint, r.cfg.Reasoner.Region
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: bedrock client: %w", err)
	}
	rs, err := reason.NewReasoner(bedrock.New(client), bc, func(o *reason.Options) {
		o.Patterns, o.Spend = r.patterns, r.spend
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: reasoner.bedrock: %w", err)
	}
	return rs, nil
}
