package stepfn

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ohler55/ojg/jp"
)

// path is a compiled JSONPath. A path starting with "$$" reads the context
// object. A definite path (names and indexes only) yields one value; any other
// path yields the array of its matches, as AWS (Jayway) does.
type path struct {
	raw      string
	context  bool
	variable string // the workflow variable the path reads ($name.field), or ""
	expr     jp.Expr
	definite bool
}

// compilePath parses a JSONPath as AWS accepts it.
func compilePath(raw string) (*path, error) {
	if !strings.HasPrefix(raw, "$") {
		return nil, fmt.Errorf("the value %q is not a valid JSONPath: it must start with '$'", raw)
	}
	p := &path{raw: raw}
	s := raw
	if strings.HasPrefix(s, "$$") {
		p.context = true
		s = s[1:]
	} else if name := variablePrefix(s); name != "" {
		p.variable = name
		s = "$" + s[1+len(name):]
	}
	x, err := parseJP(bracketMemberNames(s))
	if err != nil {
		return nil, fmt.Errorf("the value %q is not a valid JSONPath: %v", raw, err)
	}
	if len(x) == 0 {
		return nil, fmt.Errorf("the value %q is not a valid JSONPath", raw)
	}
	if _, ok := x[0].(jp.Root); !ok {
		return nil, fmt.Errorf("the value %q is not a valid JSONPath: it must start with '$'", raw)
	}
	p.expr = x
	p.definite = true
	for _, f := range x[1:] {
		switch f.(type) {
		case jp.Child, jp.Nth:
		default:
			p.definite = false
		}
	}
	return p, nil
}

// parseJP wraps jp.ParseString, which panics on some malformed input in older
// versions; a panic becomes an error.
func parseJP(s string) (x jp.Expr, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	x, err = jp.ParseString(s)
	if err == nil && strings.TrimSpace(s) != s {
		err = fmt.Errorf("surrounding spaces")
	}
	return x, err
}

// variablePrefix returns the workflow variable name a path starts with
// ($order.id reads the variable order), or "" when it starts with $. $[ or $$.
func variablePrefix(s string) string {
	if len(s) < 2 || s[0] != '$' {
		return ""
	}
	i := 1
	for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || i > 1 && s[i] >= '0' && s[i] <= '9') {
		i++
	}
	return s[1:i]
}

// bracketMemberNames rewrites each dot-notation member name holding a
// character the JSONPath parser does not take in that notation (a hyphen, as
// in $.delivery-partner) into bracket notation ($['delivery-partner']), which
// it does. AWS's JSONPath (Jayway) accepts such names after a dot, in reference
// paths, Parameters and intrinsic function arguments alike. Text inside
// brackets, filters and quotes is left as written.
func bracketMemberNames(s string) string {
	if !strings.Contains(s, "-") {
		return s
	}
	var b strings.Builder
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && i+1 < len(s) {
				b.WriteByte(c)
				i++
				c = s[i]
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[' || c == '(':
			depth++
		case c == ']' || c == ')':
			depth--
		case c == '.' && depth == 0:
			dots := "."
			if i+1 < len(s) && s[i+1] == '.' {
				dots = ".."
			}
			j := i + len(dots)
			k := j
			for k < len(s) && !strings.ContainsRune(".[]() '\"", rune(s[k])) {
				k++
			}
			if name := s[j:k]; strings.Contains(name, "-") {
				if dots == ".." {
					b.WriteString(dots)
				}
				b.WriteString("['")
				b.WriteString(strings.ReplaceAll(name, "'", "\\'"))
				b.WriteString("']")
				i = k - 1
				continue
			}
			b.WriteString(dots)
			i += len(dots) - 1
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// compileRefPath parses a reference path (ResultPath, ItemsPath): names and
// indexes only, as AWS requires.
func compileRefPath(raw string) (*path, error) {
	p, err := compilePath(raw)
	if err != nil {
		return nil, err
	}
	if !p.definite {
		return nil, fmt.Errorf("the value %q is not a valid reference path: only names and indexes are allowed", raw)
	}
	if p.variable != "" {
		return nil, fmt.Errorf("the value %q is not a valid reference path: it cannot name a variable", raw)
	}
	return p, nil
}

// get evaluates the path against input (or the context object).
func (p *path) get(input, ctxObj any) (any, bool) {
	data := input
	if p.variable != "" {
		l, _ := ctxObj.(*lazyContext)
		v, ok := l.lookupVar(p.variable)
		if !ok {
			return nil, false
		}
		data = v
	} else if p.context {
		if l, isLazy := ctxObj.(*lazyContext); isLazy && p.definite {
			if v, ok, handled := l.mapItemPath(p.expr[1:]); handled {
				return v, ok
			}
		}
		data = contextValue(ctxObj)
	}
	if len(p.expr) == 1 {
		return data, true
	}
	if p.definite {
		return getDefinite(data, p.expr[1:])
	}
	res := p.expr.Get(data)
	if res == nil {
		res = []any{}
	}
	return res, true
}

// mustGet is get with AWS's States.Runtime error when the path finds nothing.
func (p *path) mustGet(input, ctxObj any, field string) (any, *stateError) {
	v, ok := p.get(input, ctxObj)
	if !ok {
		return nil, runtimeErr("The JSONPath '%s' specified for the field '%s' could not be found in the input '%s'", p.raw, field, compactJSON(input))
	}
	return v, nil
}

// setResult places result at the reference path inside input, copying the
// objects along the way so input itself is not changed. It fails (AWS's
// States.ResultPathMatchFailure) when the path runs through a value that is not
// an object.
func setResult(p *path, input, result any) (any, *stateError) {
	if p == nil || len(p.expr) == 1 {
		return result, nil
	}
	out, err := setAt(input, p.expr[1:], result)
	if err != nil {
		return nil, &stateError{Name: ErrResultPathMatchFailure, Cause: fmt.Sprintf("Unable to apply ResultPath \"%s\" to input \"%s\"", p.raw, compactJSON(input))}
	}
	return out, nil
}

func setAt(node any, frags jp.Expr, v any) (any, error) {
	if len(frags) == 0 {
		return v, nil
	}
	switch f := frags[0].(type) {
	case jp.Child:
		var m map[string]any
		switch n := node.(type) {
		case map[string]any:
			m = make(map[string]any, len(n)+1)
			for k, x := range n {
				m[k] = x
			}
		case nil:
			m = map[string]any{}
		default:
			return nil, fmt.Errorf("not an object")
		}
		sub, err := setAt(m[string(f)], frags[1:], v)
		if err != nil {
			return nil, err
		}
		m[string(f)] = sub
		return m, nil
	case jp.Nth:
		a, ok := node.([]any)
		i := int(f)
		if i < 0 && ok {
			i += len(a)
		}
		if !ok || i < 0 || i >= len(a) {
			return nil, fmt.Errorf("no such index")
		}
		c := append([]any(nil), a...)
		sub, err := setAt(c[i], frags[1:], v)
		if err != nil {
			return nil, err
		}
		c[i] = sub
		return c, nil
	}
	return nil, fmt.Errorf("unsupported path")
}

// pathString renders a key for messages.
func pathString(prefix, key string) string {
	if prefix == "" {
		return key
	}
	if _, err := strconv.Atoi(key); err == nil {
		return prefix + "[" + key + "]"
	}
	return prefix + "." + key
}

// lazyContext is the context object ($$) of a state, built on first use:
// most states never read it. For an item of a Map state (item set), it is the
// Map state's context object plus the item's "Map" entry.
type lazyContext struct {
	vars  *scope // the workflow variables the state sees
	x     *execution
	st    *state
	cp    *frameCP
	token string
	item  *mapItem
	v     map[string]any
}

// lookupVar reads a workflow variable from the scope the context belongs to.
func (l *lazyContext) lookupVar(name string) (any, bool) {
	if l == nil {
		return nil, false
	}
	if l.vars == nil && l.item != nil {
		pl, _ := l.item.parent.(*lazyContext)
		return pl.lookupVar(name)
	}
	return l.vars.lookup(name)
}

// mapItem is the item a Map state's ItemSelector is evaluated for.
type mapItem struct {
	parent any // the Map state's context object
	index  int
	value  any
}

func (l *lazyContext) value() map[string]any {
	if l.v == nil {
		l.v = l.build()
	}
	return l.v
}

func (l *lazyContext) build() map[string]any {
	if it := l.item; it != nil {
		base, _ := contextValue(it.parent).(map[string]any)
		c := make(map[string]any, len(base)+1)
		for k, v := range base {
			c[k] = v
		}
		c["Map"] = map[string]any{"Item": map[string]any{"Index": int64(it.index), "Value": it.value}}
		return c
	}
	var retries int64
	for _, n := range l.cp.Retries {
		retries += n
	}
	exec, machine := l.x.contextBase()
	c := map[string]any{
		"Execution":    exec,
		"StateMachine": machine,
		"State": map[string]any{
			"Name": l.st.name, "EnteredTime": l.cp.EnteredAt.UTC().Format(time.RFC3339Nano), "RetryCount": retries,
		},
	}
	if l.token != "" {
		c["Task"] = map[string]any{"Token": l.token}
	}
	return c
}

// mapItemPath reads $$.Map.Item.Index or a definite path under
// $$.Map.Item.Value without building the context object; handled is false for
// any other path.
func (l *lazyContext) mapItemPath(frags jp.Expr) (v any, ok, handled bool) {
	if l.item == nil || l.v != nil || len(frags) < 3 || frags[0] != jp.Child("Map") || frags[1] != jp.Child("Item") {
		return nil, false, false
	}
	switch frags[2] {
	case jp.Child("Value"):
		v, ok = getDefinite(l.item.value, frags[3:])
		return v, ok, true
	case jp.Child("Index"):
		if len(frags) == 3 {
			return int64(l.item.index), true, true
		}
	}
	return nil, false, false
}

func contextValue(c any) any {
	if l, ok := c.(*lazyContext); ok {
		return l.value()
	}
	return c
}

// getDefinite walks names and indexes without allocating (ojg's FirstFound
// allocates a work stack on every call).
func getDefinite(data any, frags jp.Expr) (any, bool) {
	for _, f := range frags {
		switch x := f.(type) {
		case jp.Child:
			m, ok := data.(map[string]any)
			if !ok {
				return nil, false
			}
			if data, ok = m[string(x)]; !ok {
				return nil, false
			}
		case jp.Nth:
			a, ok := data.([]any)
			if !ok {
				return nil, false
			}
			i := int(x)
			if i < 0 {
				i += len(a)
			}
			if i < 0 || i >= len(a) {
				return nil, false
			}
			data = a[i]
		default:
			return nil, false
		}
	}
	return data, true
}
