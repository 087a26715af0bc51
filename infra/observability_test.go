package main

import (
	"strings"
	"testing"
)

// TestFunctionsLogJSON checks every function writes JSON logs (its own lines
// are JSON already; this makes Lambda's platform lines JSON too and passes the
// level to the function).
func TestFunctionsLogJSON(t *testing.T) {
	synth(t)
	fns := resources(t, "AWS::Lambda::Function")
	if len(fns) == 0 {
		t.Fatal("no functions")
	}
	n := 0
	for id, fn := range fns {
		props := fn["Properties"].(map[string]any)
		if d, _ := props["Description"].(string); !strings.HasPrefix(d, "ora ") {
			continue // CDK's own helpers (bucket notifications)
		}
		n++
		lc, _ := props["LoggingConfig"].(map[string]any)
		if lc["LogFormat"] != "JSON" || lc["ApplicationLogLevel"] != "INFO" || lc["SystemLogLevel"] != "WARN" {
			t.Errorf("%s: LoggingConfig %v, want LogFormat JSON, ApplicationLogLevel INFO, SystemLogLevel WARN", id, lc)
		}
	}
	if want := len(FunctionNames(root)); n != want {
		t.Errorf("checked %d ora functions, want %d", n, want)
	}
}
