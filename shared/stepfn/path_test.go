package stepfn

import (
	"encoding/json"
	"testing"
)

func TestMemberNamesWithHyphen(t *testing.T) {
	input := map[string]any{}
	if err := json.Unmarshal([]byte(`{"delivery-partner":{"name":"Zoom-Co","zone-ids":[7,8]},"detail-type":"Order","a":{"b-c":{"d":1}},"x":[{"k-1":"v"}]}`), &input); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want string // JSON of the value; "" means the path is rejected
	}{
		{"$.delivery-partner", `{"name":"Zoom-Co","zone-ids":[7,8]}`},
		{"$.delivery-partner.name", `"Zoom-Co"`},
		{"$.delivery-partner.zone-ids[1]", `8`},
		{"$.detail-type", `"Order"`},
		{"$.a.b-c.d", `1`},
		{"$.x[0].k-1", `"v"`},
		{"$['delivery-partner'].name", `"Zoom-Co"`},
		{"$$.Execution.Input.detail-type", `"Order"`},
		{"$..k-1", `["v"]`},
		{"$.x[?(@.n == 'a-b')]", `[]`}, // quoted text is left as written
		{"delivery-partner", ``},
		{"$.delivery-partner[", ``},
	}
	ctx := map[string]any{"Execution": map[string]any{"Input": input}}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p, err := compilePath(tt.path)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("compilePath accepted %q, want an error", tt.path)
				}
				return
			}
			if err != nil {
				t.Fatalf("compilePath: %v", err)
			}
			v, ok := p.get(input, ctx)
			if !ok {
				t.Fatalf("path found nothing, want %s", tt.want)
			}
			b, _ := json.Marshal(v)
			if string(b) != tt.want {
				t.Errorf("value = %s, want %s", b, tt.want)
			}
		})
	}
}
