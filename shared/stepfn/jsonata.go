package stepfn

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/google/uuid"
	jsonata "github.com/xiatechs/jsonata-go"
)

// JSONata query language (QueryLanguage "JSONata"): a string value "{% expr %}"
// in Arguments, Output, Assign, Condition, Items, ItemSelector, Error, Cause,
// Seconds or Timestamp is a JSONata expression, evaluated with github.com/xiatechs/jsonata-go
// against the variables $states ({input, result, errorOutput, context}) and the
// workflow variables, plus AWS's functions $partition, $range, $hash, $random,
// $uuid and $parse.

// ErrQueryEvaluation is AWS's error for a JSONata expression that fails.
const ErrQueryEvaluation = "States.QueryEvaluationError"

// jexpr is a compiled JSONata template: a value whose "{% %}" strings are
// expressions.
type jexpr struct {
	src  string // the expression, for a "{% %}" string
	obj  map[string]*jexpr
	arr  []*jexpr
	lit  any
	kind byte // 'e' expression, 'o' object, 'a' array, 'l' literal
}

// isJSONataString reports whether s is a "{% ... %}" expression.
func isJSONataString(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{%") && strings.HasSuffix(t, "%}") && len(t) >= 4 {
		return strings.TrimSpace(t[2 : len(t)-2]), true
	}
	return "", false
}

// compileJSONata compiles a JSONata template, checking each expression parses.
func compileJSONata(v any, where string) (*jexpr, error) {
	switch x := v.(type) {
	case string:
		if src, ok := isJSONataString(x); ok {
			if _, err := compileJSONataExpr(src); err != nil {
				return nil, fmt.Errorf("%s: the JSONata expression %q does not parse: %v", where, src, err)
			}
			return &jexpr{kind: 'e', src: src}, nil
		}
	case map[string]any:
		j := &jexpr{kind: 'o', obj: make(map[string]*jexpr, len(x))}
		for k, e := range x {
			c, err := compileJSONata(e, where+"."+k)
			if err != nil {
				return nil, err
			}
			j.obj[k] = c
		}
		return j, nil
	case []any:
		j := &jexpr{kind: 'a', arr: make([]*jexpr, len(x))}
		for i, e := range x {
			c, err := compileJSONata(e, fmt.Sprintf("%s[%d]", where, i))
			if err != nil {
				return nil, err
			}
			j.arr[i] = c
		}
		return j, nil
	}
	return &jexpr{kind: 'l', lit: v}, nil
}

// jenv is what a JSONata expression sees.
type jenv struct {
	states map[string]any
	vars   *scope
}

// eval evaluates the template.
func (j *jexpr) eval(env *jenv) (any, *stateError) {
	switch j.kind {
	case 'e':
		return env.run(j.src)
	case 'o':
		out := make(map[string]any, len(j.obj))
		for k, c := range j.obj {
			v, serr := c.eval(env)
			if serr != nil {
				return nil, serr
			}
			out[k] = v
		}
		return out, nil
	case 'a':
		out := make([]any, len(j.arr))
		for i, c := range j.arr {
			v, serr := c.eval(env)
			if serr != nil {
				return nil, serr
			}
			out[i] = v
		}
		return out, nil
	}
	return j.lit, nil
}

// plain converts engine values to encoding/json's shapes (float64 numbers),
// which the JSONata library works on, and back.
func plain(v any) any {
	var out any
	_ = json.Unmarshal(marshal(v), &out)
	return out
}

func fromPlain(v any) (any, *stateError) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &stateError{Name: ErrQueryEvaluation, Cause: fmt.Sprintf("the JSONata result is not JSON: %v", err)}
	}
	out, err := parseJSON(b)
	if err != nil {
		return nil, &stateError{Name: ErrQueryEvaluation, Cause: err.Error()}
	}
	return out, nil
}

// run evaluates one expression. An expression compiles per evaluation: the
// library keeps variables on the compiled expression, and evaluations run
// concurrently (Map, Parallel).
func (env *jenv) run(src string) (any, *stateError) {
	e, err := compileJSONataExpr(src)
	if err != nil {
		return nil, &stateError{Name: ErrQueryEvaluation, Cause: err.Error()}
	}
	vars := map[string]any{}
	var chain []*scope
	for s := env.vars; s != nil; s = s.parent {
		chain = append(chain, s)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		for k, v := range chain[i].own {
			vars[k] = plain(v)
		}
	}
	vars["states"] = plain(env.states)
	if err := e.RegisterVars(vars); err != nil {
		return nil, &stateError{Name: ErrQueryEvaluation, Cause: err.Error()}
	}
	if err := e.RegisterExts(awsFunctions); err != nil {
		return nil, &stateError{Name: ErrQueryEvaluation, Cause: err.Error()}
	}
	input := plain(env.states["input"])
	v, err := evalJSONataExpr(e, input)
	if errors.Is(err, jsonata.ErrUndefined) {
		// JSON has no undefined: a field whose expression yields nothing
		// fails the state, and Retry and Catch see it.
		return nil, &stateError{Name: ErrQueryEvaluation, Cause: fmt.Sprintf("The JSONata expression '%s' returned undefined: a field's value must be defined", src)}
	}
	if err != nil {
		return nil, &stateError{Name: ErrQueryEvaluation, Cause: fmt.Sprintf("An error occurred while evaluating the expression '%s': %v", src, err)}
	}
	return fromPlain(v)
}

// compileJSONataExpr is jsonata.Compile with a panic (on malformed input)
// turned into an error: a definition must never crash the engine.
func compileJSONataExpr(src string) (e *jsonata.Expr, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return jsonata.Compile(src)
}

// evalJSONataExpr is Eval with a panic turned into an error.
func evalJSONataExpr(e *jsonata.Expr, input any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return e.Eval(input)
}

// awsFunctions are the functions Step Functions adds to JSONata.
var awsFunctions = map[string]jsonata.Extension{
	"partition": {Func: func(array []any, size float64) ([]any, error) {
		n := int(size)
		if float64(n) != size || n <= 0 {
			return nil, fmt.Errorf("$partition: the chunk size must be a positive integer, got %v", size)
		}
		out := make([]any, 0, (len(array)+n-1)/n)
		for i := 0; i < len(array); i += n {
			out = append(out, append([]any(nil), array[i:min(i+n, len(array))]...))
		}
		return out, nil
	}},
	"range": {Func: func(start, end, step float64) ([]any, error) {
		if step == 0 {
			return nil, fmt.Errorf("$range: the step must not be 0")
		}
		var out []any
		for x := start; (step > 0 && x <= end) || (step < 0 && x >= end); x += step {
			if len(out) >= 1000 {
				return nil, fmt.Errorf("$range: more than 1000 items")
			}
			out = append(out, x)
		}
		if out == nil {
			out = []any{}
		}
		return out, nil
	}},
	"hash": {Func: func(data any, algorithm string) (string, error) {
		s, ok := data.(string)
		if !ok {
			s = string(marshal(data))
		}
		h, ok := newHash(algorithm)
		if !ok {
			return "", fmt.Errorf("$hash: the algorithm %q is not one of MD5, SHA-1, SHA-256, SHA-384, SHA-512", algorithm)
		}
		h.Write([]byte(s))
		return hex.EncodeToString(h.Sum(nil)), nil
	}},
	"random": {Func: func() float64 { return rand.Float64() }},
	"uuid":   {Func: func() string { return uuid.NewString() }},
	"parse": {Func: func(s string) (any, error) {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("$parse: the string is not JSON: %v", err)
		}
		return v, nil
	}},
}

// The query languages.
const (
	queryJSONPath = "JSONPath"
	queryJSONata  = "JSONata"
)

// jstate holds the JSONata fields of a state whose QueryLanguage is JSONata.
type jstate struct {
	arguments, output, assign *jexpr
	conditions                []*jexpr // per Choice rule
	ruleAssign, ruleOutput    []*jexpr // per Choice rule, nil when absent
	ruleNext                  []string
	catchAssign, catchOutput  []*jexpr // per Catcher, nil when absent
	seconds, timestamp        *jexpr   // Wait
	items, itemSelector       *jexpr   // Map
	failError, failCause      *jexpr   // Fail
}

// jsonataFields lists the fields a JSONata state takes, by type. A Map's
// ItemReader and ItemBatcher are not run with JSONata by this engine.
var jsonataFields = map[string][]string{
	"Parallel": {"Next", "End", "Arguments", "Output", "Assign", "Retry", "Catch", "Branches"},
	"Map": {"Next", "End", "Items", "ItemSelector", "ItemProcessor", "MaxConcurrency", "ToleratedFailureCount",
		"ToleratedFailurePercentage", "Label", "Output", "Assign", "Retry", "Catch"},
	"Pass":    {"Next", "End", "Output", "Assign"},
	"Task":    {"Next", "End", "Arguments", "Output", "Assign", "Retry", "Catch", "Resource", "TimeoutSeconds", "HeartbeatSeconds", "Credentials"},
	"Choice":  {"Choices", "Default", "Output", "Assign"},
	"Wait":    {"Next", "End", "Seconds", "Timestamp", "Output", "Assign"},
	"Succeed": {"Output"},
	"Fail":    {"Error", "Cause"},
}

// compileJSONataState compiles a state whose QueryLanguage is JSONata: the
// JSONata fields here, the rest (transitions, Resource, Retry, Catch's
// ErrorEquals and Next) by the JSONPath compiler on what remains.
func compileJSONataState(name string, m map[string]any, where, prefix, ql string, bad func(string, ...any) error) (*state, error) {
	typ, _ := m["Type"].(string)
	allowed, ok := jsonataFields[typ]
	if !ok {
		return nil, bad("Type %v is not a state type", m["Type"])
	}
	if err := onlyFields(m, where, append(append([]string{}, commonFields...), allowed...)); err != nil {
		return nil, err
	}
	j := &jstate{}
	rest := make(map[string]any, len(m))
	for k, v := range m {
		if k != "QueryLanguage" {
			rest[k] = v
		}
	}
	field := func(key string) (*jexpr, error) {
		v, ok := m[key]
		if !ok {
			return nil, nil
		}
		delete(rest, key)
		c, err := compileJSONata(v, key)
		if err != nil {
			return nil, bad("%v", err)
		}
		return c, nil
	}
	var err error
	if j.arguments, err = field("Arguments"); err != nil {
		return nil, err
	}
	if j.output, err = field("Output"); err != nil {
		return nil, err
	}
	if j.items, err = field("Items"); err != nil {
		return nil, err
	}
	if j.itemSelector, err = field("ItemSelector"); err != nil {
		return nil, err
	}
	if v, ok := m["Assign"]; ok {
		am, isObj := v.(map[string]any)
		if !isObj {
			return nil, bad("Assign must be an object of variable names")
		}
		for k := range am {
			if !varName.MatchString(k) || k == "states" {
				return nil, bad("Assign: %q is not a valid variable name", k)
			}
		}
		if j.assign, err = field("Assign"); err != nil {
			return nil, err
		}
	}
	switch typ {
	case "Wait":
		for _, key := range []string{"Seconds", "Timestamp"} {
			if s, isStr := m[key].(string); isStr {
				if _, isExpr := isJSONataString(s); isExpr {
					c, err := field(key)
					if err != nil {
						return nil, err
					}
					if key == "Seconds" {
						j.seconds, rest["Seconds"] = c, 0
					} else {
						j.timestamp = c
						rest["Seconds"] = 0
					}
				}
			}
		}
	case "Fail":
		if j.failError, err = field("Error"); err != nil {
			return nil, err
		}
		if j.failCause, err = field("Cause"); err != nil {
			return nil, err
		}
	case "Choice":
		list, _ := m["Choices"].([]any)
		if len(list) == 0 {
			return nil, bad("Choices must be a non-empty array")
		}
		stand := make([]any, len(list))
		for i, e := range list {
			r, isObj := e.(map[string]any)
			if !isObj {
				return nil, bad("Choices[%d] must be an object", i)
			}
			rw := fmt.Sprintf("Choices[%d]", i)
			for k := range r {
				switch k {
				case "Condition", "Next", "Assign", "Output", "Comment":
				default:
					return nil, bad("%s: the field %q is not supported with JSONata (use Condition)", rw, k)
				}
			}
			next, _ := r["Next"].(string)
			if next == "" {
				return nil, bad("%s: Next is missing", rw)
			}
			cond, hasCond := r["Condition"]
			if !hasCond {
				return nil, bad("%s: Condition is missing", rw)
			}
			c, err := compileJSONata(cond, rw+".Condition")
			if err != nil {
				return nil, bad("%v", err)
			}
			var ra, ro *jexpr
			if v, ok := r["Assign"]; ok {
				if ra, err = compileJSONata(v, rw+".Assign"); err != nil {
					return nil, bad("%v", err)
				}
			}
			if v, ok := r["Output"]; ok {
				if ro, err = compileJSONata(v, rw+".Output"); err != nil {
					return nil, bad("%v", err)
				}
			}
			j.conditions = append(j.conditions, c)
			j.ruleAssign, j.ruleOutput = append(j.ruleAssign, ra), append(j.ruleOutput, ro)
			j.ruleNext = append(j.ruleNext, next)
			// The JSONPath compiler checks the transitions on a stand-in rule.
			stand[i] = map[string]any{"Variable": "$", "IsPresent": true, "Next": next}
		}
		rest["Choices"] = stand
	}
	if typ == "Task" || typ == "Parallel" || typ == "Map" {
		if list, isList := m["Catch"].([]any); isList {
			stand := make([]any, len(list))
			for i, e := range list {
				c, isObj := e.(map[string]any)
				if !isObj {
					return nil, bad("Catch[%d] must be an object", i)
				}
				cw := fmt.Sprintf("Catch[%d]", i)
				sc := map[string]any{}
				var ca, co *jexpr
				for k, v := range c {
					switch k {
					case "Assign":
						if ca, err = compileJSONata(v, cw+".Assign"); err != nil {
							return nil, bad("%v", err)
						}
					case "Output":
						if co, err = compileJSONata(v, cw+".Output"); err != nil {
							return nil, bad("%v", err)
						}
					case "ResultPath":
						return nil, bad("%s: ResultPath is not allowed with JSONata (use Output)", cw)
					default:
						sc[k] = v
					}
				}
				j.catchAssign, j.catchOutput = append(j.catchAssign, ca), append(j.catchOutput, co)
				stand[i] = sc
			}
			rest["Catch"] = stand
		}
	}
	s, err := compileJSONPathState(name, rest, where, prefix, ql, bad)
	if err != nil {
		return nil, err
	}
	s.jx = j
	return s, nil
}
