package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 9998) + "1" + strings.Repeat("}", 9998)
	tests := []struct {
		name      string
		raw       string
		o         RenderOptions
		want      string
		truncated bool
	}{
		{"indents in key order", `{"b":1,"a":[true,null,"x<y"],"c":{}}`, RenderOptions{},
			"{\n  \"b\": 1,\n  \"a\": [\n    true,\n    null,\n    \"x\\u003cy\"\n  ],\n  \"c\": {}\n}", false},
		{"numbers keep their digits", `[1.50,12345678901234567890]`, RenderOptions{}, "[\n  1.50,\n  12345678901234567890\n]", false},
		{"secret keys are redacted", `{"task_token":{"x":1},"ok":"y"}`, RenderOptions{SecretKey: func(k string) bool { return k == "task_token" }},
			"{\n  \"task_token\": \"[redacted]\",\n  \"ok\": \"y\"\n}", false},
		{"deeper than the bound", `{"a":{"b":{"c":[1]}}}`, RenderOptions{MaxDepth: 2},
			"{\n  \"a\": {\n    \"b\": \"… 2 levels more\"\n  }\n}", true},
		{"not JSON", `hello {`, RenderOptions{}, "hello {", false},
		{"cut JSON", `{"a":`, RenderOptions{}, `{"a":`, false},
		{"trailing data", `{} x`, RenderOptions{}, `{} x`, false},
		{"empty", ``, RenderOptions{}, ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Render([]byte(tt.raw), tt.o)
			if got.Text != tt.want || got.Truncated != tt.truncated || got.Size != len(tt.raw) {
				t.Errorf("got %q (truncated %v, size %d), want %q (truncated %v, size %d)", got.Text, got.Truncated, got.Size, tt.want, tt.truncated, len(tt.raw))
			}
		})
	}
	t.Run("the same as MarshalIndent on a plain body", func(t *testing.T) {
		raw := `{"id":"sig-1","payload":{"confidence":"high","n":[1,2,{"k":"v"}]},"empty":[]}`
		var v any
		_ = json.Unmarshal([]byte(raw), &v)
		// Key order differs from MarshalIndent's sorted one; compare as values.
		var back any
		if err := json.Unmarshal([]byte(Render([]byte(raw), RenderOptions{}).Text), &back); err != nil {
			t.Fatalf("rendered text is not JSON: %v", err)
		}
		a, _ := json.Marshal(v)
		b, _ := json.Marshal(back)
		if string(a) != string(b) {
			t.Errorf("got %s, want %s", b, a)
		}
	})
	t.Run("a body nested 9,998 levels deep", func(t *testing.T) {
		got := Render([]byte(deep), RenderOptions{})
		if !got.Truncated || len(got.Text) > 4<<10 || !strings.Contains(got.Text, "levels more") {
			t.Errorf("rendered %d bytes (truncated %v); want under 4 KiB with a marker", len(got.Text), got.Truncated)
		}
	})
	t.Run("a large body is cut with its size", func(t *testing.T) {
		raw := `["` + strings.Repeat("x", 200<<10) + `"]`
		got := Render([]byte(raw), RenderOptions{MaxBytes: 1000})
		if !got.Truncated || len(got.Text) > 200<<10 || !strings.HasSuffix(got.Text, "… truncated, 204804 bytes") {
			t.Errorf("got %d bytes ending %q", len(got.Text), got.Text[max(0, len(got.Text)-40):])
		}
	})
}
