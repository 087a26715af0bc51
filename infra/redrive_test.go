package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

// The api function may redrive the wave's executions, and no other function
// may redrive anything; POST /waves/{id}/redrive needs ora.operate.
func TestRedriveGrant(t *testing.T) {
	synth(t)
	for name, f := range stack.Functions {
		role := *stack.Stack.GetLogicalId(f.Role().Node().DefaultChild().(awscdk.CfnElement))
		var on []string
		for _, st := range roleStatements(t, role) {
			if slices.Contains(toStrings(st["Action"]), "states:RedriveExecution") && st["Effect"] == "Allow" {
				b, _ := json.Marshal(st["Resource"])
				on = append(on, string(b))
			}
		}
		switch {
		case name != "api" && len(on) > 0:
			t.Errorf("%s may redrive executions (%v)", name, on)
		case name == "api" && (len(on) != 1 || !strings.Contains(on[0], ":execution:") || !strings.Contains(on[0], "-wave:*")):
			t.Errorf("api may redrive %v, want the executions of the wave's state machine", on)
		}
	}
	if !slices.Contains(apiRoutes, apiRoute{"POST", "/waves/{id}/redrive", "ora/ora.operate"}) {
		t.Error("POST /waves/{id}/redrive is not an authorized route with scope ora.operate")
	}
}
