package stepfn

import (
	"testing"
	"time"
)

// TestEventTimestamps checks that an event keeps its timestamp exactly, in
// its zone, whether it holds it as Unix nanoseconds (UTC, local time) or in
// its HistoryEvent (any other zone, a time beyond what nanoseconds hold).
func TestEventTimestamps(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.UTC)
	tests := []struct {
		name string
		t    time.Time
	}{
		{"utc", at},
		{"local", at.Local()},
		{"fixed zone", at.In(time.FixedZone("X", 5*3600))},
		{"zero time", time.Time{}},
		{"year 3000", time.Date(3000, 1, 1, 0, 0, 0, 1, time.UTC)},
		{"monotonic reading", time.Now()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := storedEvent{kind: evLambdaStarted, Prev: 3}
			ev.setTime(tt.t, 4)
			got := ev.expand(4)
			want := tt.t.Round(0) // no monotonic reading
			if got.Timestamp != want {
				t.Errorf("timestamp = %#v, want %#v", got.Timestamp, want)
			}
			if got.Type != "LambdaFunctionStarted" || got.ID != 4 || got.PreviousEventID != 3 {
				t.Errorf("event = %+v, want LambdaFunctionStarted 4 after 3", got)
			}
		})
	}
}
