package stepfn

import (
	"fmt"
	"sort"
	"strings"
)

// choiceRule is a compiled Choice rule: a leaf comparison or And/Or/Not.
type choiceRule struct {
	next      string
	and, or   []*choiceRule
	not       *choiceRule
	variable  *path
	op        string // the comparison operator, without a Path suffix
	byPath    bool
	value     any
	valuePath *path
	pattern   []patternPart
	assign    any // a top-level rule's compiled Assign, or nil
}

// patternPart is a literal run or a '*' wildcard of StringMatches.
type patternPart struct {
	star bool
	lit  string
}

var comparisonOps = map[string]string{ // operator -> the type of its operand
	"StringEquals": "string", "StringLessThan": "string", "StringGreaterThan": "string",
	"StringLessThanEquals": "string", "StringGreaterThanEquals": "string", "StringMatches": "string",
	"NumericEquals": "number", "NumericLessThan": "number", "NumericGreaterThan": "number",
	"NumericLessThanEquals": "number", "NumericGreaterThanEquals": "number",
	"BooleanEquals":   "boolean",
	"TimestampEquals": "timestamp", "TimestampLessThan": "timestamp", "TimestampGreaterThan": "timestamp",
	"TimestampLessThanEquals": "timestamp", "TimestampGreaterThanEquals": "timestamp",
	"IsNull": "boolean", "IsPresent": "boolean", "IsNumeric": "boolean", "IsString": "boolean",
	"IsBoolean": "boolean", "IsTimestamp": "boolean",
}

func compileChoices(v any, bad func(string, ...any) error) ([]*choiceRule, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, bad("Choices must be a non-empty array")
	}
	out := make([]*choiceRule, 0, len(list))
	for i, e := range list {
		r, err := compileRule(e, fmt.Sprintf("Choices[%d]", i), true)
		if err != nil {
			return nil, bad("%v", err)
		}
		out = append(out, r)
	}
	return out, nil
}

func compileRule(v any, where string, top bool) (*choiceRule, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s must be an object", where)
	}
	r := &choiceRule{}
	next, hasNext := m["Next"]
	if top {
		s, ok := next.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("%s: Next is missing", where)
		}
		r.next = s
	} else if hasNext {
		return nil, fmt.Errorf("%s: a nested rule must not have Next", where)
	}
	if v, ok := m["Assign"]; ok {
		if !top {
			return nil, fmt.Errorf("%s: a nested rule must not have Assign", where)
		}
		var err error
		if r.assign, err = compileAssign(v, where); err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "Next" && k != "Comment" && k != "Assign" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var ops []string
	for _, k := range keys {
		switch k {
		case "And", "Or":
			list, ok := m[k].([]any)
			if !ok || len(list) == 0 {
				return nil, fmt.Errorf("%s: %s must be a non-empty array", where, k)
			}
			for i, e := range list {
				sub, err := compileRule(e, fmt.Sprintf("%s.%s[%d]", where, k, i), false)
				if err != nil {
					return nil, err
				}
				if k == "And" {
					r.and = append(r.and, sub)
				} else {
					r.or = append(r.or, sub)
				}
			}
			ops = append(ops, k)
		case "Not":
			sub, err := compileRule(m[k], where+".Not", false)
			if err != nil {
				return nil, err
			}
			r.not = sub
			ops = append(ops, k)
		case "Variable":
			s, ok := m[k].(string)
			if !ok {
				return nil, fmt.Errorf("%s: Variable must be a string", where)
			}
			p, err := compilePath(s)
			if err != nil {
				return nil, fmt.Errorf("%s: Variable: %v", where, err)
			}
			r.variable = p
		default:
			op := strings.TrimSuffix(k, "Path")
			typ, known := comparisonOps[op]
			if !known || (op != k && strings.HasPrefix(op, "Is")) {
				return nil, fmt.Errorf("%s: %q is not a comparison operator", where, k)
			}
			r.op = op
			ops = append(ops, k)
			if op != k {
				r.byPath = true
				s, ok := m[k].(string)
				if !ok {
					return nil, fmt.Errorf("%s: %s must be a string holding a path", where, k)
				}
				p, err := compilePath(s)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %v", where, k, err)
				}
				r.valuePath = p
				continue
			}
			val := m[k]
			if err := checkOperand(typ, val); err != nil {
				return nil, fmt.Errorf("%s: %s %v", where, k, err)
			}
			r.value = val
			if op == "TimestampEquals" || op == "TimestampLessThan" || op == "TimestampGreaterThan" || op == "TimestampLessThanEquals" || op == "TimestampGreaterThanEquals" {
				if _, err := parseTimestamp(val.(string)); err != nil {
					return nil, fmt.Errorf("%s: %s %q is not an RFC 3339 timestamp", where, k, val)
				}
			}
			if op == "StringMatches" {
				parts, err := compilePattern(val.(string))
				if err != nil {
					return nil, fmt.Errorf("%s: StringMatches: %v", where, err)
				}
				r.pattern = parts
			}
		}
	}
	if len(ops) != 1 {
		if len(ops) == 0 {
			return nil, fmt.Errorf("%s: no comparison operator or And, Or, Not", where)
		}
		return nil, fmt.Errorf("%s: more than one of %s", where, strings.Join(ops, ", "))
	}
	isLeaf := r.op != ""
	if isLeaf && r.variable == nil {
		return nil, fmt.Errorf("%s: Variable is missing", where)
	}
	if !isLeaf && r.variable != nil {
		return nil, fmt.Errorf("%s: Variable is not allowed with %s", where, ops[0])
	}
	return r, nil
}

func checkOperand(typ string, v any) error {
	switch typ {
	case "string", "timestamp":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("must be a string")
		}
	case "number":
		if _, ok := toFloat(v); !ok {
			return fmt.Errorf("must be a number")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("must be a boolean")
		}
	}
	return nil
}

// compilePattern splits a StringMatches pattern: '*' matches any run of
// characters, "\*" is a literal star and "\\" a literal backslash.
func compilePattern(p string) ([]patternPart, error) {
	var parts []patternPart
	var lit strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\':
			if i+1 >= len(p) || (p[i+1] != '*' && p[i+1] != '\\') {
				return nil, fmt.Errorf("invalid escape in %q: only \\* and \\\\ are allowed", p)
			}
			lit.WriteByte(p[i+1])
			i++
		case '*':
			if lit.Len() > 0 {
				parts = append(parts, patternPart{lit: lit.String()})
				lit.Reset()
			}
			parts = append(parts, patternPart{star: true})
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, patternPart{lit: lit.String()})
	}
	return parts, nil
}

func matchPattern(parts []patternPart, s string) bool {
	if len(parts) == 0 {
		return s == ""
	}
	if !parts[0].star {
		if !strings.HasPrefix(s, parts[0].lit) {
			return false
		}
		return matchPattern(parts[1:], s[len(parts[0].lit):])
	}
	rest := parts[1:]
	if len(rest) == 0 {
		return true
	}
	for i := 0; i <= len(s); i++ {
		if matchPattern(rest, s[i:]) {
			return true
		}
	}
	return false
}

// eval evaluates the rule against the Choice state's effective input.
func (r *choiceRule) eval(input, ctxObj any) (bool, *stateError) {
	switch {
	case r.and != nil:
		for _, s := range r.and {
			ok, err := s.eval(input, ctxObj)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case r.or != nil:
		for _, s := range r.or {
			ok, err := s.eval(input, ctxObj)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case r.not != nil:
		ok, err := r.not.eval(input, ctxObj)
		return !ok && err == nil, err
	}
	v, found := r.variable.get(input, ctxObj)
	if strings.HasPrefix(r.op, "Is") {
		want := r.value.(bool)
		var got bool
		switch r.op {
		case "IsPresent":
			got = found
		case "IsNull":
			got = found && v == nil
		case "IsNumeric":
			_, got = toFloat(v)
			got = got && found
		case "IsString":
			_, got = v.(string)
		case "IsBoolean":
			_, got = v.(bool)
		case "IsTimestamp":
			s, ok := v.(string)
			if ok {
				_, err := parseTimestamp(s)
				got = err == nil
			}
		}
		return got == want, nil
	}
	if !found {
		return false, runtimeErr("Invalid path '%s': The choice state's condition path references an invalid value.", r.variable.raw)
	}
	want := r.value
	if r.byPath {
		w, ok := r.valuePath.get(input, ctxObj)
		if !ok {
			return false, runtimeErr("Invalid path '%s': The choice state's condition path references an invalid value.", r.valuePath.raw)
		}
		want = w
	}
	return compare(r.op, v, want, r.pattern), nil
}

func compare(op string, v, want any, pattern []patternPart) bool {
	switch comparisonOps[op] {
	case "string":
		s, ok1 := v.(string)
		w, ok2 := want.(string)
		if !ok1 || !ok2 {
			return false
		}
		switch op {
		case "StringEquals":
			return s == w
		case "StringLessThan":
			return s < w
		case "StringGreaterThan":
			return s > w
		case "StringLessThanEquals":
			return s <= w
		case "StringGreaterThanEquals":
			return s >= w
		case "StringMatches":
			if pattern == nil {
				var err error
				if pattern, err = compilePattern(w); err != nil {
					return false
				}
			}
			return matchPattern(pattern, s)
		}
	case "number":
		a, ok1 := toFloat(v)
		b, ok2 := toFloat(want)
		if !ok1 || !ok2 {
			return false
		}
		return cmpOrdered(op[len("Numeric"):], a, b)
	case "boolean":
		a, ok1 := v.(bool)
		b, ok2 := want.(bool)
		return ok1 && ok2 && a == b
	case "timestamp":
		s, ok1 := v.(string)
		w, ok2 := want.(string)
		if !ok1 || !ok2 {
			return false
		}
		a, err1 := parseTimestamp(s)
		b, err2 := parseTimestamp(w)
		if err1 != nil || err2 != nil {
			return false
		}
		c := a.Compare(b)
		return cmpOrdered(op[len("Timestamp"):], float64(c), 0)
	}
	return false
}

func cmpOrdered(rel string, a, b float64) bool {
	switch rel {
	case "Equals":
		return a == b
	case "LessThan":
		return a < b
	case "GreaterThan":
		return a > b
	case "LessThanEquals":
		return a <= b
	case "GreaterThanEquals":
		return a >= b
	}
	return false
}
