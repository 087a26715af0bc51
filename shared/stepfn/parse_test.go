package stepfn

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

func TestFastParse(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		ok   bool
	}{
		{"object", `{"a": 1, "b": [true, false, null], "c": {"d": "e"}}`, true},
		{"empty containers", ` { "a" : { } , "b" : [ ] } `, true},
		{"negative and decimal", `[-12, 0, 3.25, -0.5]`, true},
		{"simple escapes", `"a\"b\\c\/d\n\t"`, true},
		{"unicode text", `{"k": "héllo ✓"}`, true},
		{"duplicate key", `{"a": 1, "a": 2}`, true},
		{"unicode escape", `"\u00e9"`, false},
		{"exponent", `1e3`, false},
		{"long integer", `12345678901234567890`, false},
		{"leading zero", `01`, false},
		{"trailing garbage", `{} x`, false},
		{"invalid UTF-8", "\"\xff\"", false},
		{"control character", "\"a\tb\"", false},
		{"empty", ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := fastParse([]byte(tt.doc))
			if ok != tt.ok {
				t.Fatalf("fastParse(%s) ok = %v, want %v", tt.doc, ok, tt.ok)
			}
			if !ok {
				return
			}
			want, err := ojgParse([]byte(tt.doc))
			if err != nil {
				t.Fatalf("ojg rejects %s (%v) which fastParse accepts", tt.doc, err)
			}
			if !sameValue(got, want) {
				t.Errorf("fastParse(%s) = %#v, ojg gives %#v", tt.doc, got, want)
			}
		})
	}
}

// FuzzFastParse checks that whatever fastParse accepts, ojg (which parseJSON
// falls back to) decodes to the same value, and that jsonSize measures what
// marshal renders.
func FuzzFastParse(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2,3.5,"x\n",true,null,{}]}`, `[]`, `"\u00e9"`, `-0.0`, `1.5e3`, `{"a":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if v, err := parseJSON([]byte(doc)); err == nil {
			if size, want := jsonSize(v, math.MaxInt), len(marshal(v)); size != want {
				t.Fatalf("jsonSize(%q) = %d, want %d", doc, size, want)
			}
		}
		got, canonical, ok := fastParseCanonical([]byte(doc))
		if !ok {
			return
		}
		if canonical && string(marshal(got)) != doc {
			t.Fatalf("fastParseCanonical(%q) says canonical, marshal gives %s", doc, marshal(got))
		}
		want, err := ojgParse([]byte(doc))
		if err != nil {
			t.Fatalf("ojg rejects %q (%v) which fastParse accepts", doc, err)
		}
		if !sameValue(got, want) {
			t.Fatalf("fastParse(%q) = %#v, ojg gives %#v", doc, got, want)
		}
	})
}

// sameValue compares two values by type and content, and by how they render.
func sameValue(a, b any) bool {
	return reflect.DeepEqual(a, b) && string(marshal(a)) == string(marshal(b))
}

func TestStartCheckpoint(t *testing.T) {
	tests := []struct{ name, state, input string }{
		{"plain", "Start", `{"a":[1,"x"],"b":{"c":null}}`},
		{"escapes", "with \"quotes\", <html> & \\", `"s"`},
		{"unicode", "é✓\u2028", `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := string(marshal(&frameCP{State: tt.state, Input: []byte(tt.input)}))
			if got := string(startCheckpoint(tt.state, []byte(tt.input))); got != want {
				t.Errorf("startCheckpoint(%q) = %s, want %s", tt.state, got, want)
			}
		})
	}
}

func TestJSONSize(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"scalars", []any{nil, true, false, int64(-12), 0, 1.5, 1e21, 1e-7, math.Copysign(0, -1), 123456789.125}},
		{"escapes", "quote\" backslash\\ newline\n tab\t ctl\x01 \x7f"},
		{"unicode", "é ✓ \u2028 \u2029 invalid \xff\xfe end"},
		{"nested", map[string]any{"a": []any{map[string]any{}, []any{}}, "k\"ey": "v", "": nil}},
		{"raw", json.RawMessage(`{"x": 1}`)},
		{"other type", map[string]int{"a": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := len(marshal(tt.v))
			if got := jsonSize(tt.v, math.MaxInt); got != want {
				t.Errorf("jsonSize = %d, want len(marshal) = %d (%s)", got, want, marshal(tt.v))
			}
			if jsonSizeExceeds(tt.v, want) || !jsonSizeExceeds(tt.v, want-1) {
				t.Errorf("jsonSizeExceeds disagrees with the size %d", want)
			}
		})
	}
}
