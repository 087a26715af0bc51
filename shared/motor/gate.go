package motor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/rules"
)

// ReplayBuild makes the reasoner a replay decides one golden wave with:
// bundle b's reasoner (its rules, prompts and model profile) with its clock
// fixed at at, the wave's signal time, so that what it asks a model is the
// same on every replay of the wave.
type ReplayBuild func(b Bundle, at time.Time) (ora.Reasoner, error)

// GateOptions tune the golden gate.
type GateOptions struct {
	// Build makes the reasoner the decision waves are replayed through: the
	// motor's configured reasoner (ModelReplay for Bedrock, answering from
	// recorded responses). nil: the rules reasoner over the bundle's rules.
	Build ReplayBuild
}

// Replay re-runs the golden waves under bundle b's rules reasoner; see
// ReplayWith.
func Replay(ctx context.Context, b Bundle, waves []GoldenWave) (Report, error) {
	return ReplayWith(ctx, b, waves, nil)
}

// ReplayWith re-runs the golden waves under bundle b and reports, wave by
// wave, what changed: decision (the action), band, verdict, classification
// (a golden incident). A golden incident is classified as the operator
// would under b, its learned patterns included (operate.ClassifyUnder).
// Each decision wave goes through what b fixes:
//
//   - its orientation profile: a packet compiled under another token budget
//     is compiled again from its facts under b's;
//   - its reasoner, made by build (nil: the rules reasoner over b's rules);
//     a model reasoner answering from recordings fails a wave whose request
//     nobody recorded, naming the request's digest;
//   - its validator settings: an action whose target matches b's safety
//     forbidden_paths would fail safety, so the wave's verdict is "failed".
//
// A wave whose decision fails its contract (ReasonerDecision.Validate)
// fails too. Errors: EINVALID (b's rules or validators do not parse).
func ReplayWith(ctx context.Context, b Bundle, waves []GoldenWave, build ReplayBuild) (Report, error) {
	settings, err := ParseValidatorSettings(b.Validators)
	if err != nil {
		return Report{}, fmt.Errorf("motor %s: %w", b.Version, err)
	}
	if build == nil {
		rs, err := RulesBuild(b)
		if err != nil {
			return Report{}, err
		}
		build = func(Bundle, time.Time) (ora.Reasoner, error) { return rs, nil }
	}
	rep := Report{Motor: b.Version, Failing: []string{}}
	for _, w := range waves {
		var c Change
		if w.Incident != nil {
			c = replayIncident(b, w)
		} else {
			c = replayWave(ctx, b, w, build, settings)
		}
		if len(c.Changed) > 0 {
			rep.Failing = append(rep.Failing, w.Name)
		}
		rep.Waves = append(rep.Waves, c)
	}
	return rep, nil
}

// replayIncident classifies a golden incident again under b: the
// operator's classifier with the learned patterns b carries, as the operator
// would classify the failure once b is current.
func replayIncident(b Bundle, w GoldenWave) Change {
	c := Change{Name: w.Name, Want: w.Expect}
	got := operate.ClassifyUnder(operate.Motor{Version: b.Version, Learned: b.Learned}, operate.Facts(*w.Incident))
	c.Got = Expect{Classification: got.Classification, Taxonomy: got.Taxonomy}
	if c.Got != c.Want {
		c.Changed = []string{"classification"}
	}
	return c
}

// replayWave decides a golden decision wave again under b.
func replayWave(ctx context.Context, b Bundle, w GoldenWave, build ReplayBuild, settings ValidatorSettings) Change {
	c := Change{Name: w.Name, Want: w.Expect}
	if c.Want.Verdict == "" {
		c.Want.Verdict = verdictOf(ora.ConfidenceBand(w.Expect.Band))
	}
	fail := func(err error) Change {
		c.Error, c.Changed = ora.ErrorMessage(err), []string{"error"}
		var missing *bedrock.MissingRecording
		var missingTool *bedrock.MissingToolResult
		switch {
		case errors.As(err, &missingTool):
			c.Error = missingTool.Error()
		case errors.As(err, &missing):
			c.Error = missing.Error()
		}
		return c
	}
	packet, err := packetUnder(b, w)
	if err != nil {
		return fail(err)
	}
	at := w.Signal.NormalizedAt
	if at.IsZero() {
		at = w.Signal.Timestamp
	}
	rs, err := build(b, at)
	if err != nil {
		return fail(fmt.Errorf("motor %s: %w", b.Version, err))
	}
	// A tool result nobody recorded goes back to the model as an error,
	// which then asks a request nobody recorded: the wave fails naming the
	// tool result instead.
	ctx, tools := withToolNotes(ctx)
	d, err := rs.Reason(ctx, ora.ReasonerInput{Signal: w.Signal, Packet: packet})
	if terr := tools.first(); terr != nil {
		return fail(terr)
	}
	if err != nil {
		return fail(err)
	}
	band := d.Band()
	c.Got = Expect{Action: d.ActionType, Band: string(band), Verdict: verdictOf(band)}
	if c.Validators = forbiddenBy(d, settings); len(c.Validators) > 0 {
		c.Got.Verdict = "failed"
	}
	if c.Got.Action != c.Want.Action {
		c.Changed = append(c.Changed, "decision")
	}
	if c.Got.Band != c.Want.Band {
		c.Changed = append(c.Changed, "band")
	}
	if c.Got.Verdict != c.Want.Verdict {
		c.Changed = append(c.Changed, "verdict")
	}
	return c
}

// packetUnder is the wave's packet under b's orientation profile: compiled
// again from its facts when b sets another token budget.
func packetUnder(b Bundle, w GoldenWave) (ora.OrientationPacket, error) {
	p := w.Packet
	budget := b.Orientation.TokenBudget
	if budget <= 0 || budget == p.TokenBudget || len(p.Bands) == 0 {
		return p, nil
	}
	var facts []ora.Fact
	bands := make([]ora.BandBudget, len(p.Bands))
	for i, band := range p.Bands {
		bands[i] = band.BandBudget
		facts = append(facts, band.Facts...)
	}
	out, err := orient.Compile(w.Signal, facts, func(o *orient.Options) {
		o.TokenBudget, o.Bands, o.ProfileID, o.ProfileVersion = budget, bands, p.ProfileID, p.ProfileVersion
	})
	if err != nil {
		return ora.OrientationPacket{}, fmt.Errorf("motor %s: orientation.token_budget %d: %w", b.Version, budget, err)
	}
	out.ID = p.ID
	return out, nil
}

// forbiddenBy lists the decision's actions whose targets the settings'
// forbidden paths refuse: what the safety validator would fail.
func forbiddenBy(d ora.ReasonerDecision, s ValidatorSettings) []string {
	var out []string
	if len(s.Safety.ForbiddenPaths) == 0 {
		return nil
	}
	for i, a := range d.Plan() {
		for _, t := range act.ParamTargets(a.Parameters) {
			if p, bad := act.Forbidden(t, s.Safety.ForbiddenPaths); bad {
				out = append(out, fmt.Sprintf("safety: action %d (%s): target %q matches forbidden path %q", i, a.Type, t, p))
				break
			}
		}
	}
	return out
}

// GoldenGate is the promotion gate over a golden set: the contract checks of
// the bundle, then the replay (ReplayWith, through GateOptions.Build); the
// failing waves are named.
func GoldenGate(waves []GoldenWave, opts ...func(*GateOptions)) GateFunc {
	var o GateOptions
	for _, f := range opts {
		f(&o)
	}
	return func(ctx context.Context, b Bundle) ([]string, error) {
		if _, _, err := b.Check(); err != nil {
			return []string{"contract: " + ora.ErrorMessage(err)}, nil
		}
		rep, err := ReplayWith(ctx, b, waves, o.Build)
		if err != nil {
			return nil, err
		}
		return rep.failingWhy(), nil
	}
}

// failingWhy names each failing wave, and a wave that failed with an error
// with its error too (a missing recording names its request's digest).
func (r Report) failingWhy() []string {
	out := []string{}
	for _, c := range r.Waves {
		switch {
		case len(c.Changed) == 0:
		case c.Error != "":
			out = append(out, c.Name+" ("+c.Error+")")
		default:
			out = append(out, c.Name)
		}
	}
	return out
}

// ModelOptions returns what bundle b fixes for its model reasoner besides
// its model profile, the same in production (the reason stage of ora dev
// and of the reason function) and in the gate's replay (ModelReplay), so
// the gate asks the model what production would: b's rules, whose rules may
// name a wave's program before the configuration's programs route by
// signal type (reason.Options.Rules), and what the runtime offers the model
// (reason.Offer: the catalogue of actions, and the MCP servers' tools;
// servers nil without MCP servers). Errors: EINVALID (b's rules).
func ModelOptions(b Bundle, catalogue []act.Description, servers *mcp.Client) (func(*reason.Options), error) {
	set, err := rules.Parse([]byte(b.Rules))
	if err != nil {
		return nil, fmt.Errorf("motor %s: %w", b.Version, err)
	}
	return func(o *reason.Options) {
		o.Rules = set
		reason.Offer(o, catalogue, servers)
	}, nil
}

// ModelReplay is the replay build of the Bedrock reasoner: conv (whose
// client answers from recordings in a gate) with cfg and the bundle's model
// profile laid over (reason.Config.WithProfile), its clock fixed at the
// wave's signal time, what the bundle fixes in production (ModelOptions:
// its rules' programs, the catalogue and MCP tools the runtime offers the
// model; servers nil without MCP servers, else a client over the tool lists
// recorded with the golden set, mcp.Options.Listed), and no pattern cache,
// spend meter, ledger tools or stage store, with a green kernel: what it
// asks the model depends on the bundle and the wave alone.
func ModelReplay(conv reason.Converser, cfg reason.Config, catalogue []act.Description, servers *mcp.Client) ReplayBuild {
	return func(b Bundle, at time.Time) (ora.Reasoner, error) {
		c, err := cfg.WithProfile(b.Model, b.Version)
		if err != nil {
			return nil, err
		}
		version, err := ModelOptions(b, catalogue, servers)
		if err != nil {
			return nil, err
		}
		return reason.NewReasoner(conv, c, version, func(o *reason.Options) {
			o.Now = func() time.Time { return at }
		})
	}
}
