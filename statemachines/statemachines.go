// Package statemachines embeds the state machine definitions, so the embedded
// runtime runs the very file the CDK app deploys.
package statemachines

import (
	_ "embed"
	"regexp"
	"sort"
)

// Wave is statemachines/ora.asl.json: one wave of ora. Its ${Placeholders} are
// filled by DefinitionSubstitutions on AWS and by Substitute locally.
//
//go:embed ora.asl.json
var Wave []byte

// ReasonChild is statemachines/reason.asl.json, the wave's first Express
// child: a small fan-out's observation jobs (an inline Map), Compile
// orientation packet, Reason, Flag for review. The parent's
// "Orient and reason" starts it with states:startExecution.sync:2.
//
//go:embed reason.asl.json
var ReasonChild []byte

// ActChild is statemachines/act.asl.json, the wave's second Express child:
// Act, Validate, Record outcome. The parent's "Act and validate" starts it.
//
//go:embed act.asl.json
var ActChild []byte

// Child is one Express child of the wave: its definition, the state machine
// name it is deployed under (with the stack's prefix on AWS), the
// ${Placeholder} standing for its ARN in the parent, and the parent's Task
// state that starts it.
type Child struct {
	Name        string
	Definition  []byte
	Placeholder string
	ParentState string
}

// Children are the wave's Express children, in the order the wave runs them.
var Children = []Child{
	{Name: "reason", Definition: ReasonChild, Placeholder: "ReasonChildArn", ParentState: "Orient and reason"},
	{Name: "act", Definition: ActChild, Placeholder: "ActChildArn", ParentState: "Act and validate"},
}

// StartExpressSyncPlaceholder is the ${Placeholder} standing for the Step
// Functions startExecution.sync:2 integration (the parent waits for the
// child and gets its output as JSON); it names the partition like
// WaitForTaskTokenPlaceholder.
const StartExpressSyncPlaceholder = "StartExpressSync"

// StartExecutionSync returns the ARN of the states:startExecution.sync:2
// integration in partition.
func StartExecutionSync(partition string) string {
	return "arn:" + partition + ":states:::states:startExecution.sync:2"
}

// WaitForTaskTokenPlaceholder is the ${Placeholder} standing for the
// Lambda-with-task-token service integration, whose ARN names the partition:
// it is filled with WaitForTaskToken of the deployment's partition ("aws"
// locally; aws-cn, aws-us-gov elsewhere).
const WaitForTaskTokenPlaceholder = "LambdaInvokeWaitForTaskToken"

// WaitForTaskToken returns the ARN of the Lambda invoke.waitForTaskToken
// integration in partition.
func WaitForTaskToken(partition string) string {
	return "arn:" + partition + ":states:::lambda:invoke.waitForTaskToken"
}

// S3GetObjectPlaceholder is the ${Placeholder} standing for the S3
// GetObject integration the "Fetch observations" Distributed Map's ItemReader
// uses; it is filled with S3GetObject of the deployment's partition.
const S3GetObjectPlaceholder = "S3GetObject"

// S3GetObject returns the ARN of the s3:getObject integration in partition.
func S3GetObject(partition string) string { return "arn:" + partition + ":states:::s3:getObject" }

// Integrations returns the substitutions of the service integration
// placeholders (every ${Placeholder} that is not a function) for partition.
func Integrations(partition string) map[string]string {
	return map[string]string{
		WaitForTaskTokenPlaceholder: WaitForTaskToken(partition),
		S3GetObjectPlaceholder:      S3GetObject(partition),
		StartExpressSyncPlaceholder: StartExecutionSync(partition),
	}
}

var placeholder = regexp.MustCompile(`\$\{([A-Za-z0-9]+)\}`)

// Placeholders returns the names of the ${Placeholders} in a definition, sorted
// and without repeats.
func Placeholders(def []byte) []string {
	seen := map[string]bool{}
	for _, m := range placeholder.FindAllSubmatch(def, -1) {
		seen[string(m[1])] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Substitute replaces each ${Name} in def with values[Name]; names without a
// value are left as they are.
func Substitute(def []byte, values map[string]string) []byte {
	return placeholder.ReplaceAllFunc(def, func(m []byte) []byte {
		if v, ok := values[string(placeholder.FindSubmatch(m)[1])]; ok {
			return []byte(v)
		}
		return m
	})
}

// FunctionPlaceholder returns the placeholder name for a function folder:
// "validate-technical" -> "ValidateTechnicalFunctionArn".
func FunctionPlaceholder(function string) string {
	out := make([]byte, 0, len(function)+11)
	up := true
	for i := 0; i < len(function); i++ {
		c := function[i]
		if c == '-' {
			up = true
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		out = append(out, c)
	}
	return string(out) + "FunctionArn"
}
