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

// aslState is the part of a state the retry and catch policy concerns.
type aslState struct {
	Type  string `json:"Type"`
	Retry []struct {
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

// Every Task, nested ones included, retries each of Lambda's service errors
// with backoff and full jitter; every top-level Task, Map and Parallel outside
// Operate catches States.ALL on its way to Operate, so a wave always ends with
// a recorded verdict.
func TestEveryTaskRetriesLambdaErrorsAndCatchesIntoOperate(t *testing.T) {
	var def struct {
		States map[string]aslState `json:"States"`
	}
	if err := json.Unmarshal(Wave, &def); err != nil {
		t.Fatal(err)
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
			for _, e := range lambdaServiceErrors {
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
	walk("", def.States)
	if tasks < 14 {
		t.Errorf("found %d tasks, want at least 14", tasks)
	}
	reachesOperate := func(next string) bool {
		return next == "Operate on failure"
	}
	for name, st := range def.States {
		// The operator's own states end the wave themselves: a paused wave
		// nobody resumes is abandoned, and abandoning records the verdict.
		if operatorStates[name] || (st.Type != "Task" && st.Type != "Map" && st.Type != "Parallel") {
			continue
		}
		ok := false
		for _, c := range st.Catch {
			if slices.Contains(c.ErrorEquals, "States.ALL") && reachesOperate(c.Next) && c.ResultPath == "$.failure" {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s: no States.ALL catch into Operate with ResultPath $.failure", name)
		}
	}
}

// operatorStates are the states of the operator's loop (seed 003's pause and
// resume), which need no catch into Operate.
var operatorStates = map[string]bool{"Operate on failure": true, "Wait for resume": true, "Abandon paused wave": true}
