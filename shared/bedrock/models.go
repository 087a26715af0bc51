package bedrock

import "strings"

// ModelInfo is what ora knows of a Bedrock model's features.
type ModelInfo struct {
	// CacheMinTokens is the minimum number of tokens per cache checkpoint
	// (prompt caching); 0 means the model has no explicit prompt caching.
	CacheMinTokens int
	// StrictTools: the model accepts strict tool specifications (structured
	// outputs).
	StrictTools bool
}

// Models maps base model ids (without an inference profile's geography
// prefix) to their features. Cache minimums are from AWS's prompt caching
// page ("Supported models, regions, and limits",
// https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html,
// checked 2026-11-23): a checkpoint placed before the minimum is ignored, so
// ora leaves it out.
var Models = map[string]ModelInfo{
	"anthropic.claude-sonnet-4-5-20250929-v1:0": {CacheMinTokens: 1024, StrictTools: true},
	"anthropic.claude-haiku-4-5-20251001-v1:0":  {CacheMinTokens: 4096, StrictTools: true},
	"anthropic.claude-opus-4-5-20251101-v1:0":   {CacheMinTokens: 4096, StrictTools: true},
	"anthropic.claude-opus-4-1-20250805-v1:0":   {CacheMinTokens: 1024, StrictTools: true},
	"anthropic.claude-sonnet-4-20250514-v1:0":   {CacheMinTokens: 1024},
	"anthropic.claude-opus-4-20250514-v1:0":     {CacheMinTokens: 1024},
	"anthropic.claude-3-7-sonnet-20250219-v1:0": {CacheMinTokens: 1024},
	"anthropic.claude-3-5-haiku-20241022-v1:0":  {CacheMinTokens: 2048},
	"amazon.nova-micro-v1:0":                    {CacheMinTokens: 1000},
	"amazon.nova-lite-v1:0":                     {CacheMinTokens: 1000},
	"amazon.nova-pro-v1:0":                      {CacheMinTokens: 1000},
	"amazon.nova-premier-v1:0":                  {CacheMinTokens: 1000},
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
