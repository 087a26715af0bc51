package stepfn_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJSONataCasesAgainstNPM checks the expected output of every JSONata
// expression case (a JSONata Pass state whose Output is one "{% %}"
// expression) against the jsonata npm package that Step Functions' JSONata
// follows, so the suite's expectations come from the reference JSONata and not
// from ora's Go library.
func TestJSONataCasesAgainstNPM(t *testing.T) {
	type npmCase struct {
		Name       string          `json:"name"`
		Expression string          `json:"expression"`
		Input      json.RawMessage `json:"input"`
		StateName  string          `json:"stateName"`
	}
	var cases []npmCase
	want := map[string]json.RawMessage{}
	for _, c := range loadConformanceCases(t) {
		if !strings.Contains(c.name, "-jsonata-") || c.expected.Status != "SUCCEEDED" {
			continue
		}
		var def struct {
			QueryLanguage string
			StartAt       string
			States        map[string]map[string]any
		}
		if err := json.Unmarshal(c.definition, &def); err != nil {
			t.Fatalf("case %s: %v", c.name, err)
		}
		st := def.States[def.StartAt]
		out, _ := st["Output"].(string)
		expr, ok := strings.CutPrefix(strings.TrimSpace(out), "{%")
		if def.QueryLanguage != "JSONata" || len(def.States) != 1 || st["Type"] != "Pass" || !ok || strings.Contains(expr, "$partition") ||
			strings.Contains(expr, "$range") || strings.Contains(expr, "$hash") || strings.Contains(expr, "$parse") || strings.Contains(expr, "$uuid") || strings.Contains(expr, "$random") {
			continue // not a single expression, or AWS's own functions, which the npm package lacks
		}
		expr = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(expr), "%}"))
		cases = append(cases, npmCase{Name: c.name, Expression: expr, Input: c.input, StateName: def.StartAt})
		want[c.name] = c.expected.Output
	}
	if len(cases) < 40 {
		t.Fatalf("JSONata expression cases = %d, want at least 40", len(cases))
	}
	if _, err := referenceTools(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("reference: %v (CI installs it with make deps)", err)
		}
		t.Skipf("reference not run: %v (run make deps)", err)
	}
	if _, err := os.Stat(filepath.Join("..", "..", "tools", "node_modules", "jsonata", "jsonata.js")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the jsonata npm package is not installed: %v (CI installs it with make deps)", err)
		}
		t.Skipf("the jsonata npm package is not installed (run make deps)")
	}
	var resp struct {
		Results map[string]struct {
			Value json.RawMessage `json:"value"`
			Error string          `json:"error"`
		} `json:"results"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runNodeScript(ctx, "jsonata.mjs", map[string]any{"cases": cases}, &resp); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			got, ok := resp.Results[c.Name]
			if !ok || got.Error != "" {
				t.Fatalf("jsonata npm: no value (%q)", got.Error)
			}
			if msg := compareResult(okResult(string(want[c.Name])), okResult(string(got.Value))); msg != "" {
				t.Errorf("expected.json differs from the jsonata npm package: %s", msg)
			}
		})
	}
}
