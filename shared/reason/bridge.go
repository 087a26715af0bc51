package reason

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// Converser makes one model call; *bedrock.Converser implements it.
type Converser interface {
	// Converse runs req. Errors: EINVALID, ETRANSIENT, ENOTFOUND, EFORBIDDEN,
	// EINTERNAL (see bedrock.Converser.Converse).
	Converse(ctx context.Context, req bedrock.Request) (bedrock.Response, error)
}

var _ Converser = (*bedrock.Converser)(nil)

// Options are the bridge's and the Reasoner's optional dependencies.
type Options struct {
	// Patterns is the pattern cache; nil disables pattern matching.
	Patterns PatternCache
	// Spend is the per-day spend meter; nil disables the spend cap.
	Spend SpendMeter
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// Kernel returns the kernel state the Reasoner puts in its envelopes.
	// Default: green (the pipeline has no kernel of its own).
	Kernel func(context.Context) (ora.KernelStateRef, error)
	// Ledger serves the read-only tools (oa.ledger.entries,
	// oa.commitments.open, oa.packet.facts) a model may call when its
	// envelope's tools_allowed names them; nil offers none of them.
	Ledger LedgerReader
	// Tools lists more tools (the MCP servers', see MCPTools) offered
	// when the envelope's tools_allowed names them; nil offers none.
	Tools Toolbox
	// Log receives every diagnostic of warning or error severity (Bedrock
	// errors, stop reasons, blocked tools, ...), with the program and
	// envelope. Default slog.Default().
	Log *slog.Logger
	// Catalogue describes the actions a model may propose (act.Registry's
	// Catalogue, or act.StandardCatalogue of the configuration); the
	// SafeOPSDecision schema is its typed union, built once. Default: the
	// standard actions with no configured bounds.
	Catalogue []act.Description
	// Guard, when set, screens every signal's payload before the model
	// sees it (Bedrock Guardrails' ApplyGuardrail, whose prompt-attack
	// filter catches injected instructions); a payload it intervenes on is
	// decided by nobody: the decision is none, escalated to a human.
	Guard InputGuard
	// Stages keeps each finished stage's observation by envelope, so that a
	// retried run resumes at the next stage and never pays twice for one;
	// nil disables it. The ledger's pattern store serves (its keys start
	// with "stage:").
	Stages PatternCache
	// Rules, when set, chooses a wave's program per rule before the
	// configuration's programs route by signal type: the motor version's
	// rules file (*rules.Set), whose rules may name a program. Nil: the
	// configuration alone chooses.
	Rules ProgramRules
}

// ProgramRules chooses a wave's reasoning program by rule; *rules.Set is
// one.
type ProgramRules interface {
	// ProgramFor returns the program of the first rule that names one and
	// matches the signal (with its packet), and the rule's name; ok is
	// false when none does. Errors: EINVALID (a payload that is not JSON).
	ProgramFor(sig ora.NormalizedSignal, packet ora.OrientationPacket) (program ora.ProgramID, rule string, ok bool, err error)
}

// StageTTL is how long a finished stage is kept for a retried run.
const StageTTL = time.Hour

// Input is what a program reads besides its envelope: the signal and the
// orientation packet, either of which may be absent (`ora reason` runs an
// envelope alone).
type Input struct {
	Signal *ora.NormalizedSignal
	Packet *ora.OrientationPacket
	// Batch, when set, holds the signals (each with its packet) reasoned
	// together in one chain; Signal and Packet are then unused. The payload
	// is then a BatchPayload with one decision per signal.
	Batch []ora.ReasonerInput
}

// Outcome is a bridge run: the seed-001 result, the model trace, every
// observation and, unless BLOCKED or FAILED, the crystallized observation and
// the typed payload (SafeOPSDecisionResult, ...).
type Outcome struct {
	Result       ora.ReasoningResult `json:"result"`
	Trace        ora.ModelTrace      `json:"trace"`
	Observations []Observation       `json:"observations"`
	Final        *Observation        `json:"final,omitempty"`
	Payload      any                 `json:"-"`
	// HumanOnly: a stage's answer was unusable (StopPolicy, or it failed its
	// schema) after earlier stages had answered; the decision may only be
	// taken by a human (the Reasoner caps its confidence at
	// HumanOnlyConfidence).
	HumanOnly bool `json:"human_only,omitempty"`
	// Resumed counts the stages read back from Options.Stages instead of
	// being asked again.
	Resumed int `json:"resumed,omitempty"`
}

// Diagnostic codes the bridge records.
const (
	DiagKernelNotGreen   = "KERNEL_NOT_GREEN"
	DiagSpendCap         = "SPEND_CAP_REACHED"
	DiagToolNotAllowed   = "TOOL_NOT_ALLOWED"
	DiagMalformedOutput  = "MALFORMED_OUTPUT"
	DiagNoDecision       = "NO_DECISION"
	DiagDegraded         = "DEGRADED"
	DiagPatternCache     = "PATTERN_CACHE_UNAVAILABLE"
	DiagSpendNotRecorded = "SPEND_NOT_RECORDED"
	// DiagGuardrail: Bedrock stopped an answer (guardrail_intervened or
	// content_filtered).
	DiagGuardrail = "GUARDRAIL_INTERVENED"
	// DiagStopReason: an answer's stopReason made it unusable or retried.
	DiagStopReason = "STOP_REASON"
	// DiagBedrockError names a Bedrock error a retry or fallback recovered.
	DiagBedrockError = "BEDROCK_ERROR"
	// DiagStageStore: the stage store failed (the run goes on without it).
	DiagStageStore = "STAGE_STORE_UNAVAILABLE"
	// DiagPatternHit: a cached pattern was shown to stage 1.
	DiagPatternHit = "PATTERN_HIT"
	// DiagPatternReused: the same payload's cached decision was reused
	// without a model call.
	DiagPatternReused = "PATTERN_REUSED"
	// DiagResumed: finished stages were read back.
	DiagResumed = "STAGES_RESUMED"
	// DiagToolsUnavailable: a toolbox (an MCP server) could not be listed;
	// its tools are not offered.
	DiagToolsUnavailable = "TOOLS_UNAVAILABLE"
)

// Bridge runs reasoning programs (seed 001) as observer chains (seed 004) on
// a model.
type Bridge struct {
	conv Converser
	cfg  Config
	opts Options
	// program, when set (by tests), is handed the program's copy of the
	// envelope before the chain runs, as a program would get it.
	program func(*ora.ReasoningEnvelope)
	// safeOPS is the SafeOPSDecision schema built from the catalogue.
	safeOPS string
}

// InputGuard screens texts before a model sees them; *bedrock.Guard
// implements it.
type InputGuard interface {
	// Check applies the guardrail to texts as source (INPUT). Errors:
	// ETRANSIENT and the other Bedrock kinds.
	Check(ctx context.Context, source string, texts ...string) (bedrock.GuardVerdict, error)
}

var _ InputGuard = (*bedrock.Guard)(nil)

// decisionSchema returns the schema of program's payload on this bridge.
func (b *Bridge) decisionSchema(program ora.ProgramID) string {
	if program == ora.ProgramSafeOPSDecision {
		return b.safeOPS
	}
	return programs[program].schema
}

// NewBridge returns a bridge over conv. Errors: EINVALID when cfg is invalid.
func NewBridge(conv Converser, cfg Config, opts ...func(*Options)) (*Bridge, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := Options{Now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if len(o.Catalogue) == 0 {
		o.Catalogue = act.StandardCatalogue(act.Config{})
	}
	o.Catalogue = withNone(o.Catalogue)
	return &Bridge{conv: conv, cfg: cfg, opts: o, safeOPS: SafeOPSSchema(o.Catalogue)}, nil
}

// Run runs env's program. The program works on a clone of env: nothing it
// does reaches the caller's envelope, whose digest is recorded in the trace.
//
// Whatever the model does, Run returns an Outcome whose Result.Status says how
// it went: OK; DEGRADED (a fallback model answered, the packet was truncated,
// the chain stopped early for the token budget or the spend cap, or a later
// stage was malformed); BLOCKED (kernel not green for a program other than
// GuardFailureInterpreter, the day's spend cap reached, or a tool outside
// tools_allowed requested); FAILED (malformed output with nothing to fall back
// on). Errors: EINVALID (bad envelope, or Bedrock rejected the request),
// ETRANSIENT (the model was throttled or down on every model after retries),
// ENOTFOUND/EFORBIDDEN (no usable model), EINTERNAL.
func (b *Bridge) Run(ctx context.Context, env ora.ReasoningEnvelope, in Input) (Outcome, error) {
	if err := env.Validate(); err != nil {
		return Outcome{}, err
	}
	digest, err := env.Digest()
	if err != nil {
		return Outcome{}, err
	}
	work, err := env.Clone()
	if err != nil {
		return Outcome{}, err
	}
	if b.program != nil {
		b.program(&work)
	}
	r := &run{b: b, env: work, orig: env, in: in}
	r.out = Outcome{
		Result: ora.ReasoningResult{EnvelopeID: env.EnvelopeID, ProgramID: env.ProgramID, ToolCalls: []ora.ToolCall{}, Diagnostics: []ora.Diagnostic{}},
		Trace:  ora.ModelTrace{ModelID: b.cfg.Model, EnvelopeDigest: digest, MotorVersion: b.cfg.MotorVersion()},
	}
	return r.run(ctx, in)
}

// run is one Run. env is the program's copy (it feeds the prompts); orig is
// the caller's envelope, which alone decides what is allowed (kernel state,
// tools_allowed), so nothing a program does to its copy widens its rights.
type run struct {
	b    *Bridge
	env  ora.ReasoningEnvelope
	orig ora.ReasoningEnvelope
	in   Input
	out  Outcome

	day    string
	capped bool
	capHit bool
	// The current stage's calls (a stage may be asked twice): their usage,
	// cost and tokens, and the degradations they caused.
	stageUsage    ora.Usage
	stageCost     float64
	stageTokens   int
	stageDegraded []string
	// offered are the tools the run offers, by wire name (offeredTools).
	offered map[string]Tool
}

// ask asks one stage: a call, retried once as StopPolicy says, and, while
// the model calls the read-only tools it was offered, the tool loop (their
// results go back as toolResult blocks; after MaxToolTurns rounds
// record_observation is forced). It returns the last answer and its
// handling. A call to a tool outside tools_allowed ends the loop: the answer
// goes back to the caller, whose check blocks it.
func (r *run) ask(ctx context.Context, stage int, req bedrock.Request) (bedrock.Response, StopHandling, error) {
	program := r.orig.ProgramID
	offered := r.offeredTools(ctx)
	for turn := 0; ; turn++ {
		resp, err := r.call(ctx, stage, req)
		if err != nil {
			return resp, "", fmt.Errorf("reason: %s stage %d: %w", program, stage, err)
		}
		h := stopHandling(resp.StopReason)
		if h == StopRetryLargerCap || h == StopRetryOnce {
			how := "as it was"
			if h == StopRetryLargerCap {
				req.Inference.MaxTokens *= 2
				how = fmt.Sprintf("with maxTokens %d", req.Inference.MaxTokens)
			}
			r.diag(DiagStopReason, "warning", "stage %d: stopReason %s: the answer is not used; asking once more %s", stage, resp.StopReason, how)
			stopped := resp.StopReason
			if resp, err = r.call(ctx, stage, req); err != nil {
				return resp, "", fmt.Errorf("reason: %s stage %d (retry after %s): %w", program, stage, stopped, err)
			}
			if h = stopHandling(resp.StopReason); h == StopRetryLargerCap || h == StopRetryOnce {
				h = StopUnusable
			}
		}
		if h != StopUsable || len(offered) == 0 {
			return resp, h, nil
		}
		var calls []bedrock.ToolUse
		for _, tu := range resp.ToolUses {
			if tu.Name == ObservationTool {
				return resp, h, nil // the stage's answer
			}
			if _, ok := offered[tu.Name]; !ok {
				return resp, h, nil // outside tools_allowed: blocked by the caller
			}
			calls = append(calls, tu)
		}
		if len(calls) == 0 || turn >= MaxToolTurns {
			return resp, h, nil
		}
		if r.capHit {
			// The day's spend cap was reached: no further tool round; the
			// stage's answer is forced on this call.
			r.diag(DiagSpendCap, "warning", "stage %d: the daily spend cap of %g USD was reached: the model's tool calls are not run", stage, r.b.cfg.DailySpendCapUSD)
			req.ForceTool, req.AnyTool = ObservationTool, false
			resp, err = r.call(ctx, stage, req)
			if err != nil {
				return resp, "", fmt.Errorf("reason: %s stage %d (spend cap): %w", program, stage, err)
			}
			return resp, stopHandling(resp.StopReason), nil
		}
		t := bedrock.Turn{Text: resp.Text, ToolUses: calls}
		for _, tu := range calls {
			res, err := r.runTool(ctx, stage, offered[tu.Name], tu)
			if err != nil {
				return resp, "", err
			}
			t.Results = append(t.Results, res)
		}
		req.Turns = append(req.Turns, t)
		if turn+1 >= MaxToolTurns {
			req.ForceTool, req.AnyTool = ObservationTool, false
		}
	}
}

// call makes one model call for stage and accounts for it: usage, cost and
// spend (a stage asked twice pays for both calls), every Bedrock error a
// retry or fallback recovered, and the fallback's degradation.
func (r *run) call(ctx context.Context, stage int, req bedrock.Request) (bedrock.Response, error) {
	cfg, opts := r.b.cfg, r.b.opts
	if r.stageDegraded == nil {
		r.stageUsage, r.stageCost, r.stageTokens = ora.Usage{}, 0, 0
		r.stageDegraded = []string{}
	}
	resp, err := r.b.conv.Converse(ctx, req)
	if err != nil {
		r.diag(DiagBedrockError, "error", "stage %d: %v", stage, err)
		r.out.Trace.BedrockErrors = append(r.out.Trace.BedrockErrors, fmt.Sprintf("stage %d: %v", stage, err))
		return resp, err
	}
	for _, f := range resp.Failures {
		r.diag(DiagBedrockError, "warning", "stage %d: %s", stage, f)
		r.out.Trace.BedrockErrors = append(r.out.Trace.BedrockErrors, fmt.Sprintf("stage %d: %s", stage, f))
	}
	r.out.Trace.ChainLength = stage
	r.out.Trace.ModelID = resp.Model
	r.out.Trace.Usage = r.out.Trace.Usage.Add(resp.Usage)
	cost := cfg.Cost(resp.Model, resp.Usage)
	r.out.Trace.CostUSD += cost
	r.stageUsage = r.stageUsage.Add(resp.Usage)
	r.stageCost += cost
	r.stageTokens += cfg.BudgetTokens(resp.Model, resp.Usage)
	if resp.Fallback {
		msg := fmt.Sprintf("stage %d answered by fallback model %s (%v)", stage, resp.Model, resp.Failures)
		r.stageDegraded = append(r.stageDegraded, msg)
		r.degrade("%s", msg)
	}
	if opts.Spend != nil {
		total, err := opts.Spend.Add(ctx, r.day, cost)
		if err != nil {
			r.diag(DiagSpendNotRecorded, "warning", "spend of %.6f USD not recorded: %v", cost, err)
		} else if r.capped && total >= cfg.DailySpendCapUSD {
			r.capHit = true
		}
	}
	return resp, nil
}

// storedStage is a finished stage as Options.Stages keeps it.
type storedStage struct {
	Observation Observation    `json:"observation"`
	ToolCalls   []ora.ToolCall `json:"tool_calls,omitempty"`
	Degraded    []string       `json:"degraded,omitempty"`
}

func (r *run) stageKey(stage int) string {
	return fmt.Sprintf("stage:%s:%s:%d", r.orig.EnvelopeID, r.orig.ProgramID, stage)
}

// resume reads back the finished stages of an earlier try of this run, in
// order, stopping at the first missing one.
func (r *run) resume(ctx context.Context) []storedStage {
	st := r.b.opts.Stages
	if st == nil {
		return nil
	}
	var out []storedStage
	for stage := 1; stage <= r.b.cfg.MaxStages; stage++ {
		body, err := st.Get(ctx, r.stageKey(stage), r.b.cfg.MotorVersion())
		if err != nil {
			if ora.ErrorCode(err) != ora.ENOTFOUND {
				r.diag(DiagStageStore, "warning", "stage store: %v", err)
			}
			break
		}
		var s storedStage
		if err := json.Unmarshal(body, &s); err != nil || s.Observation.Stage != stage {
			r.diag(DiagStageStore, "warning", "stage store: stage %d is unreadable: asking again", stage)
			break
		}
		out = append(out, s)
	}
	return out
}

// saveStage records a finished stage; a failure is a diagnostic (the run
// goes on; a retry would pay for the stage again).
func (r *run) saveStage(ctx context.Context, o Observation) {
	st := r.b.opts.Stages
	if st == nil {
		return
	}
	body, err := json.Marshal(storedStage{Observation: o, ToolCalls: callsOf(r.out.Result.ToolCalls, o), Degraded: r.stageDegraded})
	if err == nil {
		err = st.Put(ctx, r.stageKey(o.Stage), r.b.cfg.MotorVersion(), body, StageTTL)
	}
	if err != nil {
		r.diag(DiagStageStore, "warning", "stage store: stage %d not recorded: %v", o.Stage, err)
	}
}

// callsOf returns the tool calls of calls that observation o asked for.
func callsOf(calls []ora.ToolCall, o Observation) []ora.ToolCall {
	n := len(o.ToolCalls)
	if n > len(calls) {
		n = len(calls)
	}
	return calls[len(calls)-n:]
}

func (r *run) diag(code, severity, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.out.Result.Diagnostics = append(r.out.Result.Diagnostics, ora.Diagnostic{Code: code, Severity: severity, Message: msg})
	level := slog.LevelWarn
	switch severity {
	case "error":
		level = slog.LevelError
	case "warning":
	default:
		return
	}
	r.b.opts.Log.Log(context.Background(), level, "reason: "+msg, "code", code, "program", string(r.orig.ProgramID), "envelope_id", r.orig.EnvelopeID)
}

func (r *run) degrade(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.out.Trace.DegradedReasons = append(r.out.Trace.DegradedReasons, msg)
	r.diag(DiagDegraded, "warning", "%s", msg)
}

func (r *run) finish(status ora.ReasoningStatus, rationale string) (Outcome, error) {
	r.out.Result.Status, r.out.Trace.Status = status, status
	if rationale != "" {
		r.out.Result.Rationale = rationale
	}
	return r.out, nil
}

func (r *run) run(ctx context.Context, in Input) (Outcome, error) {
	cfg, opts := r.b.cfg, r.b.opts
	program := r.orig.ProgramID
	if !r.orig.KernelStateRef.Green() {
		r.diag(DiagKernelNotGreen, "error", "kernel state is not green (mode %q): diagnostic mode, only %s runs", r.orig.KernelStateRef.Mode, ora.ProgramGuardFailureInterpreter)
		if program != ora.ProgramGuardFailureInterpreter {
			return r.finish(ora.ReasoningBlocked, fmt.Sprintf("diagnostic mode: %s is blocked while the kernel is not green", program))
		}
	}
	day := Day(opts.Now())
	capped := cfg.DailySpendCapUSD > 0 && opts.Spend != nil
	if capped {
		total, err := opts.Spend.Total(ctx, day)
		if err != nil {
			return Outcome{}, fmt.Errorf("reason: spend total %s: %w", day, err)
		}
		if total >= cfg.DailySpendCapUSD {
			r.diag(DiagSpendCap, "error", "spent %.4f USD of the %.2f USD cap on %s", total, cfg.DailySpendCapUSD, day)
			return r.finish(ora.ReasoningBlocked, "the daily spend cap is reached")
		}
	}
	if in.Packet != nil && in.Packet.Truncated {
		r.degrade("orientation packet %s was truncated", in.Packet.ID)
	}
	pl := payloadFor(program, in, r.b.decisionSchema(program), len(r.orig.ToolsAllowed) > 0)
	var view *orient.View
	if v, ok := packetView(in, cfg.PacketViewTokens); ok {
		view = &v
		r.out.Trace.PacketViewDigest, r.out.Trace.PacketViewTokens = v.Digest, v.MaxTokens
	}
	pre, err := prefix(r.env, in, view)
	if err != nil {
		return Outcome{}, ora.Errorf(ora.EINTERNAL, "reason: prompt: %v", err)
	}
	fp := envelopeFingerprint(r.orig)
	if in.Signal != nil {
		fp = Fingerprint(program, *in.Signal)
	}
	// In diagnostic mode the answer is about the kernel's state, which the
	// pattern's key does not hold: no pattern is read or written.
	usePatterns := opts.Patterns != nil && cfg.PatternTTL > 0 && len(in.Batch) == 0 && r.orig.KernelStateRef.Green()
	var pattern *Pattern
	var words []string
	if usePatterns {
		words = TextWords(r.orig, in.Signal)
		pattern = r.lookupPattern(ctx, fp, words)
	}
	// A stage matches the pattern when it proposes the pattern's action.
	matches := func(o Observation) bool { return pattern != nil && sameAction(o.Decision, pattern.Decision) }
	allowed := map[string]bool{}
	for _, t := range r.orig.ToolsAllowed {
		allowed[t] = true
	}
	r.day, r.capped = day, capped

	var obs []Observation
	var check Check
	used := 0
	var lastUsage ora.Usage
	lastModel := cfg.Model
	first := 1
	for _, st := range r.resume(ctx) {
		o := st.Observation
		obs = append(obs, o)
		r.out.Result.ToolCalls = append(r.out.Result.ToolCalls, st.ToolCalls...)
		for _, d := range st.Degraded {
			r.degrade("%s", d)
		}
		r.out.Trace.ChainLength, r.out.Trace.ModelID = o.Stage, o.Model
		r.out.Trace.Usage = r.out.Trace.Usage.Add(o.Usage)
		r.out.Trace.CostUSD += o.CostUSD
		used += cfg.BudgetTokens(o.Model, o.Usage)
		lastUsage, lastModel = o.Usage, o.Model
		var prev *Observation
		if len(obs) > 1 {
			prev = &obs[len(obs)-2]
		}
		check = Inspect(o, prev, matches(o), cfg.layers())
		if !check.Crystallized && o.Stage == cfg.MaxStages {
			check.Crystallized, check.Reason = true, MaxStagesReached
		}
		first = o.Stage + 1
		r.out.Resumed++
	}
	if r.out.Resumed > 0 {
		r.diag(DiagResumed, "info", "stages 1..%d read back from the stage store, not asked again", r.out.Resumed)
	}
	reused := false
	if first == 1 && pattern != nil && in.Signal != nil && pattern.PayloadDigest != "" && pattern.PayloadDigest == PayloadDigest(*in.Signal) {
		if _, err := pl.decode(pattern.Decision); err != nil {
			r.diag(DiagPatternCache, "warning", "pattern cache: the cached decision of %s no longer fits the program's schema (%v): asking the model", pattern.source(), err)
		} else {
			reused = true
			obs = []Observation{{Content: fmt.Sprintf("The same signal (same source, shape and payload) was decided by %s under this motor version; its crystallized decision is reused without a model call.", pattern.source()),
				Confidence: pattern.Confidence, Decision: pattern.Decision, Model: PatternModel}}
			check = Check{Crystallized: true, Reason: PatternMatch}
			r.out.Trace.ModelID = PatternModel
			r.diag(DiagPatternReused, "info", "pattern cache: the same payload was decided by %s: its decision is reused, no model call", pattern.source())
		}
	}
	for stage := first; stage <= cfg.MaxStages && !check.Crystallized; stage++ {
		if stage > 1 {
			est := cfg.nextStageTokens(lastModel, lastUsage)
			if used+est > cfg.WaveTokenBudget {
				check = Check{Crystallized: true, Reason: TokenBudget}
				r.degrade("fewer stages: stage %d (~%d tokens) would exceed the wave's token budget of %d (%d used)", stage, est, cfg.WaveTokenBudget, used)
				break
			}
		}
		req := bedrock.Request{
			Models:    cfg.Models(),
			System:    []string{systemPrompt(cfg.Purpose, opts.Catalogue, cfg.Policy.Instructions, len(r.orig.ToolsAllowed) > 0, len(r.offeredTools(ctx)) > 0)},
			Prefix:    pre,
			Prompt:    stagePrompt(stage, obs, r.patternText(stage, pattern), cfg.layers()),
			Tools:     pl.tools(),
			ForceTool: ObservationTool,
			Inference: cfg.Inference,
			Guardrail: cfg.Guardrail,
			NoCache:   cfg.NoCachePoints,
		}
		if offered := r.offeredTools(ctx); len(offered) > 0 {
			req.Tools = append(req.Tools, toolSpecs(offered)...)
			req.ForceTool, req.AnyTool = "", true
		}
		r.stageDegraded = nil
		resp, h, err := r.ask(ctx, stage, req)
		if err != nil {
			return r.out, err
		}
		lastUsage, lastModel = r.stageUsage, resp.Model
		used += r.stageTokens
		if h == StopBlocked {
			r.out.Observations = obs
			r.out.Trace.CrystallizationReason = ""
			r.diag(DiagGuardrail, "error", "stage %d: Bedrock stopped the answer (stopReason %s, model %s): nothing this run proposed is acted on", stage, resp.StopReason, resp.Model)
			return r.finish(ora.ReasoningBlocked, fmt.Sprintf("stage %d: stopReason %s: a guardrail or content filter stopped the answer", stage, resp.StopReason))
		}
		var o Observation
		var perr error
		if h == StopUnusable {
			perr = fmt.Errorf("stopReason %s", resp.StopReason)
		} else {
			var requested []ToolRequest
			o, requested, perr = parseResponse(resp, pl)
			blocked := false
			for _, t := range requested {
				ok := allowed[t.Tool]
				r.out.Result.ToolCalls = append(r.out.Result.ToolCalls, ora.ToolCall{Tool: t.Tool, Input: t.Input, Allowed: ok})
				if !ok {
					blocked = true
					r.diag(DiagToolNotAllowed, "error", "stage %d asked for tool %q, which is not in tools_allowed %v", stage, t.Tool, r.orig.ToolsAllowed)
				}
			}
			if blocked {
				return r.finish(ora.ReasoningBlocked, "the program asked for a tool outside tools_allowed")
			}
		}
		if perr != nil {
			r.diag(DiagMalformedOutput, "error", "stage %d: answer unusable: %v", stage, perr)
			if len(obs) == 0 {
				return r.finish(ora.ReasoningFailed, fmt.Sprintf("stage %d answer unusable: %v", stage, perr))
			}
			check = Check{Crystallized: true, Reason: MalformedOutput}
			r.out.HumanOnly = true
			r.degrade("stage %d answer unusable (%v): crystallized on stage %d; only a human may take the decision", stage, perr, obs[len(obs)-1].Stage)
			break
		}
		o.Stage, o.Model, o.Usage, o.CostUSD = stage, resp.Model, r.stageUsage, r.stageCost
		obs = append(obs, o)
		r.saveStage(ctx, o)
		var prev *Observation
		if len(obs) > 1 {
			prev = &obs[len(obs)-2]
		}
		check = Inspect(o, prev, matches(o), cfg.layers())
		if check.Crystallized {
			break
		}
		if stage == cfg.MaxStages {
			check.Crystallized, check.Reason = true, MaxStagesReached
			break
		}
		if r.capHit {
			check.Crystallized, check.Reason = true, SpendCap
			r.degrade("fewer stages: the daily spend cap of %.2f USD was reached after stage %d", cfg.DailySpendCapUSD, stage)
			break
		}
	}
	r.out.Observations = obs
	r.out.Trace.CrystallizationReason = string(check.Reason)
	final := obs[len(obs)-1]
	r.out.Final = &final
	r.out.Result.Rationale = final.Content

	var raw json.RawMessage
	from := 0
	for i := len(obs) - 1; i >= 0; i-- {
		if obs[i].Decision != nil {
			raw, from = obs[i].Decision, obs[i].Stage
			break
		}
	}
	if raw == nil {
		r.diag(DiagNoDecision, "error", "no stage proposed a %s decision", program)
		return r.finish(ora.ReasoningFailed, "no stage proposed a decision payload")
	}
	if from != final.Stage {
		r.degrade("stage %d proposed no decision: using stage %d's", final.Stage, from)
	}
	payload, err := pl.decode(raw)
	if err != nil { // parseResponse validated it already
		return r.finish(ora.ReasoningFailed, err.Error())
	}
	r.out.Payload = payload
	if r.out.Result.Decision, err = json.Marshal(payload); err != nil {
		return Outcome{}, ora.Errorf(ora.EINTERNAL, "reason: encode payload: %v", err)
	}
	status := ora.ReasoningOK
	if len(r.out.Trace.DegradedReasons) > 0 {
		status = ora.ReasoningDegraded
	}
	if status == ora.ReasoningOK && usePatterns && !reused {
		p := Pattern{EnvelopeID: r.orig.EnvelopeID, Words: words, Decision: raw, Confidence: final.Confidence, At: opts.Now().UTC()}
		if in.Signal != nil {
			p.DecisionID, p.PayloadDigest = DecisionID(in.Signal.ID), PayloadDigest(*in.Signal)
		}
		body, _ := json.Marshal(p)
		if err := opts.Patterns.Put(ctx, fp, cfg.MotorVersion(), body, time.Duration(cfg.PatternTTL)); err != nil {
			r.diag(DiagPatternCache, "warning", "pattern cache: %v", err)
		}
	}
	return r.finish(status, "")
}

// parseResponse reads an observation from a stage's answer: the
// record_observation tool call, or else seed 004's text format. It returns the
// tools the model asked for (other tool calls, and the observation's
// tool_calls) even when the observation is malformed.
func parseResponse(resp bedrock.Response, pl payloadKind) (Observation, []ToolRequest, error) {
	var requested []ToolRequest
	var own *bedrock.ToolUse
	for i, tu := range resp.ToolUses {
		if tu.Name == ObservationTool && own == nil {
			own = &resp.ToolUses[i]
			continue
		}
		requested = append(requested, ToolRequest{Tool: tu.Name, Input: tu.Input})
	}
	var o Observation
	var err error
	if own != nil {
		o, err = parseToolInput(own.Input)
		if err == nil {
			err = validateObservationSchema(pl.schema(), own.Input)
		}
	} else {
		o, err = ParseText(resp.Text)
	}
	requested = append(requested, o.ToolCalls...)
	if err != nil {
		return o, requested, err
	}
	if o.Decision != nil {
		if _, derr := pl.decode(o.Decision); derr != nil {
			var e *ora.Error
			if errors.As(derr, &e) {
				derr = errors.New(e.Message)
			}
			return o, requested, fmt.Errorf("invalid decision payload: %v", derr)
		}
	}
	return o, requested, nil
}
