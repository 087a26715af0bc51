package sfnapi_test

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/sfnapi"
	"github.com/ora-runtime/ora/shared/stepfn"
)

// docPage is the user documentation of the endpoint.
const docPage = "../../docs/step-functions-api.md"

// TestDocCommands runs the AWS CLI walk-through of docs/step-functions-api.md
// as it is written (its first json block saved as hello.asl.json, its first
// sh block that calls create-state-machine run by bash), against the endpoint,
// and checks what the page says it answers.
func TestDocCommands(t *testing.T) {
	b, err := os.ReadFile(docPage)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```(json|sh)(?: aws)?\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	var definition, script string
	for _, m := range blocks {
		switch {
		case m[1] == "json" && strings.Contains(m[2], `"StartAt"`) && definition == "":
			definition = m[2]
		case m[1] == "sh" && strings.Contains(m[2], "create-state-machine") && script == "":
			script = m[2]
		}
	}
	if definition == "" || script == "" {
		t.Fatalf("%s has no hello.asl.json block or no AWS CLI block", docPage)
	}
	if !strings.Contains(string(b), `{"greeting":"Hello, world!"}`) {
		t.Fatalf("%s no longer says what describe-execution answers", docPage)
	}
	if _, err := exec.LookPath("aws"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the AWS CLI (aws) is not installed: make deps installs it under CI=true")
		}
		t.Skip("the AWS CLI (aws) is not installed (make awscli): the page's commands were not run")
	}
	e := stepfn.NewEngine()
	defer e.Close()
	srv := httptest.NewServer(sfnapi.New(e))
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.asl.json"), []byte(definition), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-e", "-c", strings.ReplaceAll(script, "http://127.0.0.1:8083", srv.URL))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the page's AWS CLI commands failed: %v\n%s", err, out)
	}
	for _, want := range []string{`"status": "SUCCEEDED"`, `"output": "{\"greeting\":\"Hello, world!\"}"`, `"type": "ExecutionSucceeded"`, `"name": "first"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the commands' output lacks %s:\n%s", want, out)
		}
	}
}
