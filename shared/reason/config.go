package reason

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/cost"
	"github.com/ora-runtime/ora/shared/ora"
)

// Duration is a time.Duration written as a Go duration string ("24h") in YAML
// and JSON.
type Duration time.Duration

// MarshalText writes the duration as a string such as "24h0m0s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Price is what a model costs, in USD per million tokens of each kind.
type Price struct {
	Input      float64 `yaml:"input" json:"input"`
	Output     float64 `yaml:"output" json:"output"`
	CacheRead  float64 `yaml:"cache_read" json:"cache_read"`
	CacheWrite float64 `yaml:"cache_write" json:"cache_write"`
}

// Cost returns what usage costs at p, in USD.
func (p Price) Cost(u ora.Usage) float64 {
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*p.CacheWrite) / 1e6
}

// Config configures the Bedrock reasoner. It is the `reason` section of the
// `ora dev` configuration file.
type Config struct {
	// Model is the primary Bedrock model id (or inference profile id).
	Model string `yaml:"model" json:"model"`
	// FallbackModels are tried in order when the primary is throttled, down or
	// unavailable after the SDK's retries. A decision a fallback made is DEGRADED.
	FallbackModels []string `yaml:"fallback_models,omitempty" json:"fallback_models,omitempty"`
	// Inference are the inference settings of every call.
	Inference bedrock.Inference `yaml:"inference" json:"inference"`
	// MaxStages bounds the observer chain (seed 004: 4).
	MaxStages int `yaml:"max_stages" json:"max_stages"`
	// WaveTokenBudget bounds the tokens (input, output, cache read and write)
	// one wave's calls may use; a wave that would exceed it stops early
	// (DEGRADED), it does not fail.
	WaveTokenBudget int `yaml:"wave_token_budget" json:"wave_token_budget"`
	// DailySpendCapUSD bounds the spend per UTC day; 0 disables the cap.
	DailySpendCapUSD float64 `yaml:"daily_spend_cap_usd" json:"daily_spend_cap_usd"`
	// Prices maps every model id above to its price.
	Prices map[string]Price `yaml:"prices" json:"prices"`
	// PatternTTL is how long a crystallized pattern stays in the cache; 0
	// disables the cache.
	PatternTTL Duration `yaml:"pattern_ttl" json:"pattern_ttl"`
	// PatternSimilarity is how similar (0..1, the share of words two
	// signals' text has in common) a signal must be to a cached pattern's,
	// besides having its fingerprint, for the pattern to be shown. Default
	// DefaultPatternSimilarity.
	PatternSimilarity float64 `yaml:"pattern_similarity,omitempty" json:"pattern_similarity,omitempty"`
	// PromptsVersion names the prompts; with the model and RulesVersion it
	// makes the motor version that keys the pattern cache.
	PromptsVersion string `yaml:"prompts_version" json:"prompts_version"`
	// RulesVersion is the rules reasoner's version, part of the motor version.
	RulesVersion string `yaml:"rules_version,omitempty" json:"rules_version,omitempty"`
	// ToolsAllowed is the tools_allowed list of the envelopes the Reasoner
	// builds. A model asking for any other tool makes the result BLOCKED.
	ToolsAllowed []string `yaml:"tools_allowed,omitempty" json:"tools_allowed,omitempty"`
	// NoCachePoints leaves the prompt-caching cache points out of requests
	// (for models without prompt caching).
	NoCachePoints bool `yaml:"no_cache_points,omitempty" json:"no_cache_points,omitempty"`
	// Guardrail, when set, is applied to every Converse call (its
	// guardrailConfig); an intervention makes the result BLOCKED.
	Guardrail bedrock.Guardrail `yaml:"guardrail,omitempty" json:"guardrail,omitempty"`
	// Layers is the layer catalogue the prompt offers an observation (the
	// aspects of a situation it may draw on); fewer than half of them
	// (LowComplexityThreshold) make an observation low complexity, which
	// ends the chain. Default DefaultLayers.
	Layers []string `yaml:"layers,omitempty" json:"layers,omitempty"`
	// PacketViewTokens bounds the orientation packet's view in the prompt
	// (orient.Render), in estimated tokens; 0 means orient.DefaultViewTokens.
	// The whole packet stays in the ledger; the model reads the view.
	PacketViewTokens int `yaml:"packet_view_tokens,omitempty" json:"packet_view_tokens,omitempty"`
	// Batch groups signals of one source arriving within a window into one
	// model call (see BatchConfig); off unless its window is set (on AWS
	// the window is ORA_BATCH_WINDOW_MS, the size and webhooks come from
	// here).
	Batch BatchConfig `yaml:"batch" json:"batch"`
	// Purpose is the agent's purpose in the operator's words, shown to the
	// model in the system prompt.
	Purpose string `yaml:"purpose,omitempty" json:"purpose,omitempty"`
	// Policy is the operator's policy: the instructions shown to the model
	// and the table that decides what a model decision may do.
	Policy Policy `yaml:"policy,omitempty" json:"policy,omitempty"`
	// Programs chooses the reasoning program of a wave by its signal: the
	// first route matching the signal's source and event type names it;
	// none matching: SafeOPSDecision.
	Programs []ProgramRoute `yaml:"programs,omitempty" json:"programs,omitempty"`
	// Reality sets when the kernel is green; when it is not, waves run in
	// diagnostic mode (see NewKernel).
	Reality RealityConfig `yaml:"reality,omitempty" json:"reality,omitempty"`
}

// ProgramRoute chooses the program for the signals it matches.
type ProgramRoute struct {
	// Source matches a signal's source name or kind; empty matches any.
	Source string `yaml:"source,omitempty" json:"source,omitempty"`
	// EventType matches the signal's event type as a glob; empty matches any.
	EventType string `yaml:"event_type,omitempty" json:"event_type,omitempty"`
	// Program is the program the matching signals' waves run.
	Program ora.ProgramID `yaml:"program" json:"program"`
}

// ProgramFor returns the program a wave about sig runs: the first matching
// route's, or SafeOPSDecision.
func (c Config) ProgramFor(sig ora.NormalizedSignal) ora.ProgramID {
	for _, r := range c.Programs {
		if (PolicyRule{Source: r.Source, EventType: r.EventType}).matches(sig, r.Program) {
			return r.Program
		}
	}
	return ora.ProgramSafeOPSDecision
}

// Default model ids: Claude Sonnet 4.5 through the US cross-region inference
// profile, with Claude Haiku 4.5 as the fallback.
const (
	DefaultModel         = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	DefaultFallbackModel = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
)

// Global cross-region inference profiles of the default models.
const (
	GlobalSonnet45 = "global.anthropic.claude-sonnet-4-5-20250929-v1:0"
	GlobalHaiku45  = "global.anthropic.claude-haiku-4-5-20251001-v1:0"
)

// DefaultPrices are Bedrock's on-demand prices (USD per 1M tokens) per
// inference profile, from shared/cost's price table (prices.json, which
// names its source and the date it was read): Claude Sonnet 4.5 and Haiku
// 4.5 through their global profiles, and their us. profiles at 10% more;
// cache reads 0.1x input, 5-minute cache writes 1.25x input. Check them
// against the Bedrock pricing page before relying on the spend cap.
func DefaultPrices() map[string]Price {
	out := map[string]Price{}
	t, err := cost.Table()
	if err != nil {
		return out // Validate then names the model without a price
	}
	for id, m := range t.Models {
		out[id] = Price{Input: m.Input, Output: m.Output, CacheRead: m.CacheRead, CacheWrite: m.CacheWrite}
	}
	return out
}

// DefaultConfig returns the default settings.
func DefaultConfig() Config {
	temp := 0.2
	return Config{
		Model:            DefaultModel,
		FallbackModels:   []string{DefaultFallbackModel},
		Inference:        bedrock.Inference{MaxTokens: 4096, Temperature: &temp},
		MaxStages:        4,
		WaveTokenBudget:  200000,
		DailySpendCapUSD: 50,
		Prices:           DefaultPrices(),
		PatternTTL:       Duration(24 * time.Hour),
		Layers:           append([]string(nil), DefaultLayers...),
		PromptsVersion:   PromptsVersion,
		// Batching is off until a window is set (1s is the usual one):
		// it holds every batchable signal for the window.
		Batch: BatchConfig{MaxSize: DefaultBatchConfig().MaxSize},
	}
}

// patternSimilarity is PatternSimilarity, or its default.
func (c Config) patternSimilarity() float64 {
	if c.PatternSimilarity == 0 {
		return DefaultPatternSimilarity
	}
	return c.PatternSimilarity
}

// layers is the layer catalogue: Layers, or DefaultLayers.
func (c Config) layers() []string {
	if len(c.Layers) == 0 {
		return DefaultLayers
	}
	return c.Layers
}

// Models returns the primary model followed by the fallbacks.
func (c Config) Models() []string { return append([]string{c.Model}, c.FallbackModels...) }

// MotorVersion names what produced a decision: the rules, prompts and model
// versions. A pattern cached under another motor version is not used.
func (c Config) MotorVersion() string {
	return fmt.Sprintf("rules=%s;prompts=%s;model=%s", c.RulesVersion, c.PromptsVersion, c.Model)
}

// WithProfile returns the configuration with a motor version's model profile
// laid over it: the profile is a JSON object with any of Config's JSON fields
// (model, fallback_models, inference, prompts_version, ...); the fields it
// names replace these ones. rulesVersion becomes RulesVersion, so the motor
// version keys the pattern cache. Errors: EINVALID (not a profile, or the
// result fails Validate).
func (c Config) WithProfile(profile json.RawMessage, rulesVersion string) (Config, error) {
	out := c
	out.FallbackModels = append([]string(nil), c.FallbackModels...)
	out.Prices = make(map[string]Price, len(c.Prices))
	for k, v := range c.Prices {
		out.Prices[k] = v
	}
	if len(profile) > 0 && string(profile) != "null" {
		if err := json.Unmarshal(profile, &out); err != nil {
			return Config{}, ora.Invalid("model", "not a model profile: %v", err)
		}
	}
	out.RulesVersion = rulesVersion
	if err := out.Validate(); err != nil {
		return Config{}, fmt.Errorf("model profile: %w", err)
	}
	return out, nil
}

// Cost returns what usage on model costs, in USD (0 for a model without a price;
// Validate rejects such a configuration).
func (c Config) Cost(model string, u ora.Usage) float64 { return c.Prices[model].Cost(u) }

// BudgetTokens is what a call's usage on model weighs against the wave's
// token budget: input and output tokens in full, cache writes and reads at
// their price relative to input (1.25 and 0.1 on the default prices; those
// ratios when the model has no input price), so a stage that reads the
// wave's prefix from the cache counts a tenth of it.
func (c Config) BudgetTokens(model string, u ora.Usage) int {
	p := c.Prices[model]
	read, write := 0.1, 1.25
	if p.Input > 0 {
		read, write = p.CacheRead/p.Input, p.CacheWrite/p.Input
	}
	return u.InputTokens + u.OutputTokens + int(math.Ceil(float64(u.CacheReadTokens)*read+float64(u.CacheWriteTokens)*write))
}

// nextStageTokens estimates what the next stage weighs: the last stage's
// call again, its cache writes now read, plus its answer in the summary.
func (c Config) nextStageTokens(model string, last ora.Usage) int {
	return c.BudgetTokens(model, ora.Usage{InputTokens: last.InputTokens + last.OutputTokens, OutputTokens: last.OutputTokens,
		CacheReadTokens: last.CacheReadTokens + last.CacheWriteTokens})
}

// Validate checks the configuration; the error names the first bad field.
func (c Config) Validate() error {
	if c.Model == "" {
		return ora.Invalid("reason.model", "required")
	}
	for _, m := range c.Models() {
		p, ok := c.Prices[m]
		if !ok {
			return ora.Invalid("reason.prices", "no price for model %q", m)
		}
		if p.Input < 0 || p.Output < 0 || p.CacheRead < 0 || p.CacheWrite < 0 {
			return ora.Invalid("reason.prices", "negative price for model %q", m)
		}
	}
	if c.Inference.MaxTokens <= 0 {
		return ora.Invalid("reason.inference.max_tokens", "%d must be positive", c.Inference.MaxTokens)
	}
	if t := c.Inference.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 1) {
		return ora.Invalid("reason.inference.temperature", "%v is outside 0..1", *t)
	}
	if p := c.Inference.TopP; p != nil && (math.IsNaN(*p) || *p < 0 || *p > 1) {
		return ora.Invalid("reason.inference.top_p", "%v is outside 0..1", *p)
	}
	if c.MaxStages < 1 || c.MaxStages > 4 {
		return ora.Invalid("reason.max_stages", "%d is outside 1..4", c.MaxStages)
	}
	if c.WaveTokenBudget <= 0 {
		return ora.Invalid("reason.wave_token_budget", "%d must be positive", c.WaveTokenBudget)
	}
	if c.DailySpendCapUSD < 0 || math.IsNaN(c.DailySpendCapUSD) {
		return ora.Invalid("reason.daily_spend_cap_usd", "%v must be 0 (no cap) or positive", c.DailySpendCapUSD)
	}
	if p := c.PatternSimilarity; math.IsNaN(p) || p < 0 || p > 1 {
		return ora.Invalid("reason.pattern_similarity", "%v is outside 0..1", p)
	}
	if c.PatternTTL < 0 {
		return ora.Invalid("reason.pattern_ttl", "must not be negative")
	}
	if c.PromptsVersion == "" {
		return ora.Invalid("reason.prompts_version", "required")
	}
	seen := map[string]bool{}
	for i, l := range c.Layers {
		u := strings.ToUpper(strings.TrimSpace(l))
		if u == "" || seen[u] {
			return ora.Invalid(fmt.Sprintf("reason.layers[%d]", i), "%q is empty or named twice", l)
		}
		seen[u] = true
	}
	if c.PacketViewTokens < 0 {
		return ora.Invalid("reason.packet_view_tokens", "%d must not be negative", c.PacketViewTokens)
	}
	if c.Batch.Window < 0 || c.Batch.MaxSize < 0 {
		return ora.Invalid("reason.batch", "window %v and max_size %d must not be negative", time.Duration(c.Batch.Window), c.Batch.MaxSize)
	}
	if err := c.Guardrail.Validate(); err != nil {
		return fmt.Errorf("reason: %w", err)
	}
	for i, r := range c.Programs {
		field := fmt.Sprintf("reason.programs[%d]", i)
		if _, ok := programs[r.Program]; !ok {
			return ora.Invalid(field+".program", "%q is not one of %v", r.Program, ora.Programs)
		}
		if r.EventType != "" {
			if _, err := path.Match(r.EventType, ""); err != nil {
				return ora.Invalid(field+".event_type", "%q is not a glob: %v", r.EventType, err)
			}
		}
	}
	if err := c.Reality.Validate(); err != nil {
		return err
	}
	return c.Policy.Validate()
}
