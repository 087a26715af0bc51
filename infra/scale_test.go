package main

import (
	"fmt"
	"testing"
)

// resourcesOf returns a template's resources of one type.
func resourcesOf(tm map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range tm["Resources"].(map[string]any) {
		if m := r.(map[string]any); m["Type"] == typ {
			out[id] = m
		}
	}
	return out
}

// The settings that carry 100 waves a second: the API stage's throttles
// (the webhook route on its own), the ledger's warm throughput (table and
// indexes), and the largest fan-out run inline (plan's environment); with
// cdk.json's defaults and with every one set.
func TestScaleSettings(t *testing.T) {
	synth(t)
	tests := []struct {
		name           string
		tm             map[string]any
		webhook, reads [2]float64
		warm           bool
		inline         string
	}{
		{"defaults", tmpl, [2]float64{500, 1000}, [2]float64{50, 100}, false, "40"},
		{"set in context", guardrailTemplate(), [2]float64{900, 1800}, [2]float64{20, 40}, true, "12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stages := resourcesOf(tt.tm, "AWS::ApiGatewayV2::Stage")
			if len(stages) != 1 {
				t.Fatalf("%d HTTP API stages, want 1", len(stages))
			}
			for _, st := range stages {
				p := st["Properties"].(map[string]any)
				def, _ := p["DefaultRouteSettings"].(map[string]any)
				if def == nil || def["ThrottlingRateLimit"] != tt.reads[0] || def["ThrottlingBurstLimit"] != tt.reads[1] {
					t.Errorf("default route settings %v, want reads %v", def, tt.reads)
				}
				routes, _ := p["RouteSettings"].(map[string]any)
				wh, _ := routes[webhookRoute].(map[string]any)
				if wh == nil || wh["ThrottlingRateLimit"] != tt.webhook[0] || wh["ThrottlingBurstLimit"] != tt.webhook[1] {
					t.Errorf("route settings %v, want %s limited to %v", routes, webhookRoute, tt.webhook)
				}
			}
			var ledger map[string]any
			for id, tb := range resourcesOf(tt.tm, "AWS::DynamoDB::Table") {
				if len(id) >= 6 && id[:6] == "Ledger" {
					ledger = tb["Properties"].(map[string]any)
				}
			}
			if ledger == nil {
				t.Fatal("no ledger table")
			}
			warm := fmt.Sprint(ledger["WarmThroughput"])
			if got := ledger["WarmThroughput"] != nil; got != tt.warm {
				t.Errorf("ledger WarmThroughput %s, want set: %v", warm, tt.warm)
			}
			if tt.warm && warm != "map[ReadUnitsPerSecond:12000 WriteUnitsPerSecond:8000]" {
				t.Errorf("ledger WarmThroughput %s, want 12,000 reads and 8,000 writes", warm)
			}
			for _, g := range ledger["GlobalSecondaryIndexes"].([]any) {
				if got := g.(map[string]any)["WarmThroughput"] != nil; got != tt.warm {
					t.Errorf("index %v: WarmThroughput set %v, want %v", g.(map[string]any)["IndexName"], got, tt.warm)
				}
			}
			found := false
			for _, fn := range resourcesOf(tt.tm, "AWS::Lambda::Function") {
				p := fn["Properties"].(map[string]any)
				if p["Description"] != "ora plan" {
					continue
				}
				env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
				found = env["ORA_INLINE_FETCH_MAX_JOBS"] == tt.inline
				if !found {
					t.Errorf("plan's ORA_INLINE_FETCH_MAX_JOBS = %v, want %s", env["ORA_INLINE_FETCH_MAX_JOBS"], tt.inline)
				}
			}
			if !found {
				t.Error("no plan function with ORA_INLINE_FETCH_MAX_JOBS")
			}
		})
	}
}
