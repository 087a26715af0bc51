package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

const testStateDef = `{"StartAt":"Quote","States":{
	"Quote":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","InputPath":"$.order",
		"Parameters":{"FunctionName":"quote","Payload":{"sku.$":"$.sku"}},
		"ResultSelector":{"price.$":"$.Payload.price"},"ResultPath":"$.quote","Assign":{"last_price.$":"$.price"},
		"Retry":[{"ErrorEquals":["Busy"],"MaxAttempts":2}],
		"Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.error","Next":"Park"}],"Next":"Route"},
	"Route":{"Type":"Choice","Choices":[{"Variable":"$.quote.price","NumericGreaterThan":100,"Next":"Review"}],"Default":"Accept"},
	"Review":{"Type":"Succeed"},"Accept":{"Type":"Succeed"},"Park":{"Type":"Succeed"},
	"Greet":{"Type":"Pass","QueryLanguage":"JSONata","Output":{"hello":"{% $states.input.name %}"},"Assign":{"greeted":"{% $states.input.name %}"},"End":true}}}`

func TestStatemachineTestState(t *testing.T) {
	dir := t.TempDir()
	def := writeFile(t, dir, "def.json", testStateDef)
	one := writeFile(t, dir, "one.json", `{"Type":"Pass","Parameters":{"id.$":"$.id"},"ResultPath":"$.copy","Next":"Later"}`)
	const in = `{"order":{"sku":"a"},"name":"Ada"}`
	const okMock = `{"result":{"StatusCode":200,"Payload":{"price":120}}}`
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     map[string]string // top-level field -> JSON, compared semantically; "-" means absent
		wantData map[string]string // inspectionData field -> JSON; "-" means absent
	}{
		{"INFO task succeeded", []string{"--definition", def, "--state", "Quote", "--input", in, "--mock", okMock}, 0,
			map[string]string{"status": `"SUCCEEDED"`, "nextState": `"Route"`, "output": `{"order":{"sku":"a"},"name":"Ada","quote":{"price":120}}`, "inspectionData": "-"}, nil},
		{"DEBUG task data flow", []string{"--definition", def, "--state", "Quote", "--input", in, "--mock", okMock, "--inspection-level", "DEBUG"}, 0,
			map[string]string{"status": `"SUCCEEDED"`},
			map[string]string{"input": in, "afterInputPath": `{"sku":"a"}`, "afterParameters": `{"FunctionName":"quote","Payload":{"sku":"a"}}`,
				"result": `{"StatusCode":200,"Payload":{"price":120}}`, "afterResultSelector": `{"price":120}`,
				"afterResultPath": `{"order":{"sku":"a"},"name":"Ada","quote":{"price":120}}`, "variables": `{"last_price":120}`, "request": "-", "response": "-"}},
		{"TRACE adds request and response", []string{"--definition", def, "--state", "Quote", "--input", in, "--mock", okMock, "--inspection-level", "trace"}, 0,
			map[string]string{"status": `"SUCCEEDED"`},
			map[string]string{"request": `{"FunctionName":"quote","Payload":{"sku":"a"}}`, "response": `{"StatusCode":200,"Payload":{"price":120}}`, "afterResultSelector": `{"price":120}`}},
		{"mock result as a string", []string{"--definition", def, "--state", "Quote", "--input", in, "--mock", `{"result":"{\"StatusCode\":200,\"Payload\":{\"price\":5}}"}`}, 0,
			map[string]string{"status": `"SUCCEEDED"`, "output": `{"order":{"sku":"a"},"name":"Ada","quote":{"price":5}}`}, nil},
		{"caught error", []string{"--definition", def, "--state", "Quote", "--input", in, "--mock", `{"errorOutput":{"error":"Lambda.Unknown","cause":"boom"}}`}, 0,
			map[string]string{"status": `"CAUGHT_ERROR"`, "nextState": `"Park"`, "error": `"Lambda.Unknown"`, "output": `{"order":{"sku":"a"},"name":"Ada","error":{"Error":"Lambda.Unknown","Cause":"boom"}}`}, nil},
		{"retriable error", []string{"--definition", def, "--state", "Quote", "--input", in, "--mock", `{"errorOutput":{"error":"Busy","cause":"later"}}`, "--inspection-level", "DEBUG"}, 0,
			map[string]string{"status": `"RETRIABLE"`, "error": `"Busy"`, "output": "-"}, map[string]string{"input": in}},
		{"choice next state", []string{"--definition", def, "--state", "Route", "--input", `{"quote":{"price":120}}`}, 0,
			map[string]string{"status": `"SUCCEEDED"`, "nextState": `"Review"`}, nil},
		{"JSONata DEBUG", []string{"--definition", def, "--state", "Greet", "--input", in, "--inspection-level", "DEBUG"}, 0,
			map[string]string{"status": `"SUCCEEDED"`, "output": `{"hello":"Ada"}`, "nextState": "-"}, map[string]string{"variables": `{"greeted":"Ada"}`}},
		{"one state's definition", []string{"--definition", one, "--input", `{"id":7}`, "--inspection-level", "DEBUG"}, 0,
			map[string]string{"status": `"SUCCEEDED"`, "nextState": `"Later"`, "output": `{"id":7,"copy":{"id":7}}`},
			map[string]string{"afterParameters": `{"id":7}`, "result": `{"id":7}`, "afterResultPath": `{"id":7,"copy":{"id":7}}`}},
		{"failed", []string{"--definition", writeFile(t, dir, "fail.json", `{"Type":"Fail","Error":"Nope","Cause":"no"}`)}, 1,
			map[string]string{"status": `"FAILED"`, "error": `"Nope"`, "cause": `"no"`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runStatemachine(context.Background(), append([]string{"test-state"}, tt.args...), &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d (stderr %s, stdout %s)", code, tt.wantCode, stderr.String(), stdout.String())
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("stdout is not a JSON object: %v: %s", err, stdout.String())
			}
			checkFields(t, "", got, tt.want)
			if tt.wantData != nil {
				var data map[string]json.RawMessage
				if err := json.Unmarshal(got["inspectionData"], &data); err != nil {
					t.Fatalf("inspectionData: %v: %s", err, got["inspectionData"])
				}
				checkFields(t, "inspectionData.", data, tt.wantData)
			}
		})
	}
}

func checkFields(t *testing.T, prefix string, got map[string]json.RawMessage, want map[string]string) {
	t.Helper()
	for k, w := range want {
		g, present := got[k]
		if w == "-" {
			if present {
				t.Errorf("%s%s = %s, want it absent", prefix, k, g)
			}
			continue
		}
		if !present {
			t.Errorf("%s%s is absent, want %s", prefix, k, w)
			continue
		}
		var gv, wv any
		_ = json.Unmarshal(g, &gv)
		if err := json.Unmarshal([]byte(w), &wv); err != nil {
			t.Fatalf("want %s: %v", w, err)
		}
		gb, _ := json.Marshal(gv)
		wb, _ := json.Marshal(wv)
		if string(gb) != string(wb) {
			t.Errorf("%s%s = %s, want %s", prefix, k, gb, wb)
		}
	}
}

func TestStatemachineTestStateInvalid(t *testing.T) {
	dir := t.TempDir()
	def := writeFile(t, dir, "def.json", testStateDef)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no definition", nil, "--definition is required"},
		{"task without mock", []string{"--definition", def, "--state", "Quote"}, "needs a mock"},
		{"mock on a Pass state", []string{"--definition", def, "--state", "Greet", "--mock", `{"result":1}`}, "only a Task state"},
		{"unknown state", []string{"--definition", def, "--state", "Nope"}, `no state "Nope"`},
		{"bad level", []string{"--definition", def, "--state", "Route", "--inspection-level", "LOUD"}, "LOUD"},
		{"bad mock shape", []string{"--definition", def, "--state", "Quote", "--mock", `{"output":1}`}, "the mock must be"},
		{"bad input", []string{"--definition", def, "--state", "Route", "--input", `{`}, "input is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := runStatemachine(context.Background(), append([]string{"test-state"}, tt.args...), &stdout, &stderr); code != 2 {
				t.Fatalf("exit %d, want 2 (stdout %s)", code, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tt.want)
			}
		})
	}
}
