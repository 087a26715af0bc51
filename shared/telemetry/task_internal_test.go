package telemetry

import (
	"reflect"
	"testing"
)

// The wrapper decodes the top level of a task's payload: scalars, and the
// objects it reads members of; facts and other nested values are skipped.
func TestDecodeObject(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]any
	}{
		{"scalars", `{"signal_id":"s1","job_count":3,"ok":true,"none":null}`,
			map[string]any{"signal_id": "s1", "job_count": 3.0, "ok": true, "none": nil}},
		{"nested skipped", `{"wave_id":"w1","facts":[{"id":"f1"}],"packet":{"digest":"d"}}`,
			map[string]any{"wave_id": "w1"}},
		{"objects read", `{"BatchInput":{"signal_id":"s2"},"failure":{"Error":"States.Timeout"}}`,
			map[string]any{"BatchInput": map[string]any{"signal_id": "s2"}, "failure": map[string]any{"Error": "States.Timeout"}}},
		{"not an object", `["a"]`, nil},
		{"not JSON", `{"a":`, nil},
		{"empty", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decodeObject([]byte(tt.in)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decodeObject(%s) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}
