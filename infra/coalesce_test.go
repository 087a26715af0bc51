package main

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/observe"
)

// ora:coalesceWindowMs reaches every observer as ORA_COALESCE_WINDOW_MS and
// ora:coalesceSources as ORA_COALESCE_SOURCES (the JSON observe.EnvOptions
// reads), and no other function; without them no function has the variables.
func TestCoalesceWindowReachesObservers(t *testing.T) {
	synth(t)
	observers := map[string]bool{"observe-webhook": true, "observe-schedule": true, "observe-object": true,
		"observe-table": true, "observe-event": true, "outbox-sweep": true}
	seen := 0
	for _, r := range guardrailTemplate()["Resources"].(map[string]any) {
		f := r.(map[string]any)
		if f["Type"] != "AWS::Lambda::Function" {
			continue
		}
		p := f["Properties"].(map[string]any)
		name := strings.TrimPrefix(fmt.Sprint(p["Description"]), "ora ")
		env, _ := p["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		v, set := vars["ORA_COALESCE_WINDOW_MS"]
		sources, setSources := vars["ORA_COALESCE_SOURCES"]
		switch {
		case observers[name]:
			seen++
			if v != "500" {
				t.Errorf("%s: ORA_COALESCE_WINDOW_MS=%v, want 500", name, v)
			}
			opts, err := observe.EnvOptions(func(k string) string { s, _ := vars[k].(string); return s })
			var o observe.Options
			if err == nil {
				opts(&o)
			}
			if want := map[string]string{"slack": "off", "orders": "order.id"}; err != nil || !maps.Equal(o.Coalesce.Sources, want) {
				t.Errorf("%s: ORA_COALESCE_SOURCES=%v reads as %v (%v), want %v", name, sources, o.Coalesce.Sources, err, want)
			}
		case set || setSources:
			t.Errorf("%s: ORA_COALESCE_WINDOW_MS or ORA_COALESCE_SOURCES is set, want them on the observers only", name)
		}
	}
	if seen != len(observers) {
		t.Errorf("found %d observers, want %d", seen, len(observers))
	}
	for _, f := range resources(t, "AWS::Lambda::Function") {
		if vars, ok := f["Properties"].(map[string]any)["Environment"].(map[string]any); ok {
			for _, k := range []string{"ORA_COALESCE_WINDOW_MS", "ORA_COALESCE_SOURCES"} {
				if _, set := vars["Variables"].(map[string]any)[k]; set {
					t.Errorf("%s set without ora:coalesceWindowMs", k)
				}
			}
		}
	}
}

// ora:coalesceSources takes "off" or a dotted payload path per source, and
// only with a window to apply them in.
func TestCheckCoalesceSources(t *testing.T) {
	tests := []struct {
		name     string
		sources  map[string]string
		windowMs int
		wantErr  string
	}{
		{"none", nil, 0, ""},
		{"off and a path", map[string]string{"slack": "off", "orders": "order.id"}, 500, ""},
		{"no window", map[string]string{"slack": "off"}, 0, "set ora:coalesceWindowMs"},
		{"an empty key", map[string]string{"orders": ""}, 500, `source orders: ""`},
		{"an empty path segment", map[string]string{"orders": "order..id"}, 500, `source orders: "order..id"`},
		{"no source name", map[string]string{"": "off"}, 500, "names no source"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkCoalesceSources(tt.sources, tt.windowMs)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("checkCoalesceSources(%v, %d) = %v, want %q", tt.sources, tt.windowMs, err, tt.wantErr)
			}
		})
	}
}
