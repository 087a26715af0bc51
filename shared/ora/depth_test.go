package ora

import (
	"strings"
	"testing"
)

func TestCheckDepth(t *testing.T) {
	deep := strings.Repeat("[", 9998) + strings.Repeat("]", 9998)
	tests := []struct {
		name string
		body string
		want int // Deeper's offset, -1 for none
	}{
		{"flat", `{"a":1}`, -1},
		{"exactly the limit", strings.Repeat("[", 3) + strings.Repeat("]", 3), -1},
		{"one over the limit", `{"a":[[{"b":1}]]}`, 7},
		{"brackets inside strings do not count", `{"a":"[[[[{{{{"}`, -1},
		{"an escaped quote keeps the string open", `{"a":"\"[[[[["}`, -1},
		{"9,998 levels", deep, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Deeper([]byte(tt.body), 3); got != tt.want {
				t.Errorf("Deeper = %d, want %d", got, tt.want)
			}
			err := CheckDepth([]byte(tt.body), 3)
			if (err != nil) != (tt.want >= 0) {
				t.Errorf("CheckDepth = %v", err)
			}
			if err != nil && (ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "deeper than 3 levels")) {
				t.Errorf("CheckDepth error %v, want EINVALID naming the limit", err)
			}
		})
	}
}
