package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/stepfn"
	"github.com/ora-runtime/ora/statemachines"
)

var _ = register("statemachine", "run an ASL definition on the local engine with scripted tasks", runStatemachine)

const statemachineUsage = `usage: ora statemachine run --definition FILE [--input @FILE|JSON] [--tasks FILE]
                            [--substitute NAME=VALUE]... [--substitutions FILE]
                            [--child NAME=FILE]... [--history] [--real-time]
       ora statemachine test-state --definition FILE [--state NAME] [--input @FILE|JSON]
                            [--mock @FILE|JSON] [--inspection-level INFO|DEBUG|TRACE]

Runs the definition once on the local Step Functions engine. Tasks call nothing:
the tasks file maps each Task state's name to a list of items, one consumed per
invocation (the last repeating): {"result": <json>}, {"response": <json>} or
{"error": "Name", "cause": "text"}, optionally with "delay_seconds": N. A result
is what the task's code returns (a Lambda function's output, which
arn:aws:states:::lambda:invoke wraps as {StatusCode, Payload, ExecutedVersion};
another integration's response); a response mocks a service integration's
whole response as it is (not for a plain Lambda ARN). A .waitForTaskToken task
receives its item through SendTaskSuccess / SendTaskFailure. The clock is
virtual (Wait, retry intervals and timeouts take no real time) unless
--real-time is given. A definition with ${Placeholders} (as CDK's
DefinitionSubstitutions fill them) runs once every placeholder has a value.

flags:
  --definition FILE        the ASL definition file (required)
  --input @FILE|JSON       the execution input (default: {})
  --tasks FILE             the tasks file (default: none; a Task with no item
                           fails with States.TaskFailed)
  --substitute NAME=VALUE  replace ${NAME} in the definition with VALUE;
                           repeatable, and wins over --substitutions
  --substitutions FILE     a JSON object {"NAME": "VALUE", ...} of placeholders
  --child NAME=FILE        a child state machine (repeatable), registered as
                           arn:aws:states:us-east-1:123456789012:stateMachine:NAME
                           and substituted like the definition: a
                           states:startExecution task with no item in the
                           tasks file runs it, its tasks scripted by the same
                           file, and answers as Step Functions does
  --objects DIR            where a Distributed Map's ItemReader (s3:getObject)
                           reads: the object BUCKET/KEY is the file DIR/BUCKET/KEY
  --history                print the execution's event history to stderr
  --real-time              wait in real time instead of on a virtual clock

exit status: 0 succeeded, the output JSON on stdout; 1 the execution failed,
{"error": ..., "cause": ...} on stdout; 2 an invalid definition, input, tasks
or substitutions file, or a placeholder without a value, the reason on stderr.

test-state runs one state as AWS's TestState API does: the definition is a
state machine (--state picks the state, StartAt by default) or one state's
definition; a Task state needs --mock, {"result": <json>} (the integration's
response; a plain Lambda ARN's output) or {"errorOutput": {"error": "Name",
"cause": "text"}}. It prints {"status", "output", "nextState", "error", "cause"}
with status SUCCEEDED, FAILED, CAUGHT_ERROR or RETRIABLE; DEBUG adds
"inspectionData" (input, afterInputPath, afterParameters or afterArguments,
result, afterResultSelector, afterResultPath, variables) and TRACE adds the
task's request and response. Exit 0 unless the status is FAILED (1) or the
request is invalid (2).

example (the project's own wave, every function scripted):
  ora statemachine run --definition statemachines/ora.asl.json \
    --substitutions events/statemachine/substitutions.json \
    --child reason=statemachines/reason.asl.json --child act=statemachines/act.asl.json \
    --tasks events/statemachine/tasks-high.json --input @events/statemachine/input.json \
    --objects events/statemachine/objects
`

// runStatemachine implements `ora statemachine run`.
func runStatemachine(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "test-state" {
		return runTestState(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "run" {
		fmt.Fprint(stderr, statemachineUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return 0
		}
		return 2
	}
	fs := newFlagSet("statemachine run", statemachineUsage, stderr)
	definitionFile := fs.String("definition", "", "the ASL definition file")
	inputArg := fs.String("input", "{}", "the execution input: JSON, or @FILE")
	tasksFile := fs.String("tasks", "", "the tasks file (JSON object of Task state name to a list of items)")
	history := fs.Bool("history", false, "print the execution's event history to stderr")
	objects := fs.String("objects", "", "the folder a Distributed Map's ItemReader reads BUCKET/KEY from")
	realTime := fs.Bool("real-time", false, "wait in real time instead of on a virtual clock")
	subs := substitutions{}
	fs.Var(subs, "substitute", "NAME=VALUE: replace ${NAME} in the definition (repeatable)")
	subsFile := fs.String("substitutions", "", "a JSON file {\"NAME\": \"VALUE\"} of placeholder values")
	childFiles := substitutions{}
	fs.Var(childFiles, "child", "NAME=FILE: a child state machine a states:startExecution task runs (repeatable)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ora statemachine run: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *definitionFile == "" {
		fmt.Fprintln(stderr, "ora statemachine run: --definition is required")
		return 2
	}
	def, err := os.ReadFile(*definitionFile)
	if err != nil {
		fmt.Fprintf(stderr, "ora statemachine run: read definition: %v\n", err)
		return 2
	}
	if def, err = substitute(def, subs, *subsFile); err != nil {
		fmt.Fprintf(stderr, "ora statemachine run: %v\n", err)
		return 2
	}
	children := map[string][]byte{}
	for name, file := range childFiles {
		b, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintf(stderr, "ora statemachine run: read child %s: %v\n", name, err)
			return 2
		}
		if children[name], err = substitute(b, subs, *subsFile); err != nil {
			fmt.Fprintf(stderr, "ora statemachine run: child %s: %v\n", name, err)
			return 2
		}
	}
	input := []byte(*inputArg)
	if name, ok := strings.CutPrefix(*inputArg, "@"); ok {
		if input, err = os.ReadFile(name); err != nil {
			fmt.Fprintf(stderr, "ora statemachine run: read input: %v\n", err)
			return 2
		}
	}
	if !json.Valid(input) {
		fmt.Fprintln(stderr, "ora statemachine run: the input is not valid JSON")
		return 2
	}
	script := stepfn.TaskScript{}
	if *tasksFile != "" {
		b, err := os.ReadFile(*tasksFile)
		if err != nil {
			fmt.Fprintf(stderr, "ora statemachine run: read tasks: %v\n", err)
			return 2
		}
		if script, err = stepfn.ParseTaskScript(b); err != nil {
			fmt.Fprintf(stderr, "ora statemachine run: %v\n", err)
			return 2
		}
	}
	var opts []func(*stepfn.Options)
	if *realTime {
		opts = append(opts, func(o *stepfn.Options) { o.Clock = stepfn.RealClock{} })
	}
	if *objects != "" {
		opts = append(opts, func(o *stepfn.Options) { o.Objects = orient.JobFolder{Dir: *objects} })
	}
	out, err := stepfn.RunScriptedChildren(ctx, def, children, input, script, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "ora statemachine run: %v\n", err)
		return 2
	}
	if *history {
		enc := json.NewEncoder(stderr)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out.History); err != nil {
			fmt.Fprintf(stderr, "ora statemachine run: print history: %v\n", err)
		}
	}
	if out.Status == stepfn.StatusSucceeded {
		fmt.Fprintf(stdout, "%s\n", out.Output)
		return 0
	}
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
		Cause string `json:"cause"`
	}{out.Error, out.Cause})
	fmt.Fprintf(stdout, "%s\n", b)
	return 1
}

// runTestState implements `ora statemachine test-state`.
func runTestState(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("statemachine test-state", statemachineUsage, stderr)
	definitionFile := fs.String("definition", "", "a state machine or one state's definition file")
	stateName := fs.String("state", "", "the state to test (default: StartAt)")
	inputArg := fs.String("input", "{}", "the state's input: JSON, or @FILE")
	mockArg := fs.String("mock", "", "the Task state's mock: JSON, or @FILE")
	level := fs.String("inspection-level", stepfn.InspectionInfo, "INFO, DEBUG or TRACE")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "ora statemachine test-state: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if *definitionFile == "" {
		return fail("--definition is required")
	}
	def, err := os.ReadFile(*definitionFile)
	if err != nil {
		return fail("read definition: %v", err)
	}
	readArg := func(v, what string) ([]byte, error) {
		b := []byte(v)
		if name, ok := strings.CutPrefix(v, "@"); ok {
			if b, err = os.ReadFile(name); err != nil {
				return nil, fmt.Errorf("read %s: %v", what, err)
			}
		}
		if !json.Valid(b) {
			return nil, fmt.Errorf("the %s is not valid JSON", what)
		}
		return b, nil
	}
	input, err := readArg(*inputArg, "input")
	if err != nil {
		return fail("%v", err)
	}
	req := stepfn.TestStateRequest{Definition: def, StateName: *stateName, Input: input, InspectionLevel: strings.ToUpper(*level)}
	if *mockArg != "" {
		b, err := readArg(*mockArg, "mock")
		if err != nil {
			return fail("%v", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		req.Mock = &stepfn.TestStateMock{}
		if err := dec.Decode(req.Mock); err != nil {
			return fail("the mock must be {\"result\": ...} or {\"errorOutput\": {\"error\", \"cause\"}}: %v", err)
		}
	}
	res, err := stepfn.TestState(ctx, req)
	if err != nil {
		return fail("%v", err)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return fail("print result: %v", err)
	}
	if res.Status == stepfn.TestStateFailed {
		return 1
	}
	return 0
}

// substitutions is the repeatable --substitute NAME=VALUE flag.
type substitutions map[string]string

func (s substitutions) String() string { return "" }

func (s substitutions) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	s[strings.TrimSuffix(strings.TrimPrefix(name, "${"), "}")] = value
	return nil
}

// substitute fills the definition's ${Placeholders} from the substitutions
// file (when given) and the --substitute flags, which win. A placeholder left
// without a value is an error naming all of them, so the engine never sees one.
func substitute(def []byte, flags substitutions, file string) ([]byte, error) {
	values := map[string]string{}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read substitutions: %w", err)
		}
		if err := json.Unmarshal(b, &values); err != nil {
			return nil, fmt.Errorf("substitutions file %s: want a JSON object of strings: %w", file, err)
		}
	}
	for k, v := range flags {
		values[k] = v
	}
	def = statemachines.Substitute(def, values)
	if missing := statemachines.Placeholders(def); len(missing) > 0 {
		for i, m := range missing {
			missing[i] = "${" + m + "}"
		}
		return nil, fmt.Errorf("the definition has placeholders without a value: %s (give them with --substitute NAME=VALUE or --substitutions FILE)", strings.Join(missing, ", "))
	}
	return def, nil
}
