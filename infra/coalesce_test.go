package main

import (
	"fmt"
	"strings"
	"testing"
)

// ora:coalesceWindowMs reaches every observer as ORA_COALESCE_WINDOW_MS and
// no other function; without it no function has the variable.
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
		switch {
		case observers[name]:
			seen++
			if v != "500" {
				t.Errorf("%s: ORA_COALESCE_WINDOW_MS=%v, want 500", name, v)
			}
		case set:
			t.Errorf("%s: ORA_COALESCE_WINDOW_MS is set, want it on the observers only", name)
		}
	}
	if seen != len(observers) {
		t.Errorf("found %d observers, want %d", seen, len(observers))
	}
	for _, f := range resources(t, "AWS::Lambda::Function") {
		if vars, ok := f["Properties"].(map[string]any)["Environment"].(map[string]any); ok {
			if _, set := vars["Variables"].(map[string]any)["ORA_COALESCE_WINDOW_MS"]; set {
				t.Error("ORA_COALESCE_WINDOW_MS set without ora:coalesceWindowMs")
			}
		}
	}
}
