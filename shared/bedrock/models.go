package bedrock

import "strings"

// ModelInfo is what ora knows of a Bedrock model's features and limits.
type ModelInfo struct {
	// CacheMinTokens is the minimum number of tokens per cache checkpoint
	// (prompt caching); 0 means the model has no explicit prompt caching.
	CacheMinTokens int
	// StrictTools: the model accepts strict tool specifications (structured
	// outputs).
	StrictTools bool
	// ContextTokens is the context window: the input and maxTokens together
	// must fit in it. 0: unknown (ora does not check).
	ContextTokens int
	// MaxOutputTokens bounds maxTokens. 0: unknown.
	MaxOutputTokens int
	// OneSampling: the model accepts temperature or topP, not both
	// (Anthropic's Claude 4.5 generation and Opus 4.1); Converse sends
	// temperature alone when both are set.
	OneSampling bool
}

// Models maps base model ids (without an inference profile's geography
// prefix) to their features. Sources, checked 2026-11-26:
//   - cache minimums: AWS's prompt caching page ("Supported models, regions,
//     and limits", docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html);
//     a checkpoint placed before the minimum is ignored, so ora leaves it out;
//   - strict tools: AWS's structured outputs page
//     (docs.aws.amazon.com/bedrock/latest/userguide/structured-output.html)
//     lists Claude Haiku 4.5, Sonnet 4.5, Opus 4.5 and Opus 4.6 among
//     Anthropic's models, not Opus 4.1 or earlier;
//   - context windows and output caps: the model cards (200K tokens for the
//     Claude models through Converse; Nova Micro 128K, Lite and Pro 300K,
//     Premier 1M);
//   - temperature or top_p: Anthropic's model pages (Claude Sonnet 4.5, Haiku
//     4.5, Opus 4.1 and later take one of the two).
var Models = map[string]ModelInfo{
	"anthropic.claude-sonnet-4-5-20250929-v1:0": {CacheMinTokens: 1024, StrictTools: true, ContextTokens: 200000, MaxOutputTokens: 64000, OneSampling: true},
	"anthropic.claude-haiku-4-5-20251001-v1:0":  {CacheMinTokens: 4096, StrictTools: true, ContextTokens: 200000, MaxOutputTokens: 64000, OneSampling: true},
	"anthropic.claude-opus-4-5-20251101-v1:0":   {CacheMinTokens: 4096, StrictTools: true, ContextTokens: 200000, MaxOutputTokens: 64000, OneSampling: true},
	"anthropic.claude-opus-4-6-v1":              {CacheMinTokens: 4096, StrictTools: true, ContextTokens: 200000, MaxOutputTokens: 128000, OneSampling: true},
	"anthropic.claude-opus-4-1-20250805-v1:0":   {CacheMinTokens: 1024, ContextTokens: 200000, MaxOutputTokens: 32000, OneSampling: true},
	"anthropic.claude-sonnet-4-20250514-v1:0":   {CacheMinTokens: 1024, ContextTokens: 200000, MaxOutputTokens: 64000},
	"anthropic.claude-opus-4-20250514-v1:0":     {CacheMinTokens: 1024, ContextTokens: 200000, MaxOutputTokens: 32000},
	"anthropic.claude-3-7-sonnet-20250219-v1:0": {CacheMinTokens: 1024, ContextTokens: 200000, MaxOutputTokens: 64000},
	"anthropic.claude-3-5-haiku-20241022-v1:0":  {CacheMinTokens: 2048, ContextTokens: 200000, MaxOutputTokens: 8192},
	"amazon.nova-micro-v1:0":                    {CacheMinTokens: 1000, ContextTokens: 128000, MaxOutputTokens: 10000},
	"amazon.nova-lite-v1:0":                     {CacheMinTokens: 1000, ContextTokens: 300000, MaxOutputTokens: 10000},
	"amazon.nova-pro-v1:0":                      {CacheMinTokens: 1000, ContextTokens: 300000, MaxOutputTokens: 10000},
	"amazon.nova-premier-v1:0":                  {CacheMinTokens: 1000, ContextTokens: 1000000, MaxOutputTokens: 32000},
}

// profilePrefixes are the geography prefixes of cross-region inference
// profile ids ("us.anthropic...", "global.anthropic...").
var profilePrefixes = []string{"global.", "us-gov.", "us.", "eu.", "apac.", "jp.", "au.", "ca."}

// BaseModel returns the base model id of a model id, an inference profile
// id or an inference profile ARN: the id without its geography prefix.
func BaseModel(id string) string {
	if i := strings.LastIndex(id, "/"); i >= 0 && strings.HasPrefix(id, "arn:") {
		id = id[i+1:]
	}
	for _, p := range profilePrefixes {
		if strings.HasPrefix(id, p) {
			return strings.TrimPrefix(id, p)
		}
	}
	return id
}

// Info returns what ora knows of model (a model id, inference profile id or
// ARN); ok is false for a model not in Models, whose zero ModelInfo places no
// cache point and sends no strict tool spec.
func Info(model string) (ModelInfo, bool) {
	i, ok := Models[BaseModel(model)]
	return i, ok
}
