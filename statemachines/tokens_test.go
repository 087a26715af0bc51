package statemachines

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// The Express children log with execution data, so what they are given must
// hold no credential: no child reads a task token, and in the parent a task
// token goes only into the payload of a waitForTaskToken task (the
// escalation's and the pause's), whose result is the human's answer, never
// the token. Checked on the files, then on a run that escalates, pauses and
// resumes: no child's input and no child start holds a token the parent
// handed out.
func TestChildrenCarryNoTaskToken(t *testing.T) {
	for _, ch := range Children {
		for _, bad := range []string{"$$.Task.Token", "task_token"} {
			if strings.Contains(string(ch.Definition), bad) {
				t.Errorf("%s.asl.json mentions %s", ch.Name, bad)
			}
		}
	}
	var parent flowTokens
	if err := json.Unmarshal(Wave, &parent); err != nil {
		t.Fatal(err)
	}
	waits := 0
	for name, st := range parent.States {
		raw, _ := json.Marshal(st.Parameters)
		if !strings.Contains(string(raw), "$$.Task.Token") {
			continue
		}
		waits++
		payload, _ := json.Marshal(st.Parameters["Payload"])
		if st.Resource != "${"+WaitForTaskTokenPlaceholder+"}" || !strings.Contains(string(payload), `"task_token.$":"$$.Task.Token"`) ||
			strings.Count(string(raw), "$$.Task.Token") != 1 || st.ResultPath == "$" || st.ResultPath == "" {
			t.Errorf("%s: the task token goes elsewhere than a waitForTaskToken payload's task_token, or becomes the state (ResultPath %q): %s", name, st.ResultPath, raw)
		}
	}
	if waits != 2 {
		t.Errorf("%d states hand out a task token, want 2 (the escalation and the pause)", waits)
	}

	script := stepfn.TaskScript{
		"Plan observations":          {item(`{"jobs_bucket":"jobs","jobs_key":"waves/s1/jobs.json","job_count":2,"batch_size":5,"tolerated_failure_percentage":0,"max_concurrency":128,"tolerated_failures":0,"jobs":[{"id":"open-commitments"},{"id":"recent-actions"}]}`)},
		"Fetch":                      {item(`{"job_id":"j","jobs":1,"facts":0}`), item(`{"job_id":"j","jobs":1,"facts":0}`)},
		"Compile orientation packet": {item(`{"packet_id":"p","digest":"d","token_used":1,"token_budget":150000}`)},
		"Reason":                     {item(`{"decision_id":"d1","digest":"x","confidence":0.3,"band":"low","tier":1,"action_type":"notify"}`)},
		"Escalate to a human":        {item(`{"verdict":"approved","reason":"ok","by":"alice"}`)},
		"Act":                        {failure("InternalError"), item(`{"outcome":"success","evidence":["0"]}`)},
		"Operate on failure":         {item(`{"failure":{"Error":"InternalError","Cause":"x"},"action":"pause","error":"InternalError","cause":"x","operator_decision_id":"op1","resume_at":"Act","pause_timeout_seconds":600}`)},
		"Wait for resume":            {item(`{"action":"resume","resume_at":"Act","error":"InternalError","cause":"x"}`)},
		"Technical validator":        {item(`{"validator":"technical","verdict":"PASS"}`)},
		"Witness":                    {item(`{"validator":"witness","verdict":"PASS"}`)},
		"Record outcome":             {item(`{"final":"completed"}`)},
	}
	p, children := wave(t)
	out, err := stepfn.RunScriptedChildren(context.Background(), p, children, []byte(`{"signal_id":"s1","escalation_timeout_seconds":3600}`), script, withJobs)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "SUCCEEDED" {
		t.Fatalf("status %s (%s %s), want SUCCEEDED", out.Status, out.Error, out.Cause)
	}
	var tokens, childInputs []string
	for _, ev := range out.History {
		if d := ev.TaskScheduledEventDetails; d != nil {
			var params struct {
				Payload struct {
					TaskToken string `json:"task_token"`
				} `json:"Payload"`
			}
			_ = json.Unmarshal([]byte(d.Parameters), &params)
			if params.Payload.TaskToken != "" {
				tokens = append(tokens, params.Payload.TaskToken)
			}
			if strings.Contains(d.Parameters, "StateMachineArn") {
				childInputs = append(childInputs, d.Parameters)
			}
		}
		if d := ev.ExecutionStartedEventDetails; d != nil {
			childInputs = append(childInputs, d.Input)
		}
	}
	if len(tokens) != 2 || len(childInputs) < 4 {
		t.Fatalf("%d task tokens and %d child inputs seen, want 2 tokens (escalation, pause) and the children's inputs", len(tokens), len(childInputs))
	}
	for _, in := range childInputs {
		for _, tok := range tokens {
			if strings.Contains(in, tok) {
				t.Errorf("a child's input holds a task token: %s", in)
			}
		}
	}
}

// flowTokens is the part of a definition the token check reads.
type flowTokens struct {
	States map[string]struct {
		Resource   string         `json:"Resource"`
		ResultPath string         `json:"ResultPath"`
		Parameters map[string]any `json:"Parameters"`
	} `json:"States"`
}
