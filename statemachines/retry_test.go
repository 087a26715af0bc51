package statemachines

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// The definition names no partition: the service integration's ARN is a
// placeholder filled per deployment, so the stack deploys in aws-cn and
// aws-us-gov as well.
func TestNoHardCodedPartition(t *testing.T) {
	if i := bytes.Index(Wave, []byte("arn:aws:")); i >= 0 {
		t.Errorf("ora.asl.json hard-codes arn:aws: at byte %d; use ${%s}", i, WaitForTaskTokenPlaceholder)
	}
	if !slices.Contains(Placeholders(Wave), WaitForTaskTokenPlaceholder) {
		t.Errorf("no ${%s} in the definition", WaitForTaskTokenPlaceholder)
	}
}

// lambdaServiceErrors are the errors the Lambda service raises for an
// invocation (throttling, its own faults, the SDK's client errors).
var lambdaServiceErrors = []string{"Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException"}

// stepFunctionsServiceErrors are the errors Step Functions raises when it
// cannot start or follow a child execution (too many running, its own
// faults, the SDK's client errors): the parent's child Tasks retry them. A
// child that failed is States.TaskFailed, not retried: the child retried its
// own stages. Too many running executions is spelled
// StepFunctions.ExecutionLimitExceeded in Step Functions' error-handling
// guide and ...Exception after the SDK's type: both are retried.
var stepFunctionsServiceErrors = []string{"StepFunctions.ExecutionLimitExceeded", "StepFunctions.ExecutionLimitExceededException", "StepFunctions.SdkClientException", "StepFunctions.AWSStepFunctionsException"}

// aslState is the part of a state the retry and catch policy concerns.
type aslState struct {
	Type     string `json:"Type"`
	Resource string `json:"Resource"`
	Next     string `json:"Next"`
	Retry    []struct {
		ErrorEquals    []string `json:"ErrorEquals"`
		JitterStrategy string   `json:"JitterStrategy"`
		BackoffRate    float64  `json:"BackoffRate"`
	} `json:"Retry"`
	Catch []struct {
		ErrorEquals []string `json:"ErrorEquals"`
		Next        string   `json:"Next"`
		ResultPath  string   `json:"ResultPath"`
	} `json:"Catch"`
	ItemProcessor *struct {
		States map[string]aslState `json:"States"`
	} `json:"ItemProcessor"`
	Branches []struct {
		States map[string]aslState `json:"States"`
	} `json:"Branches"`
}

// Every Task, nested ones included and the children's, retries each of
// Lambda's service errors with backoff and full jitter (a Task starting a
// child retries Step Functions' instead); every top-level Task, Map and
// Parallel of the parent outside Operate catches States.ALL on its way to
// Operate, and every one of a child catches States.ALL into a Pass naming
// its stage on the way to the child's Fail, so a wave always ends with a
// recorded verdict and the operator knows the exact stage.
func TestEveryTaskRetriesLambdaErrorsAndCatchesIntoOperate(t *testing.T) {
	type def struct {
		States map[string]aslState `json:"States"`
	}
	var parent def
	if err := json.Unmarshal(Wave, &parent); err != nil {
		t.Fatal(err)
	}
	children := map[string]def{}
	for _, ch := range Children {
		var d def
		if err := json.Unmarshal(ch.Definition, &d); err != nil {
			t.Fatal(err)
		}
		children[ch.Name] = d
	}
	var tasks int
	var walk func(prefix string, states map[string]aslState)
	walk = func(prefix string, states map[string]aslState) {
		for name, st := range states {
			if st.ItemProcessor != nil {
				walk(prefix+name+"/", st.ItemProcessor.States)
			}
			for _, b := range st.Branches {
				walk(prefix+name+"/", b.States)
			}
			if st.Type != "Task" {
				continue
			}
			tasks++
			want := lambdaServiceErrors
			if st.Resource == "${"+StartExpressSyncPlaceholder+"}" {
				want = stepFunctionsServiceErrors
			}
			for _, e := range want {
				found := false
				for _, r := range st.Retry {
					if slices.Contains(r.ErrorEquals, e) {
						found = r.JitterStrategy == "FULL" && r.BackoffRate > 1
					}
				}
				if !found {
					t.Errorf("%s%s: no retry with backoff and full jitter for %s", prefix, name, e)
				}
			}
		}
	}
	walk("", parent.States)
	for name, d := range children {
		walk(name+": ", d.States)
	}
	if tasks < 14 {
		t.Errorf("found %d tasks, want at least 14", tasks)
	}
	for name, st := range parent.States {
		// The operator's own states end the wave themselves: a paused wave
		// nobody resumes is abandoned, and abandoning records the verdict.
		if operatorStates[name] || (st.Type != "Task" && st.Type != "Map" && st.Type != "Parallel") {
			continue
		}
		ok := false
		for _, c := range st.Catch {
			if slices.Contains(c.ErrorEquals, "States.ALL") && c.Next == "Operate on failure" && c.ResultPath == "$.failure" {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s: no States.ALL catch into Operate with ResultPath $.failure", name)
		}
	}
	for child, d := range children {
		for name, st := range d.States {
			if st.Type != "Task" && st.Type != "Map" && st.Type != "Parallel" {
				continue
			}
			ok := false
			for _, c := range st.Catch {
				report := d.States[c.Next]
				if slices.Contains(c.ErrorEquals, "States.ALL") && c.ResultPath == "$.failure" && report.Type == "Pass" &&
					d.States[report.Next].Type == "Fail" {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s: %s: no States.ALL catch, with ResultPath $.failure, into a Pass reporting the stage to a Fail", child, name)
			}
		}
	}
}

// operatorStates are the states of the operator's loop (seed 003's pause and
// resume), which need no catch into Operate.
var operatorStates = map[string]bool{"Operate on failure": true, "Wait for resume": true, "Abandon paused wave": true}
