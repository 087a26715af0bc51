package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const cliDef = `{"StartAt":"Plan","States":{
	"Plan":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:plan","ResultPath":"$.plan",
		"Retry":[{"ErrorEquals":["TransientError"],"IntervalSeconds":30,"MaxAttempts":2}],"Next":"Escalate"},
	"Escalate":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken","TimeoutSeconds":600,
		"Parameters":{"FunctionName":"escalate","Payload":{"task_token.$":"$$.Task.Token"}},"ResultPath":"$.verdict","End":true}}}`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStatemachineRun(t *testing.T) {
	dir := t.TempDir()
	def := writeFile(t, dir, "def.json", cliDef)
	input := writeFile(t, dir, "input.json", `{"signal_id":"s1"}`)
	tests := []struct {
		name       string
		args       []string
		tasks      string
		wantCode   int
		wantStdout string // JSON, compared semantically
		wantStderr []string
	}{
		{
			name:       "success after a retry, callback delivered",
			args:       []string{"--input", "@" + input},
			tasks:      `{"Plan":[{"error":"TransientError","cause":"busy"},{"result":{"jobs":[]}}],"Escalate":[{"result":{"verdict":"approved"}}]}`,
			wantCode:   0,
			wantStdout: `{"signal_id":"s1","plan":{"jobs":[]},"verdict":{"verdict":"approved"}}`,
		},
		{
			name:       "failure",
			args:       []string{"--input", `{"signal_id":"s2"}`},
			tasks:      `{"Plan":[{"error":"InvalidInput","cause":"no signal"}]}`,
			wantCode:   1,
			wantStdout: `{"error":"InvalidInput","cause":"no signal"}`,
		},
		{
			name:       "callback timeout on the virtual clock",
			args:       []string{"--input", `{}`},
			tasks:      `{"Plan":[{"result":{}}],"Escalate":[{"result":{"verdict":"late"},"delay_seconds":3600}]}`,
			wantCode:   1,
			wantStdout: `{"error":"States.Timeout","cause":""}`,
		},
		{
			name:       "history on stderr",
			args:       []string{"--history"},
			tasks:      `{"Plan":[{"result":{}}],"Escalate":[{"error":"Rejected","cause":"no"}]}`,
			wantCode:   1,
			wantStdout: `{"error":"Rejected","cause":"no"}`,
			wantStderr: []string{`"type": "ExecutionStarted"`, `"type": "TaskSubmitted"`, `"type": "ExecutionFailed"`},
		},
		{
			name:       "tasks file names an unknown state",
			tasks:      `{"Nope":[{"result":1}]}`,
			wantCode:   2,
			wantStderr: []string{`"Nope" is not a Task state`},
		},
		{
			name:       "tasks file item with result and error",
			tasks:      `{"Plan":[{"result":1,"error":"E"}]}`,
			wantCode:   2,
			wantStderr: []string{"exactly one of result, response and error"},
		},
		{
			name:       "tasks file not JSON",
			tasks:      `[`,
			wantCode:   2,
			wantStderr: []string{"tasks file"},
		},
		{
			name:       "input not JSON",
			args:       []string{"--input", `{nope`},
			tasks:      `{}`,
			wantCode:   2,
			wantStderr: []string{"input is not valid JSON"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tasks := writeFile(t, dir, "tasks"+string(rune('a'+i))+".json", tt.tasks)
			args := append([]string{"run", "--definition", def, "--tasks", tasks}, tt.args...)
			var stdout, stderr bytes.Buffer
			code := runStatemachine(context.Background(), args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, tt.wantCode, stdout.String(), stderr.String())
			}
			if tt.wantStdout != "" {
				var got, want any
				if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
					t.Fatalf("stdout %q is not JSON: %v", stdout.String(), err)
				}
				_ = json.Unmarshal([]byte(tt.wantStdout), &want)
				gb, _ := json.Marshal(got)
				wb, _ := json.Marshal(want)
				if string(gb) != string(wb) {
					t.Errorf("stdout = %s, want %s", gb, wb)
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

func TestStatemachineInvalidDefinition(t *testing.T) {
	dir := t.TempDir()
	def := writeFile(t, dir, "def.json", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"Missing"}}}`)
	var stdout, stderr bytes.Buffer
	code := runStatemachine(context.Background(), []string{"run", "--definition", def}, &stdout, &stderr)
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "state A") || !strings.Contains(stderr.String(), `"Missing"`) {
		t.Errorf("stderr %q should name state A and the missing target", stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
}

func TestStatemachineUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no subcommand", nil, 2},
		{"unknown subcommand", []string{"walk"}, 2},
		{"missing definition", []string{"run"}, 2},
		{"missing file", []string{"run", "--definition", "/nonexistent/def.json"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := runStatemachine(context.Background(), tt.args, &stdout, &stderr); got != tt.want {
				t.Errorf("exit %d, want %d", got, tt.want)
			}
			if stderr.Len() == 0 {
				t.Errorf("stderr is empty; want a reason")
			}
		})
	}
}

// The project's own definition runs as the README shows it: its placeholders
// filled from events/statemachine/substitutions.json (or --substitute), every
// function scripted by a tasks file.
func TestStatemachineRunProjectDefinition(t *testing.T) {
	const (
		def   = "../../statemachines/ora.asl.json"
		subs  = "../../events/statemachine/substitutions.json"
		input = "@../../events/statemachine/input.json"
	)
	dir := t.TempDir()
	partial := writeFile(t, dir, "partial.json", `{"PlanFunctionArn":"arn:aws:lambda:us-east-1:000000000000:function:plan"}`)
	all := map[string]string{}
	b, err := os.ReadFile(subs)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	var flags []string
	for k, v := range all {
		if k != "PlanFunctionArn" {
			flags = append(flags, "--substitute", k+"="+v)
		}
	}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string
		wantStderr []string
	}{
		{name: "high confidence acts and records", wantCode: 0,
			args:       []string{"--substitutions", subs, "--tasks", "../../events/statemachine/tasks-high.json", "--objects", "../../events/statemachine/objects"},
			wantStdout: []string{`"final":{"final":"completed"}`, `"act":{`}},
		{name: "low confidence rejected never acts", wantCode: 0,
			args:       []string{"--substitutions", subs, "--tasks", "../../events/statemachine/tasks-low-rejected.json", "--objects", "../../events/statemachine/objects"},
			wantStdout: []string{`"final":{"final":"rejected"}`, `"verdict":"rejected"`}},
		{name: "file and repeated flags together", wantCode: 0,
			args:       append([]string{"--substitutions", partial, "--tasks", "../../events/statemachine/tasks-high.json", "--objects", "../../events/statemachine/objects"}, flags...),
			wantStdout: []string{`"final":{"final":"completed"}`}},
		{name: "a flag wins over the file", wantCode: 2,
			args:       []string{"--substitutions", subs, "--substitute", "${ActFunctionArn}=not-an-arn"},
			wantStderr: []string{"not-an-arn"}},
		{name: "no substitutions names every placeholder", wantCode: 2,
			args:       []string{"--substitute", "PlanFunctionArn=arn:aws:lambda:us-east-1:000000000000:function:plan"},
			wantStderr: []string{"placeholders without a value", "${ActChildArn}", "${OperateFunctionArn}", "--substitute NAME=VALUE"}},
		{name: "substitute without =", wantCode: 2,
			args:       []string{"--substitute", "ActFunctionArn"},
			wantStderr: []string{"want NAME=VALUE"}},
		{name: "substitutions file not an object of strings", wantCode: 2,
			args:       []string{"--substitutions", writeFile(t, dir, "bad.json", `{"A":1}`)},
			wantStderr: []string{"want a JSON object of strings"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "--definition", def, "--input", input,
				"--child", "reason=../../statemachines/reason.asl.json", "--child", "act=../../statemachines/act.asl.json"}, tt.args...)
			var stdout, stderr bytes.Buffer
			if code := runStatemachine(context.Background(), args, &stdout, &stderr); code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, tt.wantCode, stdout.String(), stderr.String())
			}
			for _, w := range tt.wantStdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout does not contain %s:\n%s", w, stdout.String())
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}
