package statemachines

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/taskerr"
)

func TestFunctionPlaceholder(t *testing.T) {
	tests := map[string]string{
		"plan":               "PlanFunctionArn",
		"validate-technical": "ValidateTechnicalFunctionArn",
		"flag-review":        "FlagReviewFunctionArn",
	}
	for in, want := range tests {
		if got := FunctionPlaceholder(in); got != want {
			t.Errorf("FunctionPlaceholder(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every ${Placeholder} in the ASL names a functions/* folder, so the CDK app and
// the embedded runtime can fill each one from the function list.
func TestEveryPlaceholderIsAFunction(t *testing.T) {
	dirs, err := os.ReadDir("../functions")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for p := range Integrations("aws") {
		known[p] = true
	}
	for _, ch := range Children {
		known[ch.Placeholder] = true
	}
	for _, d := range dirs {
		if d.IsDir() {
			known[FunctionPlaceholder(d.Name())] = true
		}
	}
	defs := map[string][]byte{"ora": Wave}
	for _, ch := range Children {
		defs[ch.Name] = ch.Definition
	}
	for name, def := range defs {
		for _, p := range Placeholders(def) {
			if !known[p] {
				t.Errorf("%s.asl.json: placeholder ${%s} matches no functions/* folder", name, p)
			}
		}
	}
	if len(Placeholders(Wave)) == 0 {
		t.Fatal("the wave definition has no placeholders")
	}
}

// Every ErrorEquals name in the ASL is either a States.* error or an error
// type some handler can return (shared/taskerr).
func TestErrorEqualsNamesAreHandlerErrorTypes(t *testing.T) {
	var def []any
	defs := [][]byte{Wave}
	for _, ch := range Children {
		defs = append(defs, ch.Definition)
	}
	for _, b := range defs {
		var d any
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		def = append(def, d)
	}
	known := map[string]bool{}
	for _, n := range stepFunctionsServiceErrors {
		known[n] = true
	}
	for _, n := range taskerr.Names {
		known[n] = true
	}
	// Errors the Lambda service raises for an invocation, not the handler.
	for _, n := range lambdaServiceErrors {
		known[n] = true
	}
	var names []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if k == "ErrorEquals" {
					for _, n := range c.([]any) {
						names = append(names, n.(string))
					}
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(def)
	if len(names) == 0 {
		t.Fatal("no ErrorEquals found")
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "States.") && !known[n] {
			t.Errorf("ErrorEquals %q is not an error type a handler or the Lambda service can return", n)
		}
	}
}

func TestSubstitute(t *testing.T) {
	got := string(Substitute([]byte(`{"a":"${PlanFunctionArn}","b":"${Other}"}`), map[string]string{"PlanFunctionArn": "arn:x"}))
	if want := `{"a":"arn:x","b":"${Other}"}`; got != want {
		t.Errorf("Substitute = %s, want %s", got, want)
	}
}

// asl-validator (npm, installed by `make deps`) accepts every definition.
func TestASLValidator(t *testing.T) {
	bin, err := filepath.Abs("../tools/node_modules/.bin/asl-validator")
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("asl-validator is required in CI (make deps): %v", err)
		}
		t.Skipf("asl-validator not installed (run make deps): %v", err)
	}
	files, _ := filepath.Glob("*.asl.json")
	if len(files) == 0 {
		t.Fatal("no *.asl.json files")
	}
	for _, f := range files {
		out, err := exec.Command(bin, "--json-path", f).CombinedOutput()
		if err != nil {
			t.Errorf("asl-validator rejects %s: %v\n%s", f, err, out)
		}
	}
}
