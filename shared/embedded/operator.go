package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ora-runtime/ora/shared/motor"
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
	})
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
	return operate.Motor{Version: b.Version, Previous: prev, Since: since}, nil
}

// openMotor opens the motor registry: the configured rules file is the base
// version; promotions are gated by the golden set (operate.golden_dir, else
// the one that ships with ora).
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
	r.motors = motor.NewRegistry(r.ledger, base, motor.GoldenGate(golden))
	return nil
}

// appVersion is the digest of the app context: the sources (without their
// secrets), the actions' bounds, the schedules and the token budget.
func (r *Runtime) appVersion() string {
	type source struct{ Name, Type string }
	app := struct {
		Sources     []source
		Hosts       []string
		Prefixes    []string
		Schedules   any
		TokenBudget int
	}{Hosts: r.cfg.Actions.HTTP.AllowedHosts, Prefixes: r.cfg.Actions.Object.AllowedPrefixes, Schedules: r.cfg.Schedules, TokenBudget: r.cfg.TokenBudget}
	for _, s := range r.cfg.Sources {
		app.Sources = append(app.Sources, source{s.Name, string(s.Type)})
	}
	b, err := json.Marshal(app)
	if err != nil {
		return "unversioned"
	}
	return "sha256:" + ora.Digest(b)[:12]
}
