package stepfn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ohler55/ojg/oj"
)

// Values inside the engine are what ojg's parser yields: map[string]any,
// []any, string, int64, float64, bool and nil.

// parseJSON decodes a JSON document; empty input is an error.
func parseJSON(b []byte) (v any, err error) {
	if v, ok := fastParse(b); ok {
		return v, nil
	}
	return ojgParse(b)
}

// ojgParse is parseJSON by ojg, for every document.
func ojgParse(b []byte) (v any, err error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("empty JSON")
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	p := parsers.Get().(*oj.Parser)
	v, err = p.Parse(b)
	parsers.Put(p)
	if err != nil {
		return nil, err
	}
	return normalize(v), nil
}

// parsers reuses ojg parsers, which keep their work buffers between calls.
var parsers = sync.Pool{New: func() any { return &oj.Parser{} }}

// normalize turns the few other types ojg may produce (big numbers) into the
// engine's set.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if n := normalize(e); !sameScalar(n, e) {
				x[k] = n
			}
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	case int, int64, float64, string, bool, nil:
	case json.Number:
		return numberValue(x)
	default:
		if s, ok := v.(fmt.Stringer); ok {
			var n json.Number = json.Number(s.String())
			return numberValue(n)
		}
	}
	return v
}

// sameScalar reports whether normalize left e as it was: containers are
// normalized in place, and only other types are replaced.
func sameScalar(n, e any) bool {
	switch e.(type) {
	case map[string]any, []any, int64, float64, string, bool, nil:
		return true
	}
	return false
}

// marshal renders v as compact JSON with sorted keys and no HTML escaping,
// as encoding/json would with SetEscapeHTML(false).
func marshal(v any) []byte {
	buf := scratch.Get().(*[]byte)
	b := appendJSON((*buf)[:0], v)
	out := make([]byte, len(b))
	copy(out, b)
	putScratch(buf, b)
	return out
}

// scratch holds buffers to render JSON into before copying it out at its size.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// putScratch returns a buffer to scratch, unless it grew too large to keep.
func putScratch(buf *[]byte, b []byte) {
	if cap(b) <= 64<<10 {
		*buf = b[:0]
		scratch.Put(buf)
	}
}

// marshalsTo reports whether marshal(v) would give exactly b.
func marshalsTo(v any, b []byte) bool {
	buf := scratch.Get().(*[]byte)
	m := appendJSON((*buf)[:0], v)
	same := bytes.Equal(m, b)
	putScratch(buf, m)
	return same
}

func appendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if x {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case string:
		return appendString(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case float64:
		return appendFloat(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	case map[string]any:
		// The members in key order, read in one pass over the map; most
		// objects are small: they stay on the stack, sorted by insertion.
		var arr [8]member
		ms := arr[:0]
		for k, v := range x {
			ms = append(ms, member{k, v})
		}
		if len(ms) <= len(arr) {
			for i := 1; i < len(ms); i++ {
				for j := i; j > 0 && ms[j].k < ms[j-1].k; j-- {
					ms[j], ms[j-1] = ms[j-1], ms[j]
				}
			}
		} else {
			slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.k, b.k) })
		}
		b = append(b, '{')
		for i := range ms {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, ms[i].k)
			b = append(b, ':')
			b = appendJSON(b, ms[i].v)
		}
		return append(b, '}')
	case json.RawMessage:
		return append(b, x...)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return append(b, "null"...)
	}
	return append(b, bytes.TrimRight(buf.Bytes(), "\n")...)
}

// appendFloat formats like encoding/json.
func appendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// member is a member of an object, as appendJSON renders it.
type member struct {
	k string
	v any
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does without HTML escaping.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// compactJSON is marshal as a string.
func compactJSON(v any) string { return string(marshal(v)) }

// toFloat returns a JSON number as float64.
func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

// jsonEqual compares two JSON values, numbers by value.
func jsonEqual(a, b any) bool {
	fa, oka := toFloat(a)
	fb, okb := toFloat(b)
	if oka || okb {
		return oka && okb && fa == fb
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// isWhole reports whether f has no fractional part.
func isWhole(f float64) bool { return f == math.Trunc(f) }

// template is a compiled payload template (Parameters, ResultSelector,
// ItemSelector): an object whose "key.$" fields take a path or an intrinsic.
type template struct {
	fields []tfield
}

type tfield struct {
	key  string
	src  string // the key as written, for messages
	lit  any
	path *path
	call *intrinsic
	sub  any // *template or *arrayTemplate
}

// arrayTemplate is a literal array whose elements may hold templates.
type arrayTemplate struct {
	items []any
}

// compileTemplate compiles v, which the definition gave as a payload template.
func compileTemplate(v any, where string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		t := &template{}
		for k, e := range x {
			if strings.HasSuffix(k, ".$") {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("the value of the field %q must be a string holding a path or an intrinsic function", pathString(where, k))
				}
				f := tfield{key: strings.TrimSuffix(k, ".$"), src: k}
				var err error
				if looksIntrinsic(s) {
					f.call, err = parseIntrinsic(s)
				} else {
					f.path, err = compilePath(s)
				}
				if err != nil {
					return nil, fmt.Errorf("the field %q: %v", pathString(where, k), err)
				}
				t.fields = append(t.fields, f)
				continue
			}
			sub, err := compileTemplate(e, pathString(where, k))
			if err != nil {
				return nil, err
			}
			switch s := sub.(type) {
			case *template, *arrayTemplate:
				t.fields = append(t.fields, tfield{key: k, src: k, sub: s})
			default:
				t.fields = append(t.fields, tfield{key: k, src: k, lit: s})
			}
		}
		return t, nil
	case []any:
		a := &arrayTemplate{items: make([]any, len(x))}
		dynamic := false
		for i, e := range x {
			sub, err := compileTemplate(e, fmt.Sprintf("%s[%d]", where, i))
			if err != nil {
				return nil, err
			}
			switch sub.(type) {
			case *template, *arrayTemplate:
				dynamic = true
			}
			a.items[i] = sub
		}
		if !dynamic {
			return x, nil
		}
		return a, nil
	}
	return v, nil
}

// eval fills the template from input and the context object.
func evalTemplate(t any, input, ctxObj any) (any, *stateError) {
	if a, ok := t.(*arrayTemplate); ok {
		out := make([]any, len(a.items))
		for i, e := range a.items {
			v, err := evalTemplate(e, input, ctxObj)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	tp, ok := t.(*template)
	if !ok {
		return t, nil
	}
	out := make(map[string]any, len(tp.fields))
	for _, f := range tp.fields {
		switch {
		case f.path != nil:
			v, ok := f.path.get(input, ctxObj)
			if !ok {
				return nil, runtimeErr("The JSONPath '%s' specified for the field '%s' could not be found in the input '%s'", f.path.raw, f.src, compactJSON(input))
			}
			out[f.key] = v
		case f.call != nil:
			v, err := f.call.eval(input, ctxObj)
			if err != nil {
				return nil, err
			}
			out[f.key] = v
		case f.sub != nil:
			v, err := evalTemplate(f.sub, input, ctxObj)
			if err != nil {
				return nil, err
			}
			out[f.key] = v
		default:
			out[f.key] = f.lit
		}
	}
	return out, nil
}

// jsonSizeExceeds reports whether marshal(v) would be longer than limit
// bytes, without rendering it.
func jsonSizeExceeds(v any, limit int) bool {
	return jsonSize(v, limit) > limit
}

// jsonSize returns the length of marshal(v), or a number above limit once
// it exceeds limit.
func jsonSize(v any, limit int) int {
	switch x := v.(type) {
	case nil:
		return 4
	case bool:
		if x {
			return 4
		}
		return 5
	case string:
		return stringSize(x)
	case int64:
		var buf [24]byte
		return len(strconv.AppendInt(buf[:0], x, 10))
	case int:
		var buf [24]byte
		return len(strconv.AppendInt(buf[:0], int64(x), 10))
	case float64:
		var buf [32]byte
		return len(appendFloat(buf[:0], x))
	case []any:
		n := 2 + max(len(x)-1, 0)
		for _, e := range x {
			if n += jsonSize(e, limit); n > limit {
				return n
			}
		}
		return n
	case map[string]any:
		n := 2 + max(len(x)-1, 0)
		for k, e := range x {
			if n += stringSize(k) + 1 + jsonSize(e, limit); n > limit {
				return n
			}
		}
		return n
	case json.RawMessage:
		return len(x)
	}
	return len(marshal(v))
}

// stringSize returns the length of appendString(nil, s).
func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c != '"' && c != '\\':
				n++
			case c == '"', c == '\\', c == '\n', c == '\r', c == '\t', c == '\b', c == '\f':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
