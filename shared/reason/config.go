package reason

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock"
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
	// Batch groups signals of one source arriving within a window into one
	// model call (`ora dev`; see BatchConfig).
	Batch BatchConfig `yaml:"batch" json:"batch"`
	// Purpose is the agent's purpose in the operator's words, shown to the
	// model in the system prompt.
	Purpose string `yaml:"purpose,omitempty" json:"purpose,omitempty"`
	// Policy is the operator's policy: the instructions shown to the model
	// and the table that decides what a model decision may do.
	Policy Policy `yaml:"policy,omitempty" json:"policy,omitempty"`
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
// inference profile, checked 2026-11-23. Source: AWS's "Global cross-Region
// inference" page (docs.aws.amazon.com/bedrock/latest/userguide/
// global-cross-region-inference.html) says global profiles of Claude 4.5
// models cost about 10% less than geographic ones (us., eu., ...); the
// global prices are Anthropic's list prices on Bedrock (Sonnet 4.5 3/15,
// Haiku 4.5 1/5; cache reads 0.1x input, 5-minute cache writes 1.25x input).
// So a us. profile costs 1.1x its global profile. Check them against the
// Bedrock pricing page before relying on the spend cap.
func DefaultPrices() map[string]Price {
	sonnet := Price{Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75}
	haiku := Price{Input: 1, Output: 5, CacheRead: 0.10, CacheWrite: 1.25}
	geo := func(p Price) Price {
		return Price{Input: p.Input * 1.1, Output: p.Output * 1.1, CacheRead: p.CacheRead * 1.1, CacheWrite: p.CacheWrite * 1.1}
	}
	return map[string]Price{
		GlobalSonnet45:       sonnet,
		GlobalHaiku45:        haiku,
		DefaultModel:         geo(sonnet),
		DefaultFallbackModel: geo(haiku),
	}
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
		PromptsVersion:   PromptsVersion,
		Batch:            DefaultBatchConfig(),
	}
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
	if c.PatternTTL < 0 {
		return ora.Invalid("reason.pattern_ttl", "must not be negative")
	}
	if c.PromptsVersion == "" {
		return ora.Invalid("reason.prompts_version", "required")
	}
	if c.Batch.Window < 0 || c.Batch.MaxSize < 0 {
		return ora.Invalid("reason.batch", "window %v and max_size %d must not be negative", time.Duration(c.Batch.Window), c.Batch.MaxSize)
	}
	if err := c.Guardrail.Validate(); err != nil {
		return fmt.Errorf("reason: %w", err)
	}
	return c.Policy.Validate()
}
