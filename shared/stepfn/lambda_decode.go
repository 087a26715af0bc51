package stepfn

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// structDecoder decodes a JSON object into a struct as encoding/json's
// Unmarshal does, for the events handlers take most: structs of named
// fields. It reads the payload once, with no reflection beyond setting the
// fields, where Unmarshal validates it first and then decodes it through its
// generic decoder. It covers what it decodes exactly as Unmarshal does and
// reports ok false for anything else (a payload that is not an object, a
// string with an escape beyond the simple ones or invalid UTF-8, a number a
// field does not take, deep nesting, invalid JSON), which the handler then
// leaves to Unmarshal (FuzzStructDecoder compares the two).
type structDecoder struct {
	fields []decodeField
}

// decodeField is a field of the struct an event decodes into.
type decodeField struct {
	name  string
	index int
	kind  reflect.Kind // the kind set directly, or reflect.Invalid: decoded by json.Unmarshal
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// unmarshals reports whether values of t, or pointers to them, decode
// themselves.
func unmarshals(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshalerType) || p.Implements(jsonUnmarshalerType) ||
		t.Implements(textUnmarshalerType) || p.Implements(textUnmarshalerType)
}

// newStructDecoder returns the decoder of t, or nil when t is not a struct it
// decodes as encoding/json does: a struct that decodes itself, or with an
// embedded field, a field whose JSON name is not plain letters, digits and
// underscores, the ",string" option, or two names that match the same key.
func newStructDecoder(t reflect.Type) *structDecoder {
	if t.Kind() != reflect.Struct || unmarshals(t) {
		return nil
	}
	d := &structDecoder{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for opt := range strings.SplitSeq(opts, ",") {
			if opt == "string" {
				return nil
			}
		}
		if name == "" {
			name = sf.Name
		}
		if !plainName(name) {
			return nil
		}
		for _, f := range d.fields {
			if strings.EqualFold(f.name, name) {
				return nil
			}
		}
		f := decodeField{name: name, index: i}
		if !unmarshals(sf.Type) {
			switch k := sf.Type.Kind(); k {
			case reflect.String, reflect.Bool,
				reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
				reflect.Float32, reflect.Float64:
				f.kind = k
			}
		}
		d.fields = append(d.fields, f)
	}
	return d
}

// plainName reports whether name is made of ASCII letters, digits and
// underscores only (encoding/json takes any such tag name as it is).
func plainName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// field returns the field key names as encoding/json picks it: the field of
// that exact name, else the one whose name matches it ignoring case.
func (d *structDecoder) field(key string) *decodeField {
	for i := range d.fields {
		if d.fields[i].name == key {
			return &d.fields[i]
		}
	}
	for i := range d.fields {
		if strings.EqualFold(d.fields[i].name, key) {
			return &d.fields[i]
		}
	}
	return nil
}

// decode decodes payload into v (a settable struct of the decoder's type).
// When ok is false v may be partly set.
func (d *structDecoder) decode(payload []byte, v reflect.Value) (ok bool) {
	p := fastParser{b: payload}
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return false
	}
	p.i++
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
	} else {
		for {
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return false
			}
			key, ok := p.str()
			if !ok {
				return false
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return false
			}
			p.i++
			p.space()
			if f := d.field(key); f != nil {
				if !p.setField(v.Field(f.index), f.kind) {
					return false
				}
			} else if !p.skip(1) {
				return false
			}
			more, ok := p.next('}')
			if !ok {
				return false
			}
			if !more {
				break
			}
		}
	}
	p.space()
	return p.i == len(p.b)
}

// setField reads the value at p into the field fv, of kind k (Invalid: one
// json.Unmarshal decodes).
func (p *fastParser) setField(fv reflect.Value, k reflect.Kind) bool {
	if k == reflect.Invalid {
		start := p.i
		if !p.skip(1) {
			return false
		}
		return json.Unmarshal(p.b[start:p.i], fv.Addr().Interface()) == nil
	}
	if p.literal("null") {
		return true // encoding/json leaves a field of these kinds as it is
	}
	if p.i >= len(p.b) {
		return false
	}
	switch k {
	case reflect.String:
		if p.b[p.i] != '"' {
			return false
		}
		s, ok := p.str()
		if ok {
			fv.SetString(s)
		}
		return ok
	case reflect.Bool:
		switch {
		case p.literal("true"):
			fv.SetBool(true)
		case p.literal("false"):
			fv.SetBool(false)
		default:
			return false
		}
		return true
	}
	lit, isInt, ok := p.numberLiteral()
	if !ok {
		return false
	}
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if !isInt {
			return false
		}
		n, err := strconv.ParseInt(string(lit), 10, 64)
		if err != nil || fv.OverflowInt(n) {
			return false
		}
		fv.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !isInt || lit[0] == '-' {
			return false
		}
		n, err := strconv.ParseUint(string(lit), 10, 64)
		if err != nil || fv.OverflowUint(n) {
			return false
		}
		fv.SetUint(n)
	default: // Float32, Float64
		n, err := strconv.ParseFloat(string(lit), fv.Type().Bits())
		if err != nil || fv.OverflowFloat(n) {
			return false
		}
		fv.SetFloat(n)
	}
	return true
}

// numberLiteral reads a JSON number and returns it as written, and whether it
// has neither a fraction nor an exponent.
func (p *fastParser) numberLiteral() (lit []byte, isInt, ok bool) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	intStart := p.i
	if n := digits(); n == 0 || (n > 1 && p.b[intStart] == '0') {
		return nil, false, false
	}
	isInt = true
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, false, false
		}
		isInt = false
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false, false
		}
		isInt = false
	}
	return p.b[start:p.i], isInt, true
}

// next reads what follows a member of an object or array: a comma (more
// true: another member follows) or end, closing it (more false); ok is
// false for anything else.
func (p *fastParser) next(end byte) (more, ok bool) {
	p.space()
	switch {
	case p.i >= len(p.b):
		return false, false
	case p.b[p.i] == ',':
		p.i++
		return true, true
	case p.b[p.i] == end:
		p.i++
		return false, true
	}
	return false, false
}

// skip reads past one JSON value, checking it.
func (p *fastParser) skip(depth int) bool {
	if p.i >= len(p.b) || depth > fastMaxDepth {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		p.i++
		p.space()
		if p.i < len(p.b) && p.b[p.i] == end {
			p.i++
			return true
		}
		for {
			p.space()
			if c == '{' {
				if p.i >= len(p.b) || p.b[p.i] != '"' {
					return false
				}
				if !p.skipStr() {
					return false
				}
				p.space()
				if p.i >= len(p.b) || p.b[p.i] != ':' {
					return false
				}
				p.i++
				p.space()
			}
			if !p.skip(depth + 1) {
				return false
			}
			more, ok := p.next(end)
			if !ok || !more {
				return ok
			}
		}
	case c == '"':
		return p.skipStr()
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, ok := p.numberLiteral()
		return ok
	}
	return p.literal("true") || p.literal("false") || p.literal("null")
}

// skipStr reads past a string str reads, without making it.
func (p *fastParser) skipStr() bool {
	p.i++ // "
	start := p.i
	ascii := true
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			raw := p.b[start:p.i]
			p.i++
			return ascii || utf8.Valid(raw)
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return false
			}
			switch p.b[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			default:
				return false
			}
			p.i += 2
		case c < 0x20:
			return false
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			p.i++
		}
	}
	return false
}
