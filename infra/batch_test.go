package main

import (
	"fmt"
	"strings"
	"testing"
)

// ora:batchWindowMs reaches the reason function as ORA_BATCH_WINDOW_MS and
// no other function; without it no function has the variable. The wave's
// definition carries the batch loop either way (it is idle without a wait).
func TestBatchWindowReachesReason(t *testing.T) {
	synth(t)
	seen := false
	states := map[string]bool{}
	for _, r := range guardrailTemplate()["Resources"].(map[string]any) {
		res := r.(map[string]any)
		switch res["Type"] {
		case "AWS::Lambda::Function":
			p := res["Properties"].(map[string]any)
			name := strings.TrimPrefix(fmt.Sprint(p["Description"]), "ora ")
			env, _ := p["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			v, set := vars["ORA_BATCH_WINDOW_MS"]
			switch {
			case name == "reason":
				seen = true
				if v != "1000" {
					t.Errorf("reason: ORA_BATCH_WINDOW_MS=%v, want 1000", v)
				}
			case set:
				t.Errorf("%s: ORA_BATCH_WINDOW_MS is set, want it on the reason function only", name)
			}
		case "AWS::StepFunctions::StateMachine":
			def := fmt.Sprint(res["Properties"].(map[string]any)["DefinitionString"])
			for _, st := range []string{`"Wait for the batch"`, `"Reason in the batch"`} {
				if strings.Contains(def, st+":") || strings.Contains(def, st+" :") {
					states[st] = true
				}
			}
		}
	}
	if !seen {
		t.Error("no reason function in the template")
	}
	if !states[`"Wait for the batch"`] || !states[`"Reason in the batch"`] {
		t.Errorf("batch states deployed: %v; want the parent's Wait for the batch and the child's Reason in the batch", states)
	}
	for _, f := range resources(t, "AWS::Lambda::Function") {
		if vars, ok := f["Properties"].(map[string]any)["Environment"].(map[string]any); ok {
			if _, set := vars["Variables"].(map[string]any)["ORA_BATCH_WINDOW_MS"]; set {
				t.Error("ORA_BATCH_WINDOW_MS set without ora:batchWindowMs")
			}
		}
	}
}
