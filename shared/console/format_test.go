package console

import "testing"

type fixedMetrics map[string]float64

func (f fixedMetrics) Value(name string, _ ...string) float64 { return f[name] }

// The metrics page words a wait and a cost as a person reads them, not as
// a float (it showed "Oldest pending approval (s) 16.222015052").
func TestMetricWords(t *testing.T) {
	tests := []struct {
		name  string
		value float64
		fn    func(Metrics, string) string
		want  string
	}{
		{"no wait", 0, age, "none"},
		{"seconds", 16.222015052, age, "16s"},
		{"minutes", 250.4, age, "4m10s"},
		{"hours", 7530, age, "2h6m0s"},
		{"cents", 0.21456, money, "$0.215"},
		{"dollars", 12.345, money, "$12.35"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.fn(fixedMetrics{"m": tt.value}, "m"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got := age(nil, "m"); got != "-" {
		t.Errorf("no metrics: %q", got)
	}
}
