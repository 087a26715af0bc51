package statemachines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// wave is the deployed definition with every function ARN filled in, and its
// Express children by the state machine name their ARN in it names.
func wave(t *testing.T) ([]byte, map[string][]byte) {
	t.Helper()
	subs := Integrations("aws")
	children := map[string][]byte{}
	for _, ch := range Children {
		subs[ch.Placeholder] = "arn:aws:states:us-east-1:123456789012:stateMachine:" + ch.Name
	}
	defs := [][]byte{Wave}
	for _, ch := range Children {
		defs = append(defs, ch.Definition)
	}
	for _, def := range defs {
		for _, p := range Placeholders(def) {
			if _, ok := subs[p]; !ok {
				subs[p] = "arn:aws:lambda:us-east-1:000000000000:function:" + strings.TrimSuffix(p, "FunctionArn")
			}
		}
	}
	for _, ch := range Children {
		children[ch.Name] = Substitute(ch.Definition, subs)
	}
	return Substitute(Wave, subs), children
}

// objects is an in-memory object store: the jobs Plan wrote, for the Fetch
// Map's ItemReader.
type objects map[string]string

func (o objects) GetObject(_ context.Context, bucket, key string) ([]byte, error) {
	b, ok := o[bucket+"/"+key]
	if !ok {
		return nil, errors.New("NoSuchKey")
	}
	return []byte(b), nil
}

// withJobs serves the two jobs the scripted Plan says it wrote.
func withJobs(o *stepfn.Options) {
	o.Objects = objects{"jobs/waves/s1/jobs.json": `[{"id":"open-commitments"},{"id":"recent-actions"}]`}
}

func item(result string) stepfn.ScriptItem { return stepfn.ScriptItem{Result: json.RawMessage(result)} }

func failure(name string) stepfn.ScriptItem {
	return stepfn.ScriptItem{Error: name, Cause: `{"errorMessage":"` + name + `","errorType":"` + name + `"}`}
}

// The real ASL through the local engine with scripted tasks: each route of a
// wave visits the states it should, and only those.
func TestWaveRoutes(t *testing.T) {
	decision := func(band string, tier int) stepfn.ScriptItem {
		return item(`{"decision_id":"d1","digest":"x","confidence":0.5,"band":"` + band + `","tier":` + string(rune('0'+tier)) + `,"action_type":"notify"}`)
	}
	validator := item(`{"validator":"x","verdict":"PASS"}`)
	base := func(band string, tier int) stepfn.TaskScript {
		return stepfn.TaskScript{
			"Plan observations":          {item(`{"jobs_bucket":"jobs","jobs_key":"waves/s1/jobs.json","job_count":2,"batch_size":5,"tolerated_failure_percentage":0,"max_concurrency":128}`)},
			"Fetch":                      {item(`{"job_id":"j","facts":0}`)},
			"Compile orientation packet": {item(`{"packet_id":"p","digest":"d","token_used":1,"token_budget":150000}`)},
			"Reason":                     {decision(band, tier)},
			"Flag for review":            {item(`{"review":"requested"}`)},
			"Act":                        {item(`{"outcome":"success","evidence":["0"]}`)},
			"Technical validator":        {validator},
			"Safety validator":           {validator},
			"Intent validator":           {validator},
			"Witness":                    {validator},
			"Record outcome":             {item(`{"final":"completed"}`)},
			"Record rejection":           {item(`{"final":"rejected"}`)},
			"Operate on failure":         {item(`{"failure":{"Error":"x","Cause":"y"},"action":"fail","error":"ActionFailed","cause":"the request failed"}`)},
			"Abandon paused wave":        {item(`{"action":"fail","error":"ActionFailed","cause":"not resumed in time"}`)},
		}
	}
	cases := []struct {
		name      string
		band      string
		tier      int
		edit      func(s stepfn.TaskScript)
		status    string
		visits    []string
		avoids    []string
		wantError string
	}{
		{name: "high confidence acts at once", band: "high", tier: 1, status: "SUCCEEDED",
			visits: []string{"Act", "Technical validator", "Witness", "Safety not required", "Intent not required", "Record outcome"},
			avoids: []string{"Flag for review", "Escalate to a human", "Operate on failure"}},
		{name: "medium confidence flags for review, tier 2 adds safety", band: "medium", tier: 2, status: "SUCCEEDED",
			visits: []string{"Flag for review", "Act", "Safety validator", "Intent not required", "Record outcome"},
			avoids: []string{"Escalate to a human"}},
		{name: "low confidence approved", band: "low", tier: 3, status: "SUCCEEDED",
			edit: func(s stepfn.TaskScript) {
				s["Escalate to a human"] = []stepfn.ScriptItem{item(`{"verdict":"approved","reason":"ok","by":"alice"}`)}
			},
			visits: []string{"Escalate to a human", "Approved?", "Act", "Safety validator", "Intent validator", "Record outcome"},
			avoids: []string{"Record rejection"}},
		{name: "low confidence rejected never acts", band: "low", tier: 1, status: "SUCCEEDED",
			edit: func(s stepfn.TaskScript) {
				s["Escalate to a human"] = []stepfn.ScriptItem{item(`{"verdict":"rejected","reason":"no","by":"alice"}`)}
			},
			visits: []string{"Escalate to a human", "Record rejection", "Rejected"},
			avoids: []string{"Act"}},
		{name: "silence past the timeout is a rejection", band: "low", tier: 1, status: "SUCCEEDED",
			edit: func(s stepfn.TaskScript) {
				s["Escalate to a human"] = []stepfn.ScriptItem{{Result: json.RawMessage(`{"verdict":"approved"}`), DelaySeconds: 7200}}
			},
			visits: []string{"Treat silence as rejection", "Record rejection"},
			avoids: []string{"Act"}},
		{name: "a failed action goes to operate", band: "high", tier: 1, status: "FAILED", wantError: "ActionFailed",
			edit:   func(s stepfn.TaskScript) { s["Act"] = []stepfn.ScriptItem{failure("ActionFailed")} },
			visits: []string{"Act", "Operate on failure", "Wave failed"},
			avoids: []string{"Validate", "Record outcome"}},
		{name: "a transient act failure is retried by the parent after a backoff", band: "high", tier: 1, status: "SUCCEEDED",
			edit: func(s stepfn.TaskScript) {
				// Act's own retries of TransientError would not fit in its
				// Express child's budget: the operator backs off and resumes.
				s["Act"] = []stepfn.ScriptItem{failure("TransientError"), item(`{"outcome":"success","evidence":["0"]}`)}
				s["Operate on failure"] = []stepfn.ScriptItem{item(`{"failure":{"Error":"x","Cause":"y"},"action":"retry","error":"TransientError","cause":"x","resume_at":"Act","backoff_seconds":30}`)}
			},
			visits: []string{"Act", "Operate on failure", "Back off", "Resume at the failed stage", "Record outcome"},
			avoids: []string{"Wave failed"}},
		{name: "a Lambda service error is retried in the child", band: "high", tier: 1, status: "SUCCEEDED",
			edit: func(s stepfn.TaskScript) {
				s["Compile orientation packet"] = []stepfn.ScriptItem{failure("Lambda.ServiceException"), item(`{"packet_id":"p","digest":"d","token_used":1,"token_budget":150000}`)}
			},
			visits: []string{"Compile orientation packet", "Reason", "Record outcome"},
			avoids: []string{"Operate on failure"}},
		{name: "a failed validator goes to operate", band: "high", tier: 1, status: "FAILED", wantError: "ActionFailed",
			edit:   func(s stepfn.TaskScript) { s["Technical validator"] = []stepfn.ScriptItem{failure("ValidationFailed")} },
			visits: []string{"Validate", "Operate on failure", "Wave failed"},
			avoids: []string{"Record outcome"}},
		{name: "a failed escalation goes to operate", band: "low", tier: 1, status: "FAILED", wantError: "ActionFailed",
			edit:   func(s stepfn.TaskScript) { s["Escalate to a human"] = []stepfn.ScriptItem{failure("Conflict")} },
			visits: []string{"Escalate to a human", "Operate on failure", "Wave failed"},
			avoids: []string{"Act", "Record rejection"}},
		{name: "a paused wave resumes at the failed stage", band: "high", tier: 1, status: "SUCCEEDED",
			edit: func(s stepfn.TaskScript) {
				s["Act"] = []stepfn.ScriptItem{failure("InternalError"), item(`{"outcome":"success","evidence":["0"]}`)}
				s["Operate on failure"] = []stepfn.ScriptItem{item(`{"failure":{"Error":"x","Cause":"y"},"action":"pause","error":"InternalError","cause":"x","operator_decision_id":"op1","resume_at":"Act","pause_timeout_seconds":600}`)}
				s["Wait for resume"] = []stepfn.ScriptItem{item(`{"action":"resume","resume_at":"Act","error":"InternalError","cause":"x"}`)}
			},
			visits: []string{"Operate on failure", "Pause or fail?", "Wait for resume", "Resume at the failed stage", "Act", "Record outcome"},
			avoids: []string{"Back off", "Wave failed"}},
		{name: "a transient failure is retried after a backoff", band: "high", tier: 1, status: "SUCCEEDED",
			edit: func(s stepfn.TaskScript) {
				// Lambda.Unknown: not retried by the state, transient to the operator.
				s["Reason"] = []stepfn.ScriptItem{failure("Lambda.Unknown"), decision("high", 1)}
				s["Operate on failure"] = []stepfn.ScriptItem{item(`{"failure":{"Error":"x","Cause":"y"},"action":"retry","error":"Lambda.Unknown","cause":"x","resume_at":"Reason","backoff_seconds":2}`)}
			},
			visits: []string{"Operate on failure", "Back off", "Resume at the failed stage", "Reason", "Act", "Record outcome"},
			avoids: []string{"Wait for resume", "Wave failed"}},
		{name: "a paused wave nobody resumes fails", band: "high", tier: 1, status: "FAILED", wantError: "ActionFailed",
			edit: func(s stepfn.TaskScript) {
				s["Plan observations"] = []stepfn.ScriptItem{failure("InternalError")}
				s["Operate on failure"] = []stepfn.ScriptItem{item(`{"failure":{"Error":"x","Cause":"y"},"action":"pause","error":"InternalError","cause":"x","operator_decision_id":"op1","resume_at":"Plan observations","pause_timeout_seconds":600}`)}
				s["Wait for resume"] = []stepfn.ScriptItem{{Result: json.RawMessage(`{}`), DelaySeconds: 7200}}
			},
			visits: []string{"Plan observations", "Wait for resume", "Abandon paused wave", "Wave failed"},
			avoids: []string{"Fetch observations", "Resume at the failed stage"}},
	}
	// Every stage's failure reaches the operator.
	for _, stage := range []string{"Plan observations", "Fetch", "Compile orientation packet", "Reason", "Flag for review", "Record outcome"} {
		cases = append(cases, struct {
			name      string
			band      string
			tier      int
			edit      func(s stepfn.TaskScript)
			status    string
			visits    []string
			avoids    []string
			wantError string
		}{name: stage + " fails into operate", band: "medium", tier: 1, status: "FAILED", wantError: "ActionFailed",
			edit: func(s stepfn.TaskScript) {
				s[stage] = []stepfn.ScriptItem{failure("InternalError"), failure("InternalError")}
			},
			visits: []string{stage, "Operate on failure", "Wave failed"}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			script := base(tc.band, tc.tier)
			if tc.edit != nil {
				tc.edit(script)
			}
			parent, children := wave(t)
			out, err := stepfn.RunScriptedChildren(context.Background(), parent, children, []byte(`{"signal_id":"s1","escalation_timeout_seconds":3600}`), script, withJobs)
			if err != nil {
				t.Fatalf("RunScripted: %v", err)
			}
			if out.Status != tc.status || out.Error != tc.wantError {
				t.Fatalf("status %s error %q cause %q, want %s %q", out.Status, out.Error, out.Cause, tc.status, tc.wantError)
			}
			entered := map[string]bool{}
			for _, ev := range out.History {
				if ev.StateEnteredEventDetails != nil {
					entered[ev.StateEnteredEventDetails.Name] = true
				}
			}
			for _, s := range tc.visits {
				if !entered[s] {
					t.Errorf("did not enter %q", s)
				}
			}
			for _, s := range tc.avoids {
				if entered[s] {
					t.Errorf("entered %q", s)
				}
			}
		})
	}
}

// The "Fetch observations" Map is a Distributed Map reading the jobs Plan
// wrote: each batch is a child execution, at most 128 at once, and the
// tolerated failure percentage comes from Plan's result (the profile).
func TestFetchIsADistributedMap(t *testing.T) {
	var def struct {
		States map[string]map[string]any `json:"States"`
	}
	if err := json.Unmarshal(Wave, &def); err != nil {
		t.Fatal(err)
	}
	m := def.States["Fetch observations"]
	b, _ := json.Marshal(m)
	for _, want := range []string{
		`"ProcessorConfig":{"ExecutionType":"EXPRESS","Mode":"DISTRIBUTED"}`,
		`"ItemReader":{"Parameters":{"Bucket.$":"$.plan.jobs_bucket","Key.$":"$.plan.jobs_key"},"ReaderConfig":{"InputType":"JSON"},"Resource":"${S3GetObject}"}`,
		`"MaxConcurrencyPath":"$.plan.max_concurrency"`,
		`"ToleratedFailurePercentagePath":"$.plan.tolerated_failure_percentage"`,
		`"MaxItemsPerBatchPath":"$.plan.batch_size"`,
		`"BatchInput":{"signal_id.$":"$.signal_id"}`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("Fetch observations lacks %s:\n%s", want, b)
		}
	}

	tests := []struct {
		name      string
		tolerated int
		status    string
	}{
		{"one batch of two failed, half tolerated", 50, "SUCCEEDED"},
		{"one batch of two failed, none tolerated", 0, "FAILED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := fmt.Sprintf(`{"jobs_bucket":"jobs","jobs_key":"waves/s1/jobs.json","job_count":2,"batch_size":1,"tolerated_failure_percentage":%d,"max_concurrency":2}`, tt.tolerated)
			script := stepfn.TaskScript{
				"Plan observations":          {item(plan)},
				"Fetch":                      {failure("InternalError"), item(`{"jobs":1,"facts":0}`)},
				"Compile orientation packet": {item(`{"packet_id":"p","digest":"d","token_used":1,"token_budget":150000}`)},
				"Reason":                     {failure("InternalError")},
				"Operate on failure":         {item(`{"failure":{"Error":"x","Cause":"y"},"action":"fail","error":"Stopped","cause":"here"}`)},
			}
			parent, childDefs := wave(t)
			out, err := stepfn.RunScriptedChildren(context.Background(), parent, childDefs, []byte(`{"signal_id":"s1"}`), script, withJobs)
			if err != nil {
				t.Fatal(err)
			}
			var children int
			entered := map[string]bool{}
			for _, ev := range out.History {
				if d := ev.StateEnteredEventDetails; d != nil {
					entered[d.Name] = true
					if d.Name == "Fetch" {
						children++
					}
				}
			}
			if children != 2 {
				t.Errorf("%d Fetch children ran, want 2 (two jobs in batches of one)", children)
			}
			// Past Fetch, the scripted Reason stops the wave at Operate.
			if got := entered["Compile orientation packet"]; got != (tt.status == "SUCCEEDED") {
				t.Errorf("reached Compile: %v, want %v (error %s %s)", got, tt.status == "SUCCEEDED", out.Error, out.Cause)
			}
			if !entered["Operate on failure"] {
				t.Error("did not reach Operate")
			}
		})
	}
}

// A fan-out Plan hands inline runs in the reason child's inline Map, one
// Fetch per job, and the wave goes on without the jobs; a larger one (no jobs
// inline) runs as the Distributed Map. Failed inline jobs past the tolerated
// count fail the stage Fetch observations.
func TestFetchInlineOrDistributed(t *testing.T) {
	const jobs = `[{"id":"open-commitments"},{"id":"recent-actions"},{"id":"workspace-state"}]`
	plan := func(inline bool, tolerated int) string {
		p := `{"jobs_bucket":"jobs","jobs_key":"waves/s1/jobs.json","job_count":3,"batch_size":5,"tolerated_failure_percentage":50,"max_concurrency":128,"tolerated_failures":` + fmt.Sprint(tolerated)
		if inline {
			p += `,"jobs":` + jobs
		}
		return p + `}`
	}
	fetched := item(`{"job_id":"j","jobs":1,"facts":0}`)
	tests := []struct {
		name    string
		plan    string
		fetch   []stepfn.ScriptItem
		fetches int
		visits  []string
		avoids  []string
		status  string
		operate string
	}{
		{name: "three jobs inline", plan: plan(true, 1), fetch: []stepfn.ScriptItem{fetched, fetched, fetched}, fetches: 3,
			visits: []string{"Fetch inline?", "Orient and reason", "Fetch each job", "Forget the jobs", "Compile orientation packet", "Record outcome"},
			avoids: []string{"Fetch observations", "Operate on failure"}, status: "SUCCEEDED"},
		{name: "one failed inline job is tolerated", plan: plan(true, 1), fetch: []stepfn.ScriptItem{failure("InternalError"), fetched, fetched}, fetches: 3,
			visits: []string{"Fetch each job", "Job failed", "Forget the jobs", "Record outcome"},
			avoids: []string{"Operate on failure"}, status: "SUCCEEDED"},
		{name: "an inline job failed past the tolerated count", plan: plan(true, 0), fetch: []stepfn.ScriptItem{failure("InternalError"), fetched, fetched}, fetches: 3,
			visits: []string{"Job failed", "Too many jobs failed", "Operate on failure", "Wave failed"},
			avoids: []string{"Compile orientation packet"}, status: "FAILED"},
		{name: "a larger fan-out runs as a Distributed Map", plan: plan(false, 1), fetch: []stepfn.ScriptItem{item(`{"jobs":3,"facts":0}`)}, fetches: 1,
			visits: []string{"Fetch inline?", "Fetch observations", "Orient and reason", "Record outcome"},
			avoids: []string{"Fetch each job"}, status: "SUCCEEDED"},
		{name: "a resume at Fetch observations runs the Distributed Map, then no inline fetch", plan: plan(true, 0),
			fetch: []stepfn.ScriptItem{failure("InternalError"), fetched, fetched, item(`{"jobs":3,"facts":0}`)}, fetches: 4,
			operate: `{"failure":{"Error":"x","Cause":"y"},"action":"retry","error":"States.ExceedToleratedFailureThreshold","cause":"x","resume_at":"Fetch observations","backoff_seconds":5}`,
			visits:  []string{"Too many jobs failed", "Back off", "Fetch observations", "Forget the jobs", "Record outcome"},
			status:  "SUCCEEDED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := stepfn.TaskScript{
				"Plan observations":          {item(tt.plan)},
				"Fetch":                      tt.fetch,
				"Compile orientation packet": {item(`{"packet_id":"p","digest":"d","token_used":1,"token_budget":150000}`)},
				"Reason":                     {item(`{"decision_id":"d1","digest":"x","confidence":0.9,"band":"high","tier":1,"action_type":"notify"}`)},
				"Act":                        {item(`{"outcome":"success","evidence":["0"]}`)},
				"Technical validator":        {item(`{"validator":"technical","verdict":"PASS"}`)},
				"Witness":                    {item(`{"validator":"witness","verdict":"PASS"}`)},
				"Record outcome":             {item(`{"final":"completed"}`)},
				"Operate on failure":         {item(`{"failure":{"Error":"x","Cause":"y"},"action":"fail","error":"States.ExceedToleratedFailureThreshold","cause":"jobs failed"}`)},
			}
			if tt.operate != "" {
				script["Operate on failure"] = []stepfn.ScriptItem{item(tt.operate)}
			}
			parent, children := wave(t)
			out, err := stepfn.RunScriptedChildren(context.Background(), parent, children, []byte(`{"signal_id":"s1"}`), script, func(o *stepfn.Options) {
				o.Objects = objects{"jobs/waves/s1/jobs.json": jobs}
			})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != tt.status {
				t.Fatalf("status %s (%s %s), want %s", out.Status, out.Error, out.Cause, tt.status)
			}
			entered := map[string]int{}
			var compileInput string
			for _, ev := range out.History {
				if d := ev.StateEnteredEventDetails; d != nil {
					entered[d.Name]++
					if d.Name == "Compile orientation packet" || d.Name == "Act and validate" {
						compileInput += d.Input
					}
				}
			}
			if entered["Fetch"] != tt.fetches {
				t.Errorf("Fetch ran %d times, want %d", entered["Fetch"], tt.fetches)
			}
			for _, s := range tt.visits {
				if entered[s] == 0 {
					t.Errorf("did not enter %q", s)
				}
			}
			for _, s := range tt.avoids {
				if entered[s] > 0 {
					t.Errorf("entered %q", s)
				}
			}
			if strings.Contains(compileInput, "workspace-state") {
				t.Errorf("the jobs travel on with the wave: %s", compileInput)
			}
		})
	}
}
