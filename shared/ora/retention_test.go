package ora

import (
	"strings"
	"testing"
	"time"
)

func TestParseRetention(t *testing.T) {
	day := 24 * time.Hour
	for _, tt := range []struct {
		name, in string
		want     Retention
		field    string // "" when valid; else a word the error names
	}{
		{"the default's form", DefaultRetention().String(), DefaultRetention(), ""},
		{"shorter packets", "observed-fact=336h, orientation-packet=168h", Retention{KindObservedFact: 14 * day, KindOrientationPacket: 7 * day}, ""},
		{"nothing expires", "", Retention{}, ""},
		{"packets only (facts kept)", "orientation-packet=24h", Retention{KindOrientationPacket: day}, ""},
		{"not a pair", "observed-fact", nil, "kind=duration"},
		{"an unknown kind", "observed-facts=24h", nil, "observed-facts"},
		{"not a duration", "observed-fact=30d,orientation-packet=24h", nil, "30d"},
		{"named twice", "observed-fact=24h,observed-fact=48h,orientation-packet=1h", nil, "twice"},
		{"under a minute", "observed-fact=30s,orientation-packet=30s", nil, "less than a minute"},
		{"packets outlive facts", "observed-fact=24h,orientation-packet=48h", nil, "no later than"},
		{"facts expire, packets kept", "observed-fact=24h", nil, "no later than"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRetention(tt.in)
			if tt.field != "" {
				if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), tt.field) {
					t.Fatalf("error %v, want EINVALID naming %q", err, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%v, want %v", got, tt.want)
			}
			for k, d := range tt.want {
				if got[k] != d {
					t.Errorf("%s: %v, want %v", k, got[k], d)
				}
			}
			if again, err := ParseRetention(got.String()); err != nil || again.String() != got.String() {
				t.Errorf("String %q does not read back (%v)", got.String(), err)
			}
		})
	}
}
