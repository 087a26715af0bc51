package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"

	"github.com/ora-runtime/ora/shared/ora"
)

// member is one key of an ordered JSON object.
type member struct {
	Key   string
	Value any
}

// object is a JSON object that keeps its keys in the order they were
// written: a model fills a tool's input in the order its schema lists the
// properties, so the order is part of the prompt (reason first, commit last).
type object []member

func (o object) get(key string) (any, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// parseOrdered decodes raw into JSON values whose objects are object (keys
// in order), arrays []any, numbers json.Number, and strings, bools and nil.
func parseOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o = append(o, member{Key: kt.(string), Value: v})
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token() // ']'
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

// marshalOrdered encodes a value from parseOrdered, keys in order.
func marshalOrdered(v any) []byte {
	var b bytes.Buffer
	writeOrdered(&b, v)
	return b.Bytes()
}

func writeOrdered(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case object:
		b.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(m.Key)
			b.Write(k)
			b.WriteByte(':')
			writeOrdered(b, m.Value)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeOrdered(b, x)
		}
		b.WriteByte(']')
	default:
		j, _ := json.Marshal(v)
		b.Write(j)
	}
}

// orderedDocument returns a document the SDK encodes with v's keys in
// order. The SDK's document encoder sorts map keys but writes struct fields
// in their declared order, so each object becomes a struct built for it
// whose `document` tags are the keys.
func orderedDocument(v any) document.Interface {
	return document.NewLazyDocument(toEncodable(v))
}

func toEncodable(v any) any {
	switch v := v.(type) {
	case object:
		fields := make([]reflect.StructField, 0, len(v))
		vals := make([]reflect.Value, 0, len(v))
		for i, m := range v {
			if m.Key == "" || m.Key == "-" || strings.ContainsAny(m.Key, ",\"`") {
				// A key no struct tag can carry: fall back to a map (sorted).
				mp := make(map[string]any, len(v))
				for _, m := range v {
					mp[m.Key] = toEncodable(m.Value)
				}
				return mp
			}
			x := toEncodable(m.Value)
			fields = append(fields, reflect.StructField{
				Name: "F" + strconv.Itoa(i),
				Type: reflect.TypeOf((*any)(nil)).Elem(),
				Tag:  reflect.StructTag(`document:"` + m.Key + `"`),
			})
			vals = append(vals, reflect.ValueOf(&x).Elem())
		}
		s := reflect.New(reflect.StructOf(fields)).Elem()
		for i, val := range vals {
			s.Field(i).Set(val)
		}
		return s.Interface()
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = toEncodable(x)
		}
		return out
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	}
	return v
}

// strictDropped are the keywords strictSchema leaves out: validation
// keywords outside the subset strict tool use accepts. The caller validates
// the model's answer against the full schema, so nothing is lost.
var strictDropped = map[string]bool{
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minLength": true, "maxLength": true,
	"maxItems": true, "uniqueItems": true, "minProperties": true, "maxProperties": true,
	"$schema": true,
}

// strictSchema returns a copy of an ordered schema in the subset strict
// tool use accepts: the keywords strictDropped lists left out, minItems
// above 1 left out, and additionalProperties false on every object schema
// that does not say it. Key order is kept.
func strictSchema(v any) any {
	switch v := v.(type) {
	case object:
		out := make(object, 0, len(v)+1)
		isObject := false
		hasAP := false
		for _, m := range v {
			if strictDropped[m.Key] {
				continue
			}
			if m.Key == "minItems" {
				if n, ok := m.Value.(json.Number); ok && n.String() != "0" && n.String() != "1" {
					continue
				}
			}
			if m.Key == "type" && m.Value == "object" {
				isObject = true
			}
			if m.Key == "additionalProperties" {
				hasAP = true
			}
			switch m.Key {
			case "properties", "$defs", "definitions":
				// A map of names to schemas: the names are not keywords.
				if props, ok := m.Value.(object); ok {
					p := make(object, len(props))
					for i, pm := range props {
						p[i] = member{pm.Key, strictSchema(pm.Value)}
					}
					out = append(out, member{m.Key, p})
					continue
				}
			case "enum", "const", "default", "examples", "required":
				out = append(out, m) // values, not schemas
				continue
			}
			out = append(out, member{m.Key, strictSchema(m.Value)})
		}
		if isObject && !hasAP {
			out = append(out, member{"additionalProperties", false})
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = strictSchema(x)
		}
		return out
	}
	return v
}

// StrictSchema returns schema as Converse sends it with strict tool use:
// the keywords outside the supported subset left out, additionalProperties
// false on every object, key order kept. Errors: EINVALID when schema is not
// JSON.
func StrictSchema(schema json.RawMessage) (json.RawMessage, error) {
	v, err := parseOrdered(schema)
	if err != nil {
		return nil, ora.Invalid("schema", "not JSON: %v", err)
	}
	return marshalOrdered(strictSchema(v)), nil
}

// Strict-mode limits per request (Anthropic's structured outputs page,
// "JSON Schema limitations", which Bedrock applies to Claude models).
const (
	MaxStrictTools     = 20
	MaxOptionalParams  = 24
	MaxUnionTypeParams = 16
)

// strictFormats are the string formats strict mode supports.
var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "uri": true, "ipv4": true, "ipv6": true, "uuid": true,
}

// strictAnnotations are keywords that describe and constrain nothing.
var strictAnnotations = map[string]bool{"title": true, "description": true, "default": true, "examples": true, "$comment": true}

// unsupportedPattern matches the regular-expression features strict mode
// refuses in "pattern": lookaround, backreferences, word boundaries.
var unsupportedPattern = regexp.MustCompile(`\(\?[=!<]|\\[1-9]|\\[bB]|\\k<`)

// StrictStats counts what strict mode limits across a request's schemas.
type StrictStats struct {
	// Optional counts properties not listed in their object's required.
	Optional int
	// Unions counts schemas with anyOf or a list of types.
	Unions int
}

// CheckStrict reports whether schema (a tool's input schema) is inside the
// JSON Schema subset Bedrock's strict tool use accepts, as Bedrock checks it
// before compiling the grammar (a 400 ValidationException otherwise):
//
//   - types object, array, string, integer, number, boolean, null (or a list);
//   - every object schema has additionalProperties false; required names only
//     declared properties;
//   - enum of strings, numbers, booleans or nulls; const; anyOf; allOf without
//     $ref; local $ref into $defs/definitions, never recursive;
//   - string formats date-time, time, date, duration, email, hostname, uri,
//     ipv4, ipv6, uuid; pattern without lookaround, backreferences or \b;
//   - minItems 0 or 1 and no other array, string or numeric constraint
//     (minimum, maximum, multipleOf, minLength, maxLength, maxItems, ...);
//   - no oneOf, not, if/then/else, prefixItems, patternProperties,
//     dependentSchemas, unevaluated*, propertyNames, contains.
//
// It returns the counts of optional and union-typed parameters, which a
// request bounds across all its strict tools (MaxOptionalParams,
// MaxUnionTypeParams). Errors: EINVALID naming the first violation and its
// location.
func CheckStrict(schema json.RawMessage) (StrictStats, error) {
	v, err := parseOrdered(schema)
	if err != nil {
		return StrictStats{}, ora.Invalid("schema", "not JSON: %v", err)
	}
	root, ok := v.(object)
	if !ok {
		return StrictStats{}, ora.Invalid("schema", "the input schema must be a JSON object")
	}
	if t, _ := root.get("type"); t != "object" {
		return StrictStats{}, ora.Invalid("schema", "the input schema's type must be object, not %v", t)
	}
	c := &strictChecker{root: root}
	if err := c.check(root, "#", nil); err != nil {
		return StrictStats{}, ora.Invalid("schema", "%v", err)
	}
	return c.stats, nil
}

type strictChecker struct {
	root  object
	stats StrictStats
}

func (c *strictChecker) check(v any, at string, refs []string) error {
	s, ok := v.(object)
	if !ok {
		if b, isBool := v.(bool); isBool && b {
			return nil // true: any value (used as "items": true)
		}
		return fmt.Errorf("at %s: a schema must be an object", at)
	}
	isObject := false
	for _, m := range s {
		k, x := m.Key, m.Value
		where := at + "/" + k
		switch {
		case strictAnnotations[k]:
		case k == "type":
			switch t := x.(type) {
			case string:
				if err := checkType(t, where); err != nil {
					return err
				}
				isObject = isObject || t == "object"
			case []any:
				c.stats.Unions++
				for _, e := range t {
					name, _ := e.(string)
					if err := checkType(name, where); err != nil {
						return err
					}
					isObject = isObject || name == "object"
				}
			default:
				return fmt.Errorf("at %s: type must be a string or a list of strings", where)
			}
		case k == "properties":
			props, ok := x.(object)
			if !ok {
				return fmt.Errorf("at %s: properties must be an object", where)
			}
			for _, p := range props {
				if err := c.check(p.Value, where+"/"+p.Key, refs); err != nil {
					return err
				}
			}
		case k == "required":
			req, ok := x.([]any)
			if !ok {
				return fmt.Errorf("at %s: required must be a list", where)
			}
			props, _ := s.get("properties")
			po, _ := props.(object)
			for _, r := range req {
				name, _ := r.(string)
				if _, ok := po.get(name); !ok {
					return fmt.Errorf("at %s: %q is required but not a declared property", where, name)
				}
			}
		case k == "additionalProperties":
			if x != false {
				return fmt.Errorf("at %s: additionalProperties must be false", where)
			}
		case k == "items":
			if err := c.check(x, where, refs); err != nil {
				return err
			}
		case k == "minItems":
			n, _ := x.(json.Number)
			if n.String() != "0" && n.String() != "1" {
				return fmt.Errorf("at %s: minItems %v is not supported (only 0 or 1)", where, x)
			}
		case k == "enum":
			vals, ok := x.([]any)
			if !ok || len(vals) == 0 {
				return fmt.Errorf("at %s: enum must be a non-empty list", where)
			}
			for _, e := range vals {
				switch e.(type) {
				case object, []any:
					return fmt.Errorf("at %s: enum values must be strings, numbers, booleans or null", where)
				}
			}
		case k == "const":
			switch x.(type) {
			case object, []any:
				return fmt.Errorf("at %s: const must be a string, number, boolean or null", where)
			}
		case k == "anyOf" || k == "allOf":
			alts, ok := x.([]any)
			if !ok || len(alts) == 0 {
				return fmt.Errorf("at %s: %s must be a non-empty list", where, k)
			}
			if k == "anyOf" {
				c.stats.Unions++
			}
			for i, a := range alts {
				if ao, ok := a.(object); ok && k == "allOf" {
					if _, ref := ao.get("$ref"); ref {
						return fmt.Errorf("at %s/%d: allOf with $ref is not supported", where, i)
					}
				}
				if err := c.check(a, fmt.Sprintf("%s/%d", where, i), refs); err != nil {
					return err
				}
			}
		case k == "$defs" || k == "definitions":
			defs, ok := x.(object)
			if !ok {
				return fmt.Errorf("at %s: %s must be an object", where, k)
			}
			for _, d := range defs {
				if err := c.check(d.Value, where+"/"+d.Key, refs); err != nil {
					return err
				}
			}
		case k == "$ref":
			ref, _ := x.(string)
			target, err := c.resolve(ref)
			if err != nil {
				return fmt.Errorf("at %s: %v", where, err)
			}
			for _, r := range refs {
				if r == ref {
					return fmt.Errorf("at %s: recursive schemas are not supported (%s refers to itself)", where, ref)
				}
			}
			if err := c.check(target, where, append(refs, ref)); err != nil {
				return err
			}
		case k == "format":
			f, _ := x.(string)
			if !strictFormats[f] {
				return fmt.Errorf("at %s: format %q is not supported", where, f)
			}
		case k == "pattern":
			p, _ := x.(string)
			if unsupportedPattern.MatchString(p) {
				return fmt.Errorf("at %s: pattern %q uses lookaround, a backreference or a word boundary", where, p)
			}
		default:
			return fmt.Errorf("at %s: keyword %q is not supported by strict tool use", where, k)
		}
	}
	if isObject {
		if ap, ok := s.get("additionalProperties"); !ok || ap != false {
			return fmt.Errorf("at %s: an object schema needs additionalProperties false", at)
		}
		props, _ := s.get("properties")
		po, _ := props.(object)
		req, _ := s.get("required")
		rl, _ := req.([]any)
		c.stats.Optional += len(po) - len(rl)
	}
	return nil
}

func checkType(t, where string) error {
	switch t {
	case "object", "array", "string", "integer", "number", "boolean", "null":
		return nil
	}
	return fmt.Errorf("at %s: type %q is not a JSON Schema type", where, t)
}

// resolve returns the schema a local $ref points at.
func (c *strictChecker) resolve(ref string) (any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("$ref %q: only local references (#/$defs/...) are supported", ref)
	}
	var cur any = c.root
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		o, ok := cur.(object)
		if !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
		if cur, ok = o.get(part); !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	return cur, nil
}
