package embedded

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// operator builds the runtime's operator: the configured policy, the failed
// stage read from the engine's history, the motor version (the rules file's
// version until a versioned motor is promoted), the app version (the digest
// of the app's configuration) and the engine to hand paused waves' tokens
// back to.
func (r *Runtime) operator() *operate.Service {
	return operate.New(r.ledger, func(o *operate.Options) {
		o.AutoResumeTransient = r.cfg.Operate.AutoResumeTransient
		o.MaxAutoResumes = r.cfg.Operate.MaxAutoResumes
		o.PauseTimeout = time.Duration(r.cfg.Operate.PauseTimeout)
		o.FailedStage = r.failedStage
		o.Motor = r.motor
		o.AppVersion = r.appVersion()
		o.Resumer = settler{r.engine}
		o.Redriver = redriver{r}
		o.JobsStaged = r.jobs().Staged // a wave paused past JobsRetention re-plans
		o.Promote = r.promote          // a motor incident's resume promotes its version through the gate
		o.CheckPatch = r.checkPatch
		if r.metrics != nil {
			o.Metrics = r.metrics
		}
	})
}

// promote makes a proposed motor version current through the gate.
func (r *Runtime) promote(ctx context.Context, version, reason, by string) error {
	_, err := r.motors.Promote(ctx, version, reason, by)
	return err
}

// checkPatch checks an app patch against the configuration: a mapping
// patch replaces a configured source's mapping.
func (r *Runtime) checkPatch(_ context.Context, p operate.AppPatch) error {
	if p.Kind != operate.PatchMapping {
		return nil
	}
	var names []string
	for _, s := range append(r.cfg.Sources, r.cfg.Events) {
		if s.Name == p.Target {
			return nil
		}
		if s.Name != "" {
			names = append(names, s.Name)
		}
	}
	return ora.Invalid("patch.target", "no source %q is configured (sources: %s)", p.Target, strings.Join(names, ", "))
}

// failedStage reads the stage that failed from the execution's history.
func (r *Runtime) failedStage(ctx context.Context, executionArn string) (string, error) {
	hist, err := r.engine.GetExecutionHistory(ctx, executionArn)
	if err != nil {
		return "", fmt.Errorf("history of %s: %w", executionArn, err)
	}
	var entered []string
	for _, ev := range hist {
		if ev.StateEnteredEventDetails != nil {
			entered = append(entered, ev.StateEnteredEventDetails.Name)
		}
	}
	return operate.FailedStage(entered), nil
}

// motor answers the current motor version.
func (r *Runtime) motor(ctx context.Context) (operate.Motor, error) {
	b, prev, since, err := r.motors.Current(ctx)
	if err != nil {
		return operate.Motor{}, err
	}
	return motor.OperatorMotor(b, prev, since), nil
}

// openMotor opens the motor registry: the configured rules file is the base
// version; promotions are gated by the golden set (operate.golden_dir, else
// the one that ships with ora) and by the configured reasoner's models.
func (r *Runtime) openMotor(version string, rulesText []byte) error {
	golden, err := motor.Golden()
	if r.cfg.Operate.GoldenDir != "" {
		golden, err = motor.LoadGolden(r.cfg.Operate.GoldenDir)
	}
	if err != nil {
		return fmt.Errorf("embedded: operate.golden_dir: %w", err)
	}
	base := motor.Bundle{Version: version, Rules: string(rulesText), Orientation: motor.Orientation{TokenBudget: r.cfg.TokenBudget},
		Changelog: "the configured rules file"}
	// A proposed motor's model profile may name only the models the
	// configured reasoner lists (reasoner.bedrock: model, fallback_models).
	models := r.cfg.Reasoner.Bedrock.Models()
	// Through the configured reasoner: Bedrock answers from the responses
	// `ora motor record` kept beside the golden set.
	build, err := r.cfg.ReplayBuild(context.Background(), &bedrock.Replayer{Recordings: bedrock.DirRecordings(r.cfg.RecordingsDir())})
	if err != nil {
		return err
	}
	r.motors = motor.NewRegistry(r.ledger, base, motor.GoldenGate(golden, func(o *motor.GateOptions) { o.Build = build }), func(o *motor.Options) { o.Models = models })
	r.golden, r.replayBuild = golden, build // the motor page replays them too
	return nil
}

// appVersion is the app context's version (Config.AppVersionOf); Validate
// has checked it.
func (r *Runtime) appVersion() string {
	v, err := r.cfg.AppVersionOf()
	if err != nil {
		return "unversioned"
	}
	return v
}

// AppVersionOf is the app context's version every decision and operator
// record carries (ora.AppVersion): app_version (default 0.0.0) with the
// digest of the app context as build metadata. The app context is the
// sources and their settings (without their secrets), the schedules, the
// actions' configuration and bounds (without the signing secret), the
// tokens' subjects, scopes and namespaces (without the tokens), the
// escalation timeout and the token budget. Errors: EINVALID (app_version).
func (c Config) AppVersionOf() (string, error) {
	type token struct {
		Subject   string   `json:"subject"`
		Scopes    []string `json:"scopes"`
		Namespace string   `json:"namespace,omitempty"`
	}
	app := struct {
		Sources           []observe.SourceConfig `json:"sources"`
		Schedules         []observe.Job          `json:"schedules"`
		Actions           act.Config             `json:"actions"`
		Tokens            []token                `json:"tokens"`
		EscalationTimeout string                 `json:"escalation_timeout"`
		TokenBudget       int                    `json:"token_budget"`
		// The functions function.invoke runs (none: the digest is as before).
		Functions map[string]act.FunctionConfig `json:"functions,omitempty"`
	}{Schedules: c.Schedules, Actions: c.Actions, EscalationTimeout: time.Duration(c.EscalationTimeout).String(), TokenBudget: c.TokenBudget}
	app.Actions.HTTP.SigningSecret = ""
	app.Functions = c.Functions
	for _, s := range c.Sources {
		s.Secret = ""
		app.Sources = append(app.Sources, s)
	}
	for _, t := range c.Tokens {
		app.Tokens = append(app.Tokens, token{t.Subject, t.Scopes, t.Namespace})
	}
	return ora.AppVersion(c.AppVersion, app)
}
