package reason

import (
	"encoding/json"
	"fmt"
	"strconv"
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

// MaxFollowUps bounds a model decision's follow-up actions (then): the
// full schema says so (maxItems, checked when the payload is decoded; the
// strict subset Bedrock compiles has no maxItems).
const MaxFollowUps = 7

// SafeOPSSchema returns the SafeOPSDecision payload schema for an action
// catalogue: the safety check first, the verdict next, the action, then the
// follow-up actions (then: each an action with the numbers of the earlier
// actions it depends on; empty when there are none). An action is a typed
// union (anyOf) with one branch per action type, each with its own
// parameters, defined once under the root's $defs and referenced from both
// places. It is written as raw JSON so that the key order reaches the
// model: a model fills a tool's input in the schema's order, so it reasons
// before it commits. The none action is always a branch.
func SafeOPSSchema(catalogue []act.Description) string {
	return `{"type":"object","additionalProperties":false,"required":["safety_check_summary","allowed_action","action","then"],"properties":{
"safety_check_summary":{"type":"string","minLength":1,"description":"what could go wrong, checked against the policy and each action's bounds, before choosing"},
"allowed_action":{"type":"string","enum":["PROCEED","WARN","ABORT"],"description":"PROCEED when it is safe, WARN when a human should review it, ABORT when it must not run (nothing runs)"},
"action":{"$ref":"#/$defs/action"},
"then":{"type":"array","maxItems":` + strconv.Itoa(MaxFollowUps) + `,"description":"further actions when the response needs more than one (empty when it does not; never after none). The actions are numbered: 0 is action, 1 the first of then, 2 the second, ...","items":{"type":"object","additionalProperties":false,"required":["action","depends_on"],"properties":{
"action":{"$ref":"#/$defs/action"},
"depends_on":{"type":"array","items":{"type":"integer"},"description":"the numbers of earlier actions that must succeed before this one runs (empty: it may run at once, alongside the others)"}}}}}` + defsKey + `{
"action":{"description":"one action: none when the signal needs no response","anyOf":[` + actionUnion(catalogue) + `]}}}`
}

// defsKey introduces a decision schema's $defs: the last member of its
// root object.
const defsKey = `,"$defs":`

// splitDefs returns a decision schema without its root $defs, and the
// $defs object ("" when it has none): a schema nested in another keeps its
// references only when its $defs move to the outer root (withDefs).
func splitDefs(schema string) (body, defs string) {
	i := strings.LastIndex(schema, defsKey)
	if i < 0 {
		return schema, ""
	}
	return schema[:i] + "}", strings.TrimSuffix(schema[i+len(defsKey):], "}")
}

// withDefs returns an object schema with defs ("" for none) as its root
// $defs.
func withDefs(schema, defs string) string {
	if defs == "" {
		return schema
	}
	return strings.TrimSuffix(schema, "}") + defsKey + defs + "}"
}

// actionUnion returns the branches of the action union, one per type of
// the catalogue (none among them), comma-separated.
func actionUnion(catalogue []act.Description) string {
	var b strings.Builder
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
