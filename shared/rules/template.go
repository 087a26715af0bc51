package rules

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ohler55/ojg/jp"
	"go.yaml.in/yaml/v3"

	"github.com/ora-runtime/ora/shared/ora"
)

// template is one {{ field }} or {{ field | default: value }} of a rule's
// parameters.
type template struct {
	field      string // as written
	path       jp.Expr
	fallback   any // the default's value, used when the field is absent or null
	hasDefault bool
}

// defaultFilter splits "field | default: value".
var defaultFilter = regexp.MustCompile(`^(.*?)\s*\|\s*default\s*:\s*(.+)$`)

func parseTemplate(ref string) (template, error) {
	field, value := ref, ""
	if m := defaultFilter.FindStringSubmatch(ref); m != nil {
		field, value = m[1], m[2]
	}
	field = strings.TrimSpace(field)
	p, err := parsePath(field)
	if err != nil {
		return template{}, fmt.Errorf("%q is not a field path: %v", field, err)
	}
	t := template{field: field, path: p}
	if value == "" {
		return t, nil
	}
	var v any
	if err := yaml.Unmarshal([]byte(value), &v); err != nil {
		return template{}, fmt.Errorf("default %s is not a value: %v", value, err)
	}
	switch v.(type) {
	case string, int, int64, uint64, float64, bool:
	default:
		return template{}, fmt.Errorf("default %s must be a string, a number or true/false", value)
	}
	t.fallback, t.hasDefault = normalize(v), true
	return t, nil
}

// alwaysPresent are the fields every normalized signal has; anything else
// (every payload field above all: providers leave many out or send null) may
// be absent.
var alwaysPresent = map[string]bool{
	"id": true, "dedup_key": true, "raw_digest": true, "timestamp": true, "normalized_at": true,
	"source.type": true, "source.name": true,
}

func mayBeNull(field string) bool {
	return !alwaysPresent[strings.TrimPrefix(field, "$.")]
}

// checkRequired refuses an outcome whose action would be refused for a
// missing parameter: a required one absent, or a string that is nothing but
// templates of fields that may be null, with no default (it would render as
// null or ""). required names an action's required parameters (nil: none
// checked). Errors: EINVALID naming the parameter, e.g.
// rules[3](stripe-paid).then.parameters.message.
func checkRequired(action string, params map[string]any, templates map[string]template, required func(string) []string, where string) error {
	if required == nil {
		return nil
	}
	for _, p := range required(action) {
		at := where + "." + p
		v, ok := params[p]
		if !ok || v == nil {
			return ora.Invalid(at, "required: %s cannot run without %s", action, p)
		}
		s, ok := v.(string)
		if !ok {
			continue
		}
		if strings.TrimSpace(templateRef.ReplaceAllString(s, "")) != "" {
			continue // text around the templates: never empty
		}
		var nullable []template
		for _, m := range templateRef.FindAllStringSubmatch(s, -1) {
			if t := templates[m[1]]; t.hasDefault || !mayBeNull(t.field) {
				nullable = nil
				break
			} else {
				nullable = append(nullable, t)
			}
		}
		if strings.TrimSpace(s) == "" {
			return ora.Invalid(at, "required: %s cannot run with %s empty", action, p)
		}
		if len(nullable) > 0 {
			f := nullable[0].field
			return ora.Invalid(at, "%q is only {{ %s }}, a field a provider may leave out or send as null, and %s cannot run without %s: give it a default, {{ %s | default: \"...\" }}, or write text around it",
				s, f, action, p, f)
		}
	}
	return nil
}
