package statemachines

import (
	"context"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// With batching on, Reason answers with a wait: the child ends, the parent
// waits the seconds asked for and runs the child again, which looks at the
// batch again with its ticket, until the batch decided; then the wave
// routes on the decision as any other.
func TestReasonBatchLoop(t *testing.T) {
	wait := func(seconds string) stepfn.ScriptItem {
		return item(`{"batch_wait":{"batch_id":"s0@1","closes_at":"2026-11-26T10:00:01Z","seconds":` + seconds + `}}`)
	}
	decided := item(`{"decision_id":"d1","digest":"x","confidence":0.9,"band":"high","tier":1,"action_type":"notify","batch_id":"s0@1"}`)
	tests := []struct {
		name        string
		reason      []stepfn.ScriptItem
		inBatch     []stepfn.ScriptItem
		waits, acts int
		operate     []stepfn.ScriptItem
	}{
		{"batching off", []stepfn.ScriptItem{decided}, nil, 0, 1, nil},
		{"the window, then the leader's decision", []stepfn.ScriptItem{wait("1")}, []stepfn.ScriptItem{decided}, 1, 1, nil},
		{"the window and two polls", []stepfn.ScriptItem{wait("1")}, []stepfn.ScriptItem{wait("2"), wait("2"), decided}, 3, 1, nil},
		// A failed look is resumed at Reason: the wave keeps its ticket
		// instead of joining a new batch.
		{"a failed look resumes in the batch", []stepfn.ScriptItem{wait("1")}, []stepfn.ScriptItem{failure("InternalError"), decided}, 1, 1,
			[]stepfn.ScriptItem{item(`{"failure":{"Error":"x","Cause":"y"},"action":"retry","error":"InternalError","cause":"x","resume_at":"Reason","backoff_seconds":2}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent, children := wave(t)
			script := stepfn.TaskScript{
				"Plan observations":          {item(`{"jobs_bucket":"jobs","jobs_key":"waves/s1/jobs.json","job_count":2,"batch_size":5,"tolerated_failure_percentage":0,"max_concurrency":128}`)},
				"Fetch":                      {item(`{"job_id":"j","facts":0}`)},
				"Compile orientation packet": {item(`{"packet_id":"p","digest":"d","token_used":1,"token_budget":150000}`)},
				"Reason":                     tt.reason,
				"Act":                        {item(`{"outcome":"success","evidence":["0"]}`)},
				"Technical validator":        {item(`{"validator":"x","verdict":"PASS"}`)},
				"Witness":                    {item(`{"validator":"x","verdict":"PASS"}`)},
				"Record outcome":             {item(`{"final":"completed"}`)},
			}
			if len(tt.inBatch) > 0 {
				script["Reason in the batch"] = tt.inBatch
			}
			if tt.operate != nil {
				script["Operate on failure"] = tt.operate
			}
			out, err := stepfn.RunScriptedChildren(context.Background(), parent, children, []byte(`{"signal_id":"s1","escalation_timeout_seconds":3600}`), script, withJobs)
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != "SUCCEEDED" {
				t.Fatalf("status %s %s %s", out.Status, out.Error, out.Cause)
			}
			entered := map[string]int{}
			for _, ev := range out.History {
				d := ev.StateEnteredEventDetails
				if d == nil {
					continue
				}
				entered[d.Name]++
				if d.Name == "Reason in the batch" && !strings.Contains(d.Input, `"batch_wait":{"batch_id":"s0@1"`) {
					t.Errorf("Reason in the batch entered without the ticket: %s", d.Input)
				}
			}
			if entered["Wait for the batch"] != tt.waits || entered["Act and validate"] != tt.acts || entered["Escalate to a human"] != 0 {
				t.Errorf("waits %d, acts %d, escalations %d; want %d, %d and none", entered["Wait for the batch"], entered["Act and validate"], entered["Escalate to a human"], tt.waits, tt.acts)
			}
			// The child's fetch and compile run once: a wave back from its
			// wait looks at its batch only.
			if entered["Compile orientation packet"] != 1 || entered["Reason"] != 1 || entered["Reason in the batch"] != len(tt.inBatch) {
				t.Errorf("compile %d, reason %d, reason in the batch %d; want 1, 1, %d", entered["Compile orientation packet"], entered["Reason"], entered["Reason in the batch"], len(tt.inBatch))
			}
		})
	}
}
