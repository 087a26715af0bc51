package rules_test

import (
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/rules"
)

// A parameter the action cannot run without may not come out null: a rule
// whose required parameter is missing, or nothing but templates of fields a
// provider may leave out (Stripe sends many nulls), is refused when the file
// loads, naming the rule and the parameter and how to give a default.
func TestRequiredParametersAtLoad(t *testing.T) {
	file := func(action, params string) string {
		return "version: v1\nrules:\n  - name: stripe-paid\n    when: {field: source.event_type, equals: invoice.paid}\n" +
			"    then: {action: " + action + ", parameters: " + params + ", confidence: 0.9, tier: 1, author_type: auditor, reasoning: r}\n" +
			"default: {action: notify, parameters: {message: unmatched}, confidence: 0.1, tier: 3, author_type: architect, reasoning: r}\n"
	}
	tests := []struct {
		name, src string
		field     string // "" when it loads
		text      string
	}{
		{"one template of a payload field", file("notify", `{message: "{{ payload.data.object.description }}"}`),
			"rules[0](stripe-paid).then.parameters.message", `{{ payload.data.object.description | default: "..." }}`},
		{"only templates, all nullable", file("notify", `{message: "{{ payload.a }} {{ payload.b }}"}`),
			"rules[0](stripe-paid).then.parameters.message", "give it a default"},
		{"a JSONPath template", file("http.request", `{url: "{{ $.payload.data.object.hosted_invoice_url }}"}`),
			"rules[0](stripe-paid).then.parameters.url", "http.request cannot run without url"},
		{"missing", file("commitment.close", `{title: t}`),
			"rules[0](stripe-paid).then.parameters.id", "required"},
		{"empty", file("notify", `{message: " "}`),
			"rules[0](stripe-paid).then.parameters.message", "empty"},
		{"a default", file("notify", `{message: "{{ payload.data.object.description | default: 'no description' }}"}`), "", ""},
		{"text around the template", file("notify", `{message: "invoice paid: {{ payload.data.object.description }}"}`), "", ""},
		{"a field every signal has", file("commitment.close", `{id: "{{ id }}"}`), "", ""},
		{"an optional parameter may be null", file("notify", `{message: m, subject: "{{ payload.nope }}"}`), "", ""},
		{"commitment.open's id is optional", file("commitment.open", `{title: "t {{ id }}", id: "{{ payload.nope }}"}`), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rules.Parse([]byte(tt.src))
			if tt.field == "" {
				if err != nil {
					t.Fatalf("parse: %v, want it to load", err)
				}
				return
			}
			if ora.ErrorCode(err) != ora.EINVALID || ora.ErrorField(err) != tt.field || !strings.Contains(err.Error(), tt.text) {
				t.Errorf("parse: %v; want EINVALID on %s containing %q", err, tt.field, tt.text)
			}
		})
	}
}

// The required parameters come from Options.Required (default: the standard
// actions'); an action type it does not know is not checked.
func TestRequiredParametersOption(t *testing.T) {
	src := "version: v1\nrules: []\ndefault: {action: page, parameters: {to: \"{{ payload.oncall }}\"}, confidence: 0.1, tier: 3, author_type: architect, reasoning: r}\n"
	actions := func(o *rules.Options) { o.Actions = []string{"page"} }
	if _, err := rules.Parse([]byte(src), actions); err != nil {
		t.Errorf("unknown to the standard actions: %v, want it to load", err)
	}
	_, err := rules.Parse([]byte(src), actions, func(o *rules.Options) {
		o.Required = func(a string) []string { return map[string][]string{"page": {"to"}}[a] }
	})
	if ora.ErrorField(err) != "default.parameters.to" {
		t.Errorf("with page requiring to: %v, want EINVALID on default.parameters.to", err)
	}
}

func TestTemplateDefaults(t *testing.T) {
	tests := []struct{ name, template, err string }{
		{"not a value", `{{ payload.a | default: [1, 2] }}`, "must be a string, a number or true/false"},
		{"bad path", `{{ payload[ | default: x }}`, "is not a field path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: v1\nrules: []\ndefault: {action: notify, parameters: {message: m, subject: \"" + strings.ReplaceAll(tt.template, `"`, `\"`) + "\"}, confidence: 0.1, tier: 3, author_type: architect, reasoning: r}\n"
			_, err := rules.Parse([]byte(src))
			if ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parse: %v, want EINVALID containing %q", err, tt.err)
			}
		})
	}
}
