package telemetry_test

import (
	"regexp"
	"testing"

	"github.com/ora-runtime/ora/shared/telemetry"
)

func TestTraceIDOf(t *testing.T) {
	xray := regexp.MustCompile(`^1-[0-9a-f]{8}-[0-9a-f]{24}$`)
	tests := []struct {
		name, header, wave, want string
	}{
		// The header's form in AWS's X-Ray documentation.
		{"the Root of a Lambda trace header", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", "w1", "1-5759e988-bd862e3fe1be46a994272793"},
		{"Root not first", "Parent=53995c3f42cd8ad8; Root=1-5759e988-bd862e3fe1be46a994272793", "w1", "1-5759e988-bd862e3fe1be46a994272793"},
		{"a bare trace id", "1-5759e988-bd862e3fe1be46a994272793", "w1", "1-5759e988-bd862e3fe1be46a994272793"},
		{"no wave, no header", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := telemetry.TraceIDOf(tt.header, tt.wave); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("outside Lambda, derived from the wave", func(t *testing.T) {
		a, b := telemetry.TraceIDOf("", "sig-a"), telemetry.TraceIDOf("", "sig-b")
		if !xray.MatchString(a) || a == b || a != telemetry.TraceIDOf("", "sig-a") {
			t.Errorf("got %q and %q: want X-Ray's form, one per wave, stable", a, b)
		}
	})
}
