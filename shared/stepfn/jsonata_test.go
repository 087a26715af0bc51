package stepfn

import (
	"encoding/json"
	"testing"
)

// TestJSONataFunctions checks AWS's JSONata functions and the errors they
// raise, through the evaluator the engine uses.
func TestJSONataFunctions(t *testing.T) {
	tests := []struct {
		expr    string
		want    string // JSON; "" with wantErr
		wantErr string
	}{
		{"$partition([1, 2, 3, 4, 5, 6, 7, 8, 9], 3)", `[[1,2,3],[4,5,6],[7,8,9]]`, ""},
		{"$partition([1, 2, 3, 4, 5], 2)", `[[1,2],[3,4],[5]]`, ""},
		{"$partition([], 2)", `[]`, ""},
		{"$partition([1, 2], 0)", "", ErrQueryEvaluation},
		{"$partition([1, 2], 1.5)", "", ErrQueryEvaluation},
		{"$partition()", "", ErrQueryEvaluation},
		{"$range(1, 3, 1)", `[1,2,3]`, ""},
		{"$range(3, 1, -1)", `[3,2,1]`, ""},
		{"$range(1, 0, 1)", `[]`, ""},
		{"$range(0, 5, 0)", "", ErrQueryEvaluation},
		{"$range(0, 5000, 1)", "", ErrQueryEvaluation},
		{"$hash('abc', 'SHA-1')", `"a9993e364706816aba3e25717850c26c9cd0d89d"`, ""},
		{"$hash('abc', 'CRC32')", "", ErrQueryEvaluation},
		{"$parse('[1,{\"a\":true}]')", `[1,{"a":true}]`, ""},
		{"$parse('{')", "", ErrQueryEvaluation},
		{"$length($uuid())", `36`, ""},
		{"$random() >= 0 and $random() < 1", `true`, ""},
		{"$states.input.n + $v", `5`, ""},
		{"$states.input.missing", "", ErrQueryEvaluation},
		{"$states.input.n + 'x'", "", ErrQueryEvaluation},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			env := &jenv{states: map[string]any{"input": map[string]any{"n": int64(2)}}, vars: &scope{own: map[string]any{"v": int64(3)}}}
			v, serr := env.run(tt.expr)
			if tt.wantErr != "" {
				if serr == nil || serr.Name != tt.wantErr {
					t.Fatalf("error = %v, want %s", serr, tt.wantErr)
				}
				return
			}
			if serr != nil {
				t.Fatalf("error = %s: %s", serr.Name, serr.Cause)
			}
			var want any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if got, w := string(marshal(v)), string(marshal(plain(want))); got != w {
				t.Errorf("= %s, want %s", got, w)
			}
		})
	}
}
