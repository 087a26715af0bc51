package reason

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ora-runtime/ora/shared/ora"
)

// Observation is one observer-chain stage's answer (seed 004).
type Observation struct {
	Stage int `json:"stage"`
	// Layers are the aspects of the situation the observation draws on
	// (seed 004's cognitive layers); how many there are measures complexity.
	Layers     []string `json:"layers"`
	Content    string   `json:"content"`
	Confidence float64  `json:"confidence"`
	// ToolCalls are the tools the model asked for (checked against the
	// envelope's tools_allowed).
	ToolCalls []ToolRequest `json:"tool_calls,omitempty"`
	// Decision is the program's payload as the model proposed it (typed by
	// the program); nil when the model answered in the text format without a
	// DECISION section.
	Decision json.RawMessage `json:"decision,omitempty"`
	// Model is the model that answered, Usage what the call used and CostUSD
	// what it cost.
	Model   string    `json:"model,omitempty"`
	Usage   ora.Usage `json:"usage"`
	CostUSD float64   `json:"cost_usd"`
}

// ToolRequest is a tool the model asked to call.
type ToolRequest struct {
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input,omitempty"`
}

// observationInput is the record_observation tool's input.
type observationInput struct {
	Confidence *float64        `json:"confidence"`
	Layers     []string        `json:"layers"`
	Content    string          `json:"content"`
	ToolCalls  []ToolRequest   `json:"tool_calls"`
	Decision   json.RawMessage `json:"decision"`
}

// validateObservation checks the record_observation tool's input against
// its JSON Schema (the program's payload schema nested under decision).
func validateObservation(program ora.ProgramID, raw json.RawMessage) error {
	return validateObservationSchema(string(observationSchema(program)), raw)
}

// validateObservationSchema checks a record_observation input against the
// observation schema src.
func validateObservationSchema(src string, raw json.RawMessage) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	if err := validateJSON(src, raw); err != nil {
		return fmt.Errorf("%s input %v", ObservationTool, err)
	}
	return nil
}

// parseToolInput decodes the record_observation tool's input. A model that
// wraps its JSON in a string is tolerated; the JSON inside must still be valid.
func parseToolInput(raw json.RawMessage) (Observation, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if !json.Valid([]byte(s)) {
			return Observation{}, fmt.Errorf("tool input is a string that is not valid JSON")
		}
		raw = json.RawMessage(s)
	}
	var in observationInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return Observation{}, fmt.Errorf("tool input is not a valid observation: %v", err)
	}
	if in.Confidence == nil {
		return Observation{}, fmt.Errorf("tool input has no confidence")
	}
	o := Observation{Confidence: *in.Confidence, Layers: normalizeLayers(in.Layers), Content: in.Content, ToolCalls: in.ToolCalls}
	if len(in.Decision) > 0 && string(in.Decision) != "null" {
		o.Decision = in.Decision
	}
	return o, o.check()
}

// ParseText parses seed 004's text format:
//
//	CONFIDENCE: 0.85
//	LAYERS: C01,C02,C07
//	CONTENT:
//	the analysis ...
//	DECISION:
//	{"optional": "program payload as JSON"}
//
// DECISION is ora's optional addition; everything between CONTENT: and
// DECISION: (or the end) is the content.
func ParseText(text string) (Observation, error) {
	var o Observation
	var conf, layers, content bool
	var body, decision []string
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		trim := strings.TrimSpace(line)
		upper := strings.ToUpper(trim)
		switch {
		case section == "" && strings.HasPrefix(upper, "CONFIDENCE:"):
			v, err := strconv.ParseFloat(strings.TrimSpace(trim[len("CONFIDENCE:"):]), 64)
			if err != nil {
				return o, fmt.Errorf("CONFIDENCE: %q is not a number", strings.TrimSpace(trim[len("CONFIDENCE:"):]))
			}
			o.Confidence, conf = v, true
		case section == "" && strings.HasPrefix(upper, "LAYERS:"):
			o.Layers, layers = normalizeLayers(strings.Split(trim[len("LAYERS:"):], ",")), true
		case section != "decision" && strings.HasPrefix(upper, "CONTENT:"):
			section, content = "content", true
			if rest := strings.TrimSpace(trim[len("CONTENT:"):]); rest != "" {
				body = append(body, rest)
			}
		case section == "content" && strings.HasPrefix(upper, "DECISION:"):
			section = "decision"
			if rest := strings.TrimSpace(trim[len("DECISION:"):]); rest != "" {
				decision = append(decision, rest)
			}
		case section == "content":
			body = append(body, line)
		case section == "decision":
			decision = append(decision, line)
		}
	}
	if !conf || !layers || !content {
		return o, fmt.Errorf("no tool call and no CONFIDENCE/LAYERS/CONTENT text answer")
	}
	o.Content = strings.TrimSpace(strings.Join(body, "\n"))
	if d := strings.TrimSpace(strings.Join(decision, "\n")); d != "" {
		if !json.Valid([]byte(d)) {
			return o, fmt.Errorf("DECISION is not valid JSON")
		}
		o.Decision = json.RawMessage(d)
	}
	return o, o.check()
}

func (o Observation) check() error {
	if math.IsNaN(o.Confidence) || o.Confidence < 0 || o.Confidence > 1 {
		return fmt.Errorf("confidence %v is outside 0..1", o.Confidence)
	}
	return nil
}

// normalizeLayers trims, upper-cases, de-duplicates and sorts layer ids.
func normalizeLayers(in []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, l := range in {
		l = strings.ToUpper(strings.TrimSpace(l))
		if l != "" && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// summary formats earlier stages for the next one (seed 004's build_summary).
func summary(obs []Observation) string {
	if len(obs) == 0 {
		return "No earlier stages."
	}
	var b strings.Builder
	b.WriteString("Earlier stages:\n")
	for _, o := range obs {
		what := "CONTENT"
		if o.Stage > 1 {
			what = "CRITIQUE"
		}
		fmt.Fprintf(&b, "\n--- Stage %d (%s) ---\nCONFIDENCE: %.2f\nLAYERS: %s\n%s:\n%s\n", o.Stage, stageNames[o.Stage-1], o.Confidence, strings.Join(o.Layers, ","), what, o.Content)
		if len(o.Decision) > 0 {
			fmt.Fprintf(&b, "PROPOSED DECISION: %s\n", o.Decision)
		}
	}
	return b.String()
}
