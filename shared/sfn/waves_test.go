package sfn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sfn"
)

func newWaves(t *testing.T, f *fakeSFN, opts ...func(*sfn.WavesOptions)) *sfn.Waves {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	api := awssfn.New(awssfn.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		BaseEndpoint:     aws.String(srv.URL),
		RetryMaxAttempts: 1,
	})
	w, err := sfn.NewWaves(api, machineARN, opts...)
	if err != nil {
		t.Fatalf("NewWaves: %v", err)
	}
	return w
}

func TestExecutionARN(t *testing.T) {
	tests := []struct {
		name, machine, wave, want, wantCode string
	}{
		{name: "aws", machine: machineARN, wave: "sig-1", want: "arn:aws:states:us-east-1:123456789012:execution:ora:sig-1"},
		{name: "other partition", machine: "arn:aws-cn:states:cn-north-1:123456789012:stateMachine:ora-Wave", wave: "w", want: "arn:aws-cn:states:cn-north-1:123456789012:execution:ora-Wave:w"},
		{name: "not a state machine", machine: "arn:aws:states:us-east-1:123456789012:activity:ora", wave: "w", wantCode: ora.EINVALID},
		{name: "too few parts", machine: "arn:aws:states:us-east-1:stateMachine:ora", wave: "w", wantCode: ora.EINVALID},
		{name: "empty wave", machine: machineARN, wave: "", wantCode: ora.EINVALID},
		{name: "slash in wave", machine: machineARN, wave: "a/b", wantCode: ora.EINVALID},
		{name: "space in wave", machine: machineARN, wave: "a b", wantCode: ora.EINVALID},
		{name: "81 characters", machine: machineARN, wave: strings.Repeat("a", 81), wantCode: ora.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sfn.ExecutionARN(tt.machine, tt.wave)
			if code := ora.ErrorCode(err); err != nil && code != tt.wantCode || err == nil && tt.wantCode != "" {
				t.Fatalf("ExecutionARN(%q, %q) error %v, want code %q", tt.machine, tt.wave, err, tt.wantCode)
			}
			if got != tt.want {
				t.Errorf("ExecutionARN(%q, %q) = %q, want %q", tt.machine, tt.wave, got, tt.want)
			}
		})
	}
}

// historyPage returns a GetExecutionHistory answer with events from..to
// (inclusive) and a next token when more follow.
func historyPage(from, to int, next string) string {
	var evs []string
	for i := from; i <= to; i++ {
		evs = append(evs, fmt.Sprintf(`{"id":%d,"previousEventId":%d,"timestamp":1.7951760%02d0E9,"type":"TaskStateEntered","stateEnteredEventDetails":{"name":"State %d","input":"{}","inputDetails":{"truncated":false}}}`, i, i-1, i%100, i))
	}
	body := `{"events":[` + strings.Join(evs, ",") + `]`
	if next != "" {
		body += `,"nextToken":"` + next + `"`
	}
	return body + "}"
}

func TestWave(t *testing.T) {
	const execARN = "arn:aws:states:us-east-1:123456789012:execution:ora:sig-1"
	f := &fakeSFN{reply: func(c call) (int, string) {
		switch c.Target {
		case "DescribeExecution":
			return http.StatusOK, `{"executionArn":"` + execARN + `","stateMachineArn":"` + machineARN + `","name":"sig-1","status":"FAILED","startDate":1795176000,"stopDate":1795176010,"error":"ScopeViolation","cause":"forbidden path","output":null}`
		case "GetExecutionHistory":
			switch c.Body["nextToken"] {
			case nil:
				return http.StatusOK, historyPage(1, 2, "page-2")
			case "page-2":
				return http.StatusOK, historyPage(3, 3, "")
			}
		}
		return apiError("ValidationException")
	}}
	w := newWaves(t, f)
	got, err := w.Wave(context.Background(), "sig-1")
	if err != nil {
		t.Fatalf("Wave: %v", err)
	}
	if got.WaveID != "sig-1" || got.Status != "FAILED" || got.Error != "ScopeViolation" || got.Cause != "forbidden path" {
		t.Errorf("Wave = %+v, want sig-1 FAILED ScopeViolation / forbidden path", got)
	}
	if got.Output != nil {
		t.Errorf("Output = %s, want none for a failed wave", got.Output)
	}
	var events []map[string]any
	if err := json.Unmarshal(got.History, &events); err != nil {
		t.Fatalf("history %s: %v", got.History, err)
	}
	if len(events) != 3 {
		t.Fatalf("history has %d events, want 3 (both pages): %s", len(events), got.History)
	}
	for i, e := range events {
		if id, _ := e["id"].(float64); int(id) != i+1 {
			t.Errorf("event %d id = %v, want %d", i, e["id"], i+1)
		}
		if e["type"] != "TaskStateEntered" {
			t.Errorf("event %d type = %v, want TaskStateEntered", i, e["type"])
		}
		d, _ := e["stateEnteredEventDetails"].(map[string]any)
		if d["name"] != fmt.Sprintf("State %d", i+1) {
			t.Errorf("event %d stateEnteredEventDetails = %v, want name State %d", i, e["stateEnteredEventDetails"], i+1)
		}
		if _, ok := e["Id"]; ok {
			t.Errorf("event %d keeps the Go field name Id: %v", i, e)
		}
		if _, ok := e["taskFailedEventDetails"]; ok {
			t.Errorf("event %d carries an absent detail as null: %v", i, e)
		}
	}
	var arns []string
	for _, c := range f.calls {
		arns = append(arns, fmt.Sprint(c.Body["executionArn"]))
	}
	if want := []string{execARN, execARN, execARN}; strings.Join(arns, " ") != strings.Join(want, " ") {
		t.Errorf("calls used ARNs %v, want %v", arns, want)
	}
}

func TestWaveOutput(t *testing.T) {
	f := &fakeSFN{reply: func(c call) (int, string) {
		if c.Target == "DescribeExecution" {
			return http.StatusOK, `{"executionArn":"x","stateMachineArn":"y","status":"SUCCEEDED","startDate":1795176000,"output":"{\"final\":\"completed\"}"}`
		}
		return http.StatusOK, `{"events":[]}`
	}}
	got, err := newWaves(t, f).Wave(context.Background(), "sig-2")
	if err != nil {
		t.Fatalf("Wave: %v", err)
	}
	if got.Status != "SUCCEEDED" || string(got.Output) != `{"final":"completed"}` || string(got.History) != "[]" {
		t.Errorf("Wave = status %s output %s history %s, want SUCCEEDED {\"final\":\"completed\"} []", got.Status, got.Output, got.History)
	}
}

func TestWaveBoundedHistory(t *testing.T) {
	f := &fakeSFN{reply: func(c call) (int, string) {
		if c.Target == "DescribeExecution" {
			return http.StatusOK, `{"executionArn":"x","stateMachineArn":"y","status":"RUNNING","startDate":1795176000}`
		}
		// Every page is full and promises more: only the bound stops the reads.
		n := int(c.Body["maxResults"].(float64))
		return http.StatusOK, historyPage(1, n, "more")
	}}
	got, err := newWaves(t, f, func(o *sfn.WavesOptions) { o.MaxEvents = 5 }).Wave(context.Background(), "sig-3")
	if err != nil {
		t.Fatalf("Wave: %v", err)
	}
	var events []any
	if err := json.Unmarshal(got.History, &events); err != nil {
		t.Fatal(err)
	}
	if len(events) != 5 {
		t.Errorf("history has %d events, want the bound 5", len(events))
	}
	if n := len(f.calls); n != 2 {
		t.Errorf("made %d calls, want 2 (describe, one page of 5)", n)
	}
}

func TestWaveErrors(t *testing.T) {
	tests := []struct {
		name     string
		wave     string
		describe func() (int, string)
		history  func() (int, string)
		wantCode string
	}{
		{name: "no such execution", wave: "sig-x", describe: func() (int, string) { return apiError("ExecutionDoesNotExist") }, wantCode: ora.ENOTFOUND},
		{name: "throttled", wave: "sig-x", describe: func() (int, string) { return apiError("ThrottlingException") }, wantCode: ora.ETRANSIENT},
		{name: "history throttled", wave: "sig-x",
			describe: func() (int, string) {
				return http.StatusOK, `{"executionArn":"x","stateMachineArn":"y","status":"RUNNING","startDate":1}`
			},
			history: func() (int, string) { return apiError("ThrottlingException") }, wantCode: ora.ETRANSIENT},
		{name: "bad arn", wave: "sig-x", describe: func() (int, string) { return apiError("InvalidArn") }, wantCode: ora.EINVALID},
		{name: "access denied", wave: "sig-x", describe: func() (int, string) { return apiError("AccessDeniedException") }, wantCode: ora.EINTERNAL},
		{name: "malformed id never calls", wave: "a:b", wantCode: ora.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSFN{reply: func(c call) (int, string) {
				if c.Target == "DescribeExecution" {
					return tt.describe()
				}
				return tt.history()
			}}
			_, err := newWaves(t, f).Wave(context.Background(), tt.wave)
			if got := ora.ErrorCode(err); got != tt.wantCode {
				t.Errorf("Wave error %v has code %q, want %q", err, got, tt.wantCode)
			}
			if tt.describe == nil && len(f.calls) != 0 {
				t.Errorf("made %d calls for a malformed id, want 0", len(f.calls))
			}
		})
	}
}

func TestNewWavesRejectsBadARN(t *testing.T) {
	if _, err := sfn.NewWaves(nil, "arn:aws:lambda:us-east-1:123456789012:function:ora"); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("NewWaves(lambda ARN) error %v, want EINVALID", err)
	}
}
