package stepfn

import (
	"strconv"
	"sync/atomic"
	"unicode/utf8"
)

// fastParse decodes the JSON documents that tasks and executions pass most
// (objects, arrays, plain strings, integers, short decimals, literals) into
// the engine's values, in fewer allocations than ojg. It reports ok false for
// anything else (escapes beyond the simple ones, long or exponent numbers,
// deep nesting, invalid JSON), which parseJSON leaves to ojg: for what it
// accepts it gives exactly what ojg and normalize give (FuzzFastParse).
func fastParse(b []byte) (v any, ok bool) {
	v, _, ok = fastParseCanonical(b)
	return v, ok
}

// fastParseCanonical is fastParse, and reports besides whether b is exactly
// what marshal renders of v (compact, keys in order, strings and numbers
// written as marshal writes them): then len(b) is v's JSON size and b its
// rendering. canonical false does not mean b differs, only that the parser
// did not tell.
func fastParseCanonical(b []byte) (v any, canonical, ok bool) {
	p := fastParser{b: b}
	p.space()
	if v, ok = p.value(0); !ok {
		return nil, false, false
	}
	p.space()
	return v, !p.loose, p.i == len(p.b)
}

type fastParser struct {
	b []byte
	i int
	// loose: the parser read something marshal would write otherwise
	// (whitespace, an escape, keys out of order, a number's other form).
	loose bool
}

// fastMaxDepth is how deep fastParse nests before it gives up.
const fastMaxDepth = 64

func (p *fastParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
			p.loose = true
		default:
			return
		}
	}
}

func (p *fastParser) value(depth int) (any, bool) {
	if p.i >= len(p.b) || depth > fastMaxDepth {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.strValue()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case p.literal("true"):
		return true, true
	case p.literal("false"):
		return false, true
	case p.literal("null"):
		return nil, true
	}
	return nil, false
}

func (p *fastParser) literal(word string) bool {
	if len(p.b)-p.i >= len(word) && string(p.b[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

// fastField is a member of an object being read.
type fastField struct {
	key string
	val any
}

func (p *fastParser) object(depth int) (any, bool) {
	p.i++ // {
	var stack [8]fastField
	fields := stack[:0]
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return map[string]any{}, true
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		if len(fields) > 0 && k <= fields[len(fields)-1].key {
			p.loose = true // marshal sorts the keys; a repeated key is dropped
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		fields = append(fields, fastField{k, v})
		p.space()
		if p.i >= len(p.b) {
			return nil, false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			continue
		case '}':
			p.i++
			m := make(map[string]any, len(fields))
			for _, f := range fields {
				m[f.key] = f.val
			}
			return m, true
		}
		return nil, false
	}
}

func (p *fastParser) array(depth int) (any, bool) {
	p.i++ // [
	var stack [16]any
	items := stack[:0]
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return []any{}, true
	}
	for {
		p.space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		items = append(items, v)
		p.space()
		if p.i >= len(p.b) {
			return nil, false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			continue
		case ']':
			p.i++
			return append(make([]any, 0, len(items)), items...), true
		}
		return nil, false
	}
}

// str reads a string whose escapes, if any, are \" \\ \/ \b \f \n \r \t, and
// which holds no control character and only valid UTF-8.
func (p *fastParser) str() (string, bool) {
	p.i++ // "
	start := p.i
	ascii, escaped := true, false
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			raw := p.b[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(raw) {
				return "", false
			}
			if escaped || (!ascii && hasLineSeparator(raw)) {
				p.loose = true // marshal writes these escaped, or not
			}
			if !escaped {
				return intern(raw), true
			}
			return unescapeSimple(raw), true
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return "", false
			}
			switch p.b[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			default:
				return "", false
			}
			escaped = true
			p.i += 2
		case c < 0x20:
			return "", false
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			p.i++
		}
	}
	return "", false
}

// hasLineSeparator reports whether raw holds U+2028 or U+2029, which marshal
// escapes.
func hasLineSeparator(raw []byte) bool {
	for i := 0; i+2 < len(raw); i++ {
		if raw[i] == 0xe2 && raw[i+1] == 0x80 && (raw[i+2] == 0xa8 || raw[i+2] == 0xa9) {
			return true
		}
	}
	return false
}

// strValue reads a string as a value (an any holding it).
func (p *fastParser) strValue() (any, bool) {
	start := p.i
	s, ok := p.str()
	if !ok {
		return nil, false
	}
	if e := internedEntry(p.b[start+1 : p.i-1]); e != nil && e.s == s {
		return e.v, true // the string already boxed
	}
	return s, true
}

// interned holds short strings the parser has made, so that the keys and
// values that come again and again (field names above all) are allocated
// once: a slot keeps the last string that hashed to it, and the string as an
// any.
var interned [1024]atomic.Pointer[internEntry]

type internEntry struct {
	s string
	v any
}

// internMax is the longest string interned.
const internMax = 32

// internedEntry returns the slot's entry for b when it holds b.
func internedEntry(b []byte) *internEntry {
	if len(b) > internMax {
		return nil
	}
	if e := interned[internSlot(b)].Load(); e != nil && e.s == string(b) {
		return e
	}
	return nil
}

func internSlot(b []byte) uint32 {
	h := uint32(2166136261) // FNV-1a
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h % uint32(len(interned))
}

// intern returns b as a string, from interned when it is there.
func intern(b []byte) string {
	if len(b) > internMax {
		return string(b)
	}
	slot := &interned[internSlot(b)]
	if e := slot.Load(); e != nil && e.s == string(b) {
		return e.s
	}
	s := string(b)
	slot.Store(&internEntry{s: s, v: s})
	return s
}

func unescapeSimple(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default: // " \ /
			c = raw[i]
		}
		out = append(out, c)
	}
	return string(out)
}

// number reads an integer of at most 18 digits (an int64) or a decimal with
// a fraction, no exponent and at most 15 digits in all (a float64).
func (p *fastParser) number() (any, bool) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	intStart := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	intDigits := p.i - intStart
	if intDigits == 0 || (intDigits > 1 && p.b[intStart] == '0') {
		return nil, false
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return nil, false
	}
	if p.i >= len(p.b) || p.b[p.i] != '.' {
		if intDigits > 18 {
			return nil, false
		}
		var n int64
		for _, c := range p.b[intStart:p.i] {
			n = n*10 + int64(c-'0')
		}
		if intStart > start {
			n = -n
			if n == 0 {
				p.loose = true // -0 renders as 0
			}
		}
		return n, true
	}
	p.i++ // .
	fracStart := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	fracDigits := p.i - fracStart
	if fracDigits == 0 || intDigits+fracDigits > 15 {
		return nil, false
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return nil, false
	}
	f, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	if err != nil {
		return nil, false
	}
	if !p.loose {
		var buf [32]byte
		if string(appendFloat(buf[:0], f)) != string(p.b[start:p.i]) {
			p.loose = true // 1.50, 1.0: marshal writes 1.5, 1
		}
	}
	return f, true
}
