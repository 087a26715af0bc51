package bedrocktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ora-runtime/ora/shared/bedrock"
)

// toolName is the pattern Bedrock's toolSpec.name must match.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Bedrock's per-request limits the fake enforces.
const (
	// MaxCachePoints is the most cache checkpoints one request may carry.
	MaxCachePoints = 4
	// DefaultContextTokens is the context window assumed for a model
	// bedrock.Models does not know.
	DefaultContextTokens = 200000
)

// thinking is additionalModelRequestFields.thinking (Anthropic's extended
// thinking through Converse).
type thinking struct {
	Thinking *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
}

// Check returns why Bedrock would refuse req with a 400 ValidationException,
// or "" when it would accept it. It applies what AWS and Anthropic document:
// message roles alternate from a user message to a user message; every
// toolUse is answered by a toolResult in the next message and every
// toolResult answers a toolUse of the message before; tool names are valid
// and unique; strict tool specs go only to models that support them and
// their schemas stay in the strict subset (bedrock.CheckStrict) within the
// request's limits; toolChoice names an offered tool and is auto when
// extended thinking is on; a model taking one of temperature and top_p gets
// one; maxTokens fits the model's output cap; the input (4 characters a
// token) plus maxTokens fits its context window; at most four cache points.
func Check(req Request) string {
	info, known := bedrock.Info(req.ModelID)
	if len(req.Messages) == 0 {
		return "messages: at least one message is required"
	}
	for i, m := range req.Messages {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if m.Role != want {
			return fmt.Sprintf("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again. (messages[%d] is %q)", i, m.Role)
		}
		if len(m.Content) == 0 {
			return fmt.Sprintf("messages[%d].content: at least one content block is required", i)
		}
	}
	if last := req.Messages[len(req.Messages)-1]; last.Role != "user" {
		return "The conversation must end with a user message."
	}
	if msg := checkToolResults(req.Messages); msg != "" {
		return msg
	}
	var think thinking
	if len(req.AdditionalModelRequestFields) > 0 {
		if err := json.Unmarshal(req.AdditionalModelRequestFields, &think); err != nil {
			return "additionalModelRequestFields: " + err.Error()
		}
	}
	thinkingOn := think.Thinking != nil && think.Thinking.Type == "enabled"
	if msg := checkTools(req, info, thinkingOn); msg != "" {
		return msg
	}
	ic := req.InferenceConfig
	if ic != nil {
		if info.OneSampling && ic.Temperature != nil && ic.TopP != nil {
			return fmt.Sprintf("The model returned the following errors: temperature and top_p cannot both be specified for this model (%s). Please use only one.", req.ModelID)
		}
		if ic.MaxTokens != nil && (*ic.MaxTokens < 1 || (info.MaxOutputTokens > 0 && *ic.MaxTokens > info.MaxOutputTokens)) {
			return fmt.Sprintf("The maximum tokens you requested exceeds the model limit of %d (maxTokens %d)", info.MaxOutputTokens, *ic.MaxTokens)
		}
	}
	if thinkingOn {
		if think.Thinking.BudgetTokens < 1024 || req.MaxTokens() <= think.Thinking.BudgetTokens {
			return "thinking.budget_tokens: must be at least 1024 and less than max_tokens"
		}
		if ic != nil && ic.Temperature != nil && *ic.Temperature != 1 {
			return "temperature may only be set to 1 when thinking is enabled"
		}
	}
	sys, msgs := req.CachePoints()
	if sys+msgs > MaxCachePoints {
		return fmt.Sprintf("A maximum of %d blocks with cache_control may be provided. Found %d.", MaxCachePoints, sys+msgs)
	}
	if known && info.CacheMinTokens == 0 && sys+msgs > 0 {
		return "This model doesn't support prompt caching (cachePoint)."
	}
	window := info.ContextTokens
	if window == 0 {
		window = DefaultContextTokens
	}
	if in := InputTokens(req); in+req.MaxTokens() > window {
		return fmt.Sprintf("Input is too long for requested model. (~%d input tokens + maxTokens %d > context window %d)", in, req.MaxTokens(), window)
	}
	return ""
}

// InputTokens estimates the request's input tokens as the fake counts them:
// every text, tool spec, tool use and tool result, 4 characters a token.
func InputTokens(req Request) int {
	n := 0
	if req.ToolConfig != nil {
		b, _ := json.Marshal(req.ToolConfig.Tools)
		n += len(b)
	}
	count := func(blocks []Block) {
		for _, b := range blocks {
			switch {
			case b.Text != nil:
				n += len(*b.Text)
			case b.ToolUse != nil || b.ToolResult != nil:
				j, _ := json.Marshal(b)
				n += len(j)
			}
		}
	}
	count(req.System)
	for _, m := range req.Messages {
		count(m.Content)
	}
	return tokens(n)
}

func checkTools(req Request, info bedrock.ModelInfo, thinkingOn bool) string {
	tc := req.ToolConfig
	if tc == nil {
		return ""
	}
	if len(tc.Tools) == 0 {
		return "toolConfig.tools: at least one tool is required"
	}
	names := map[string]bool{}
	strict := 0
	var stats bedrock.StrictStats
	for i, t := range tc.Tools {
		s := t.ToolSpec
		if s == nil {
			return fmt.Sprintf("toolConfig.tools[%d]: toolSpec is required", i)
		}
		if !toolName.MatchString(s.Name) {
			return fmt.Sprintf("toolConfig.tools[%d].toolSpec.name %q must match [a-zA-Z0-9_-]{1,64}", i, s.Name)
		}
		if names[s.Name] {
			return fmt.Sprintf("toolConfig.tools: the tool name %q is used twice", s.Name)
		}
		names[s.Name] = true
		var root map[string]any
		if err := json.Unmarshal(s.InputSchema.JSON, &root); err != nil || root["type"] != "object" {
			return fmt.Sprintf("toolConfig.tools[%d].toolSpec.inputSchema.json: the input schema must be a JSON object of type object", i)
		}
		if s.Strict == nil || !*s.Strict {
			continue
		}
		if !info.StrictTools {
			return fmt.Sprintf("This model doesn't support strict tool use (toolSpec %s has strict: true). (model %s)", s.Name, req.ModelID)
		}
		strict++
		st, err := bedrock.CheckStrict(s.InputSchema.JSON)
		if err != nil {
			return fmt.Sprintf("toolConfig.tools[%d].toolSpec.inputSchema: the JSON schema is not supported for structured outputs: %v", i, err)
		}
		stats.Optional += st.Optional
		stats.Unions += st.Unions
	}
	switch {
	case strict > bedrock.MaxStrictTools:
		return fmt.Sprintf("toolConfig.tools: at most %d strict tools per request, got %d", bedrock.MaxStrictTools, strict)
	case stats.Optional > bedrock.MaxOptionalParams:
		return fmt.Sprintf("toolConfig.tools: the strict schemas have %d optional parameters; at most %d are supported", stats.Optional, bedrock.MaxOptionalParams)
	case stats.Unions > bedrock.MaxUnionTypeParams:
		return fmt.Sprintf("toolConfig.tools: the strict schemas have %d parameters with union types; at most %d are supported", stats.Unions, bedrock.MaxUnionTypeParams)
	}
	if ch := tc.ToolChoice; ch != nil {
		if ch.Tool != nil && !names[ch.Tool.Name] {
			return fmt.Sprintf("toolConfig.toolChoice.tool.name %q is not among the tools", ch.Tool.Name)
		}
		if thinkingOn && (ch.Tool != nil || ch.Any != nil) {
			return "Thinking may not be enabled when tool_choice forces tool use. Use toolChoice auto with extended thinking."
		}
	}
	return ""
}

// checkToolResults returns why the messages are invalid, as Bedrock would
// say it, or "": every toolResult must answer a toolUse of the assistant
// message just before, and every toolUse must be answered in the next one.
func checkToolResults(msgs []Message) string {
	for i, m := range msgs {
		answered := map[string]bool{}
		for _, b := range m.Content {
			if b.ToolResult == nil {
				continue
			}
			if m.Role != "user" || i == 0 || msgs[i-1].Role != "assistant" {
				return "toolResult blocks must follow an assistant message with toolUse blocks"
			}
			found := false
			for _, p := range msgs[i-1].Content {
				found = found || (p.ToolUse != nil && p.ToolUse.ToolUseID == b.ToolResult.ToolUseID)
			}
			if !found {
				return fmt.Sprintf("toolResult %s has no matching toolUse in the previous turn", b.ToolResult.ToolUseID)
			}
			answered[b.ToolResult.ToolUseID] = true
		}
		if i == 0 {
			continue
		}
		for _, p := range msgs[i-1].Content {
			if p.ToolUse != nil && !answered[p.ToolUse.ToolUseID] {
				return fmt.Sprintf("Expected toolResult blocks at messages.%d.content for the following Ids: %s", i, p.ToolUse.ToolUseID)
			}
		}
	}
	return ""
}

// compiled caches compiled tool schemas by their text.
var compiled sync.Map

// CheckAnswer returns why a tool call could not come from a model answering
// req, or "": with strict tools (Bedrock then validates tool names and
// inputs) the tool is one req offers, the forced one when toolChoice names
// it, and a strict tool's input satisfies its schema (Bedrock constrains
// the model's sampling to it). Without strict tools a model may answer
// anything, which the code under test must survive.
func CheckAnswer(req Request, tu ToolUse) string {
	if req.ToolConfig == nil {
		return fmt.Sprintf("the reply calls tool %s but the request offers no tools", tu.Name)
	}
	strict := false
	for _, t := range req.ToolConfig.Tools {
		strict = strict || (t.ToolSpec != nil && t.ToolSpec.Strict != nil && *t.ToolSpec.Strict)
	}
	if !strict {
		return ""
	}
	if f := req.ForcedTool(); f != "" && f != tu.Name {
		return fmt.Sprintf("the reply calls tool %s but toolChoice forces %s", tu.Name, f)
	}
	spec := req.Tool(tu.Name)
	if spec == nil {
		return fmt.Sprintf("the reply calls tool %s, which the request does not offer", tu.Name)
	}
	if spec.Strict == nil || !*spec.Strict {
		return ""
	}
	src := string(spec.InputSchema.JSON)
	s, ok := compiled.Load(src)
	if !ok {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
		if err != nil {
			return "the tool's schema is not JSON: " + err.Error()
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		if err := c.AddResource("bedrocktest:tool.json", doc); err != nil {
			return err.Error()
		}
		cs, err := c.Compile("bedrocktest:tool.json")
		if err != nil {
			return "the tool's schema does not compile: " + err.Error()
		}
		compiled.Store(src, cs)
		s = cs
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(tu.Input))
	if err != nil {
		return fmt.Sprintf("the input of strict tool %s is not JSON: %v", tu.Name, err)
	}
	if err := s.(*jsonschema.Schema).Validate(v); err != nil {
		return fmt.Sprintf("the input of strict tool %s breaks the request's schema: %v", tu.Name, err)
	}
	return ""
}
