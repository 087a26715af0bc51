package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/statemachines"
)

// timeoutMargin is how much longer than its function's timeout a Task's
// TimeoutSeconds may be: long enough that the function's own timeout ends a
// run (with its logs and a Sandbox.Timedout the operator can read), short
// enough that the Express budget counts what really runs.
const timeoutMargin = 5

// Every Lambda Task of an Express child sets TimeoutSeconds, and wherever a
// Task sets it (parent or child), it is a little longer than the function's
// timeout in sizes: the ASL's budget (statemachines' TestExpressBudgets) and
// the deployed functions agree.
func TestLambdaTimeoutsMatchTheASL(t *testing.T) {
	byPlaceholder := map[string]string{}
	for _, name := range FunctionNames(root) {
		byPlaceholder["${"+statemachines.FunctionPlaceholder(name)+"}"] = name
	}
	type state struct {
		Type           string  `json:"Type"`
		Resource       string  `json:"Resource"`
		TimeoutSeconds float64 `json:"TimeoutSeconds"`
	}
	files := map[string]bool{"ora.asl.json": false}
	for _, ch := range statemachines.Children {
		files[ch.Name+".asl.json"] = true
	}
	checked := 0
	for file, express := range files {
		b, err := os.ReadFile(filepath.Join(root, "statemachines", file))
		if err != nil {
			t.Fatal(err)
		}
		// Every state object, nested ones included (Parallel branches, Map
		// item processors: a Distributed Map's run as Express too).
		var walk func(path string, v any, express, inline bool)
		walk = func(path string, v any, express, inline bool) {
			switch x := v.(type) {
			case map[string]any:
				if pc, ok := x["ProcessorConfig"].(map[string]any); ok {
					express = express || pc["ExecutionType"] == "EXPRESS"
					inline = pc["Mode"] == "INLINE"
				}
				if x["Type"] == "Task" {
					raw, _ := json.Marshal(x)
					var st state
					_ = json.Unmarshal(raw, &st)
					fn, ok := byPlaceholder[st.Resource]
					if !ok {
						break
					}
					size, ok := sizes[fn]
					if !ok {
						size = sizing{256, 30}
					}
					if inline && fn == "fetch" {
						// An inline Map's Fetch runs one job, which Plan
						// inlines only when its timeout is at most
						// orient.MaxInlineJobTimeout: that bounds the run.
						size.timeout = orient.MaxInlineJobTimeout.Seconds()
					}
					checked++
					switch {
					case st.TimeoutSeconds == 0 && express:
						t.Errorf("%s %s: an Express child's task without TimeoutSeconds (%s's timeout is %.0f s)", file, path, fn, size.timeout)
					case st.TimeoutSeconds == 0:
					case st.TimeoutSeconds <= size.timeout || st.TimeoutSeconds > size.timeout+timeoutMargin:
						t.Errorf("%s %s: TimeoutSeconds %.0f, want %s's timeout (%.0f s) plus 1 to %d s", file, path, st.TimeoutSeconds, fn, size.timeout, timeoutMargin)
					}
				}
				for k, c := range x {
					walk(path+"/"+k, c, express, inline)
				}
			case []any:
				for _, c := range x {
					walk(path, c, express, inline)
				}
			}
		}
		var def any
		if err := json.Unmarshal(b, &def); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		walk(strings.TrimSuffix(file, ".asl.json"), def, express, false)
	}
	if checked < 14 {
		t.Errorf("checked %d Lambda tasks, want at least 14", checked)
	}
}
