package stepfn

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"math/rand/v2"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// intrinsic is a parsed intrinsic function call, e.g.
// States.Format('Hello, {}', $.name).
type intrinsic struct {
	name string
	args []intrinsicArg
}

// intrinsicArg is one argument: a literal, a path or a nested call.
type intrinsicArg struct {
	lit    any
	raw    string // a string literal as written, escapes of { and } kept (for States.Format)
	isStr  bool
	path   *path
	nested *intrinsic
}

// intrinsicArity is the number of arguments each function takes: min, max (-1: any).
var intrinsicArity = map[string][2]int{
	"States.Format":         {1, -1},
	"States.StringToJson":   {1, 1},
	"States.JsonToString":   {1, 1},
	"States.Array":          {0, -1},
	"States.ArrayPartition": {2, 2},
	"States.ArrayContains":  {2, 2},
	"States.ArrayRange":     {3, 3},
	"States.ArrayGetItem":   {2, 2},
	"States.ArrayLength":    {1, 1},
	"States.ArrayUnique":    {1, 1},
	"States.Base64Encode":   {1, 1},
	"States.Base64Decode":   {1, 1},
	"States.Hash":           {2, 2},
	"States.JsonMerge":      {3, 3},
	"States.MathRandom":     {2, 3},
	"States.MathAdd":        {2, 2},
	"States.StringSplit":    {2, 2},
	"States.UUID":           {0, 0},
}

// looksIntrinsic reports whether a ".$" value is meant as an intrinsic call.
func looksIntrinsic(s string) bool { return strings.HasPrefix(s, "States.") }

// parseIntrinsic parses a whole intrinsic expression.
func parseIntrinsic(s string) (*intrinsic, error) {
	p := &iparser{s: s}
	p.skipSpace()
	call, err := p.call()
	if err != nil {
		return nil, fmt.Errorf("invalid intrinsic function %q: %v", s, err)
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("invalid intrinsic function %q: unexpected %q at offset %d", s, p.s[p.i:], p.i)
	}
	return call, nil
}

type iparser struct {
	s     string
	i     int
	depth int
}

func (p *iparser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *iparser) call() (*intrinsic, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 50 {
		return nil, fmt.Errorf("calls nested too deeply")
	}
	start := p.i
	for p.i < len(p.s) && (isIdent(p.s[p.i]) || p.s[p.i] == '.') {
		p.i++
	}
	name := p.s[start:p.i]
	arity, ok := intrinsicArity[name]
	if !ok {
		return nil, fmt.Errorf("unknown function %q", name)
	}
	p.skipSpace()
	if p.i >= len(p.s) || p.s[p.i] != '(' {
		return nil, fmt.Errorf("expected '(' after %s", name)
	}
	p.i++
	c := &intrinsic{name: name}
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == ')' {
		p.i++
	} else {
		for {
			p.skipSpace()
			a, err := p.arg()
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, a)
			p.skipSpace()
			if p.i >= len(p.s) {
				return nil, fmt.Errorf("missing ')' in %s", name)
			}
			if p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.s[p.i] == ')' {
				p.i++
				break
			}
			return nil, fmt.Errorf("unexpected %q in the arguments of %s", p.s[p.i], name)
		}
	}
	if len(c.args) < arity[0] || (arity[1] >= 0 && len(c.args) > arity[1]) {
		return nil, fmt.Errorf("%s takes %s, got %d", name, arityText(arity), len(c.args))
	}
	if name == "States.Format" && !c.args[0].isStr && c.args[0].path == nil && c.args[0].nested == nil {
		return nil, fmt.Errorf("the first argument of States.Format must be a string")
	}
	return c, nil
}

func arityText(a [2]int) string {
	switch {
	case a[1] < 0:
		return fmt.Sprintf("at least %d arguments", a[0])
	case a[0] == a[1]:
		return fmt.Sprintf("%d arguments", a[0])
	}
	return fmt.Sprintf("%d to %d arguments", a[0], a[1])
}

func isIdent(b byte) bool {
	return b == '_' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
}

func (p *iparser) arg() (intrinsicArg, error) {
	if p.i >= len(p.s) {
		return intrinsicArg{}, fmt.Errorf("missing argument")
	}
	switch b := p.s[p.i]; {
	case b == '\'':
		return p.str()
	case b == '$':
		return p.pathArg()
	case b == '-' || (b >= '0' && b <= '9'):
		start := p.i
		p.i++
		for p.i < len(p.s) && strings.IndexByte("0123456789.eE+-", p.s[p.i]) >= 0 {
			p.i++
		}
		var n json.Number
		if err := json.Unmarshal([]byte(p.s[start:p.i]), &n); err != nil {
			return intrinsicArg{}, fmt.Errorf("bad number %q", p.s[start:p.i])
		}
		return intrinsicArg{lit: numberValue(n)}, nil
	case strings.HasPrefix(p.s[p.i:], "true"):
		p.i += 4
		return intrinsicArg{lit: true}, nil
	case strings.HasPrefix(p.s[p.i:], "false"):
		p.i += 5
		return intrinsicArg{lit: false}, nil
	case strings.HasPrefix(p.s[p.i:], "null"):
		p.i += 4
		return intrinsicArg{lit: nil}, nil
	case strings.HasPrefix(p.s[p.i:], "States."):
		c, err := p.call()
		if err != nil {
			return intrinsicArg{}, err
		}
		return intrinsicArg{nested: c}, nil
	}
	return intrinsicArg{}, fmt.Errorf("unexpected %q", p.s[p.i:])
}

func numberValue(n json.Number) any {
	if i, err := n.Int64(); err == nil {
		return i
	}
	f, _ := n.Float64()
	return f
}

// str reads a single-quoted string. \' \\ are unescaped; \{ and \} are kept in
// raw (States.Format treats them as literal braces) and unescaped in lit.
func (p *iparser) str() (intrinsicArg, error) {
	p.i++
	var lit, raw strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch c {
		case '\\':
			if p.i+1 >= len(p.s) {
				return intrinsicArg{}, fmt.Errorf("unterminated escape")
			}
			n := p.s[p.i+1]
			switch n {
			case '\'', '\\':
				lit.WriteByte(n)
				raw.WriteByte('\\')
				raw.WriteByte(n)
			case '{', '}':
				lit.WriteByte(n)
				raw.WriteByte('\\')
				raw.WriteByte(n)
			default:
				return intrinsicArg{}, fmt.Errorf("invalid escape \\%c", n)
			}
			p.i += 2
		case '\'':
			p.i++
			return intrinsicArg{lit: lit.String(), raw: raw.String(), isStr: true}, nil
		default:
			lit.WriteByte(c)
			raw.WriteByte(c)
			p.i++
		}
	}
	return intrinsicArg{}, fmt.Errorf("unterminated string")
}

func (p *iparser) pathArg() (intrinsicArg, error) {
	start := p.i
	depth := 0
	var quote byte
	for p.i < len(p.s) {
		c := p.s[p.i]
		if quote != 0 {
			if c == '\\' {
				p.i++
			} else if c == quote {
				quote = 0
			}
			p.i++
			continue
		}
		if c == '\'' || c == '"' {
			quote = c
		} else if c == '[' || c == '(' {
			depth++
		} else if c == ']' || (c == ')' && depth > 0) {
			depth--
		} else if depth == 0 && (c == ',' || c == ')' || c == ' ') {
			break
		}
		p.i++
	}
	pp, err := compilePath(p.s[start:p.i])
	if err != nil {
		return intrinsicArg{}, err
	}
	return intrinsicArg{path: pp}, nil
}

// eval runs the call against the state's input and the context object.
func (c *intrinsic) eval(input, ctxObj any) (any, *stateError) {
	args := make([]any, len(c.args))
	for i, a := range c.args {
		switch {
		case a.nested != nil:
			v, err := a.nested.eval(input, ctxObj)
			if err != nil {
				return nil, err
			}
			args[i] = v
		case a.path != nil:
			v, ok := a.path.get(input, ctxObj)
			if !ok {
				return nil, runtimeErr("The JSONPath '%s' in the intrinsic function %s could not be found in the input '%s'", a.path.raw, c.name, compactJSON(input))
			}
			args[i] = v
		default:
			args[i] = a.lit
		}
	}
	v, err := c.apply(args)
	if err != nil {
		// AWS reports an intrinsic's failure as States.Runtime, which no
		// Retry or Catch sees (States.IntrinsicFailure is reserved).
		return nil, runtimeErr("Invalid arguments in %s: %v", c.name, err)
	}
	return v, nil
}

func (c *intrinsic) apply(args []any) (any, error) {
	switch c.name {
	case "States.Format":
		tpl, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("the template must be a string")
		}
		if c.args[0].isStr {
			tpl = c.args[0].raw
		}
		return format(tpl, args[1:])
	case "States.StringToJson":
		s, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("the argument must be a string")
		}
		v, err := parseJSON([]byte(s))
		if err != nil {
			return nil, fmt.Errorf("the string is not JSON: %v", err)
		}
		return v, nil
	case "States.JsonToString":
		return compactJSON(args[0]), nil
	case "States.Array":
		return append([]any{}, args...), nil
	case "States.ArrayPartition":
		a, ok := args[0].([]any)
		n, ok2 := asInt(args[1])
		if !ok || !ok2 || n <= 0 {
			return nil, fmt.Errorf("expects an array and a positive chunk size")
		}
		out := []any{}
		for i := 0; i < len(a); i += int(n) {
			end := min(i+int(n), len(a))
			out = append(out, append([]any{}, a[i:end]...))
		}
		return out, nil
	case "States.ArrayContains":
		a, ok := args[0].([]any)
		if !ok {
			return nil, fmt.Errorf("the first argument must be an array")
		}
		for _, x := range a {
			if jsonEqual(x, args[1]) {
				return true, nil
			}
		}
		return false, nil
	case "States.ArrayRange":
		start, ok1 := asInt(args[0])
		end, ok2 := asInt(args[1])
		step, ok3 := asInt(args[2])
		if !ok1 || !ok2 || !ok3 || step == 0 {
			return nil, fmt.Errorf("expects integers start, end and a non-zero step")
		}
		out := []any{}
		for i := start; (step > 0 && i <= end) || (step < 0 && i >= end); i += step {
			out = append(out, i)
			if len(out) > 1000 {
				return nil, fmt.Errorf("the range has more than 1000 items")
			}
		}
		return out, nil
	case "States.ArrayGetItem":
		a, ok := args[0].([]any)
		i, ok2 := asInt(args[1])
		if !ok || !ok2 || i < 0 || int(i) >= len(a) {
			return nil, fmt.Errorf("expects an array and an index inside it")
		}
		return a[i], nil
	case "States.ArrayLength":
		a, ok := args[0].([]any)
		if !ok {
			return nil, fmt.Errorf("the argument must be an array")
		}
		return int64(len(a)), nil
	case "States.ArrayUnique":
		a, ok := args[0].([]any)
		if !ok {
			return nil, fmt.Errorf("the argument must be an array")
		}
		out := []any{}
	next:
		for _, x := range a {
			for _, y := range out {
				if jsonEqual(x, y) {
					continue next
				}
			}
			out = append(out, x)
		}
		return out, nil
	case "States.Base64Encode":
		s, ok := args[0].(string)
		if !ok || len(s) > 10000 {
			return nil, fmt.Errorf("expects a string of at most 10000 characters")
		}
		return base64.StdEncoding.EncodeToString([]byte(s)), nil
	case "States.Base64Decode":
		s, ok := args[0].(string)
		if !ok || len(s) > 10000 {
			return nil, fmt.Errorf("expects a string of at most 10000 characters")
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("not base64: %v", err)
		}
		return string(b), nil
	case "States.Hash":
		alg, ok := args[1].(string)
		if !ok {
			return nil, fmt.Errorf("the algorithm must be a string")
		}
		h, ok := newHash(alg)
		if !ok {
			return nil, fmt.Errorf("unknown algorithm %q (MD5, SHA-1, SHA-256, SHA-384, SHA-512)", alg)
		}
		data, ok := args[0].(string)
		if !ok {
			data = compactJSON(args[0])
		}
		if utf8.RuneCountInString(data) > 10000 {
			return nil, fmt.Errorf("expects data of at most 10000 characters")
		}
		h.Write([]byte(data))
		return hex.EncodeToString(h.Sum(nil)), nil
	case "States.JsonMerge":
		a, ok1 := args[0].(map[string]any)
		b, ok2 := args[1].(map[string]any)
		deep, ok3 := args[2].(bool)
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("expects two objects and a boolean")
		}
		if deep {
			return nil, fmt.Errorf("deep merge is not supported: the third argument must be false")
		}
		out := make(map[string]any, len(a)+len(b))
		for k, v := range a {
			out[k] = v
		}
		for k, v := range b {
			out[k] = v
		}
		return out, nil
	case "States.MathRandom":
		lo, ok1 := asInt(args[0])
		hi, ok2 := asInt(args[1])
		if !ok1 || !ok2 || hi <= lo {
			return nil, fmt.Errorf("expects integers start < end")
		}
		r := rand.Int64N(hi - lo)
		if len(args) == 3 {
			seed, ok := asInt(args[2])
			if !ok {
				return nil, fmt.Errorf("the seed must be an integer")
			}
			r = rand.New(rand.NewPCG(uint64(seed), 0)).Int64N(hi - lo)
		}
		return lo + r, nil
	case "States.MathAdd":
		a, ok1 := asInt(args[0])
		b, ok2 := asInt(args[1])
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("expects two integers")
		}
		return a + b, nil
	case "States.StringSplit":
		s, ok1 := args[0].(string)
		d, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("expects two strings")
		}
		out := []any{}
		for _, part := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(d, r) }) {
			out = append(out, part)
		}
		return out, nil
	case "States.UUID":
		return uuid.NewString(), nil
	}
	return nil, fmt.Errorf("unknown function")
}

// format fills the {} placeholders of tpl; \{ and \} are literal braces.
func format(tpl string, args []any) (string, error) {
	var b strings.Builder
	n := 0
	for i := 0; i < len(tpl); i++ {
		c := tpl[i]
		if c == '\\' && i+1 < len(tpl) {
			b.WriteByte(tpl[i+1])
			i++
			continue
		}
		if c == '{' && i+1 < len(tpl) && tpl[i+1] == '}' {
			if n >= len(args) {
				return "", fmt.Errorf("more placeholders than arguments")
			}
			switch v := args[n].(type) {
			case string:
				b.WriteString(v)
			case map[string]any, []any:
				return "", fmt.Errorf("argument %d is not a string, number, boolean or null", n+2)
			default:
				b.WriteString(compactJSON(v))
			}
			n++
			i++
			continue
		}
		b.WriteByte(c)
	}
	if n != len(args) {
		return "", fmt.Errorf("the number of arguments does not match the occurrences of {}")
	}
	return b.String(), nil
}

// asInt returns v as an integer when it is a whole number.
func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		if n == math.Trunc(n) && !math.IsInf(n, 0) {
			return int64(n), true
		}
	}
	return 0, false
}

// newHash returns the hash States.Hash and JSONata's $hash name alg.
func newHash(alg string) (hash.Hash, bool) {
	switch alg {
	case "MD5":
		return md5.New(), true
	case "SHA-1":
		return sha1.New(), true
	case "SHA-256":
		return sha256.New(), true
	case "SHA-384":
		return sha512.New384(), true
	case "SHA-512":
		return sha512.New(), true
	}
	return nil, false
}
