package reason

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ora-runtime/ora/shared/act"
)

// withNone returns the catalogue with the none action in it.
func withNone(cat []act.Description) []act.Description {
	for _, d := range cat {
		if d.Type == act.TypeNone {
			return cat
		}
	}
	out := append([]act.Description{}, cat...)
	for _, d := range act.StandardCatalogue(act.Config{}) {
		if d.Type == act.TypeNone {
			out = append(out, d)
		}
	}
	return out
}

// SafeOPSSchema returns the SafeOPSDecision payload schema for an action
// catalogue: the safety check first, the verdict next, the action last, a
// typed union (anyOf) with one branch per action type, each with its own
// parameters. It is written as raw JSON so that the key order reaches the
// model: a model fills a tool's input in the schema's order, so it reasons
// before it commits. The none action is always a branch.
func SafeOPSSchema(catalogue []act.Description) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","additionalProperties":false,"required":["safety_check_summary","allowed_action","action"],"properties":{
"safety_check_summary":{"type":"string","minLength":1,"description":"what could go wrong, checked against the policy and the action's bounds, before choosing"},
"allowed_action":{"type":"string","enum":["PROCEED","WARN","ABORT"],"description":"PROCEED when it is safe, WARN when a human should review it, ABORT when it must not run (nothing runs)"},
"action":{"description":"the one action to take: none when the signal needs no response","anyOf":[`)
	for i, d := range withNone(catalogue) {
		if i > 0 {
			b.WriteString(",")
		}
		typ, _ := json.Marshal(d.Type)
		desc, _ := json.Marshal(d.Summary)
		fmt.Fprintf(&b, `
{"type":"object","additionalProperties":false,"description":%s,"required":["type","parameters","tier","allowed_operations","forbidden_paths","author_type"],"properties":{
"type":{"type":"string","const":%s},
"parameters":%s,
"tier":{"type":"integer","enum":[1,2,3],"description":"1 technical check, 2 adds the safety review, 3 adds the intent review"},
"allowed_operations":{"type":"array","items":{"type":"string"},"minItems":1,"description":"the operations this action needs (its type)"},
"forbidden_paths":{"type":"array","items":{"type":"string"},"description":"paths the action must not touch (empty when none)"},
"author_type":{"type":"string","enum":["architect","auditor"]}}}`, desc, typ, d.Parameters)
	}
	b.WriteString(`]}}}`)
	return b.String()
}

// catalogueText renders the catalogue for the system prompt: each type,
// what it does, its bounds.
func catalogueText(catalogue []act.Description) string {
	var b strings.Builder
	for _, d := range withNone(catalogue) {
		effect := "no side effect"
		if d.SideEffect {
			effect = "side effect"
		}
		fmt.Fprintf(&b, "- %s (%s): %s\n", d.Type, effect, d.Summary)
		for _, x := range d.Bounds {
			fmt.Fprintf(&b, "    bound: %s\n", x)
		}
	}
	return b.String()
}
