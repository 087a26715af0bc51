package stepfn

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// decodeEvent is an event with a field of every kind the struct decoder sets
// itself, and fields it hands to json.Unmarshal.
type decodeEvent struct {
	SignalID string            `json:"signal_id"`
	Item     int               `json:"item"`
	Small    int8              `json:"small"`
	Count    uint16            `json:"count,omitempty"`
	Ratio    float32           `json:"ratio"`
	Score    float64           `json:"score"`
	OK       bool              `json:"ok"`
	Name     string            // no tag: its Go name
	Skipped  string            `json:"-"`
	Tags     []string          `json:"tags"`
	Meta     map[string]any    `json:"meta"`
	Next     *decodeEvent      `json:"next"`
	When     time.Time         `json:"when"`
	Raw      json.RawMessage   `json:"raw"`
	Labels   map[string]string `json:"labels"`
	hidden   string
}

// decodeCases are payloads for the struct decoder, each with whether it
// decodes them itself (false: it leaves them to json.Unmarshal).
var decodeCases = []struct {
	name    string
	payload string
	fast    bool
}{
	{"empty object", `{}`, true},
	{"fields", `{"signal_id":"sig-1","item":3,"small":-7,"count":9,"ratio":0.5,"score":-1.25e2,"ok":true,"Name":"n"}`, true},
	{"spaces", " \n{ \"signal_id\" : \"a\" , \"item\" : 0 }\t", true},
	{"case-insensitive key", `{"SIGNAL_ID":"a","name":"b","Ok":true}`, true},
	{"duplicate key, last wins", `{"item":1,"item":2}`, true},
	{"null leaves the field", `{"signal_id":null,"item":null,"ok":null}`, true},
	{"unknown fields skipped", `{"x":{"a":[1,2.5e-3,"s",true,false,null,{}]},"y":[],"signal_id":"z"}`, true},
	{"field json.Unmarshal decodes", `{"tags":["a","b"],"meta":{"k":[1]},"next":{"item":4},"when":"2024-01-02T03:04:05Z","raw":{"a" : 1},"labels":{"a":"b"}}`, true},
	{"null into a pointer", `{"next":null,"tags":null}`, true},
	{"simple escapes", `{"signal_id":"a\"b\\c\/d\n\t"}`, true},
	{"UTF-8", `{"signal_id":"héllo ☃"}`, true},
	{"tag \"-\" is no name", `{"-":"x","Skipped":"y"}`, true},
	{"unexported field ignored", `{"hidden":"x"}`, true},
	{"int max", `{"small":127}`, true},
	{"negative zero int", `{"item":-0}`, true},
	{"float32 exponent", `{"ratio":1e10}`, true},
	{"unicode escape", `{"signal_id":"\u00e9"}`, false},
	{"invalid UTF-8", "{\"signal_id\":\"\xff\"}", false},
	{"int overflow", `{"small":128}`, false},
	{"fraction into int", `{"item":1.0}`, false},
	{"exponent into int", `{"item":1e2}`, false},
	{"negative into uint", `{"count":-1}`, false},
	{"float32 overflow", `{"ratio":1e39}`, false},
	{"string into int", `{"item":"1"}`, false},
	{"number into string", `{"signal_id":1}`, false},
	{"string into bool", `{"ok":"true"}`, false},
	{"wrong type in a delegated field", `{"tags":"a"}`, false},
	{"null", `null`, false},
	{"array", `[1]`, false},
	{"empty", ``, false},
	{"trailing value", `{"item":1} {"item":2}`, false},
	{"not closed", `{"item":1`, false},
	{"trailing comma", `{"item":1,}`, false},
	{"leading zero", `{"item":01}`, false},
	{"bad literal", `{"x":tru}`, false},
	{"control character", "{\"signal_id\":\"a\x01\"}", false},
	{"bad escape", `{"signal_id":"\x"}`, false},
	{"missing colon", `{"item" 1}`, false},
	{"bare key", `{item:1}`, false},
}

// TestStructDecoderMatchesUnmarshal decodes each payload with the struct
// decoder and with json.Unmarshal: where the decoder decodes it, both give the
// same event; it leaves alone exactly the payloads it should.
func TestStructDecoderMatchesUnmarshal(t *testing.T) {
	dec := newStructDecoder(reflect.TypeFor[decodeEvent]())
	if dec == nil {
		t.Fatal("newStructDecoder(decodeEvent) = nil, want a decoder")
	}
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			var got, want decodeEvent
			ok := dec.decode([]byte(tc.payload), reflect.ValueOf(&got).Elem())
			if ok != tc.fast {
				t.Fatalf("decode(%q) ok = %v, want %v", tc.payload, ok, tc.fast)
			}
			if !ok {
				return
			}
			if err := json.Unmarshal([]byte(tc.payload), &want); err != nil {
				t.Fatalf("json.Unmarshal(%q) = %v, but the decoder accepted it", tc.payload, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decode(%q) = %+v, json.Unmarshal gives %+v", tc.payload, got, want)
			}
			if got.hidden != "" {
				t.Fatalf("decode(%q) set the unexported field to %q", tc.payload, got.hidden)
			}
		})
	}
}

// TestNewStructDecoderRefuses lists the types whose decoding the decoder
// leaves to json.Unmarshal.
func TestNewStructDecoderRefuses(t *testing.T) {
	type embedded struct{ A string }
	tests := []struct {
		name string
		typ  reflect.Type
		want bool
	}{
		{"flat struct", reflect.TypeFor[struct {
			A string `json:"a"`
		}](), true},
		{"not a struct", reflect.TypeFor[map[string]any](), false},
		{"pointer to struct", reflect.TypeFor[*decodeEvent](), false},
		{"decodes itself", reflect.TypeFor[time.Time](), false},
		{"embedded field", reflect.TypeFor[struct{ embedded }](), false},
		{"string option", reflect.TypeFor[struct {
			N int `json:"n,string"`
		}](), false},
		{"tag name with punctuation", reflect.TypeFor[struct {
			N int `json:"a-b"`
		}](), false},
		{"names equal ignoring case", reflect.TypeFor[struct {
			A int `json:"x"`
			B int `json:"X"`
		}](), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := newStructDecoder(tc.typ) != nil; got != tc.want {
				t.Fatalf("newStructDecoder(%v) != nil is %v, want %v", tc.typ, got, tc.want)
			}
		})
	}
}

// FuzzStructDecoder wants the struct decoder to decode every payload it
// accepts as json.Unmarshal does.
func FuzzStructDecoder(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add(tc.payload)
	}
	dec := newStructDecoder(reflect.TypeFor[decodeEvent]())
	f.Fuzz(func(t *testing.T, payload string) {
		var got, want decodeEvent
		if !dec.decode([]byte(payload), reflect.ValueOf(&got).Elem()) {
			return
		}
		if err := json.Unmarshal([]byte(payload), &want); err != nil {
			t.Fatalf("json.Unmarshal(%q) = %v, but the decoder accepted it", payload, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decode(%q) = %+v, json.Unmarshal gives %+v", payload, got, want)
		}
		if strings.TrimSpace(payload) == "" {
			t.Fatalf("decode accepted an empty payload")
		}
	})
}
