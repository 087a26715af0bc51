package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// getAttID returns the logical id X of {"Fn::GetAtt": [X, attr]} or {"Ref": X}.
func getAttID(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) > 0 {
		s, _ := ga[0].(string)
		return s
	}
	s, _ := m["Ref"].(string)
	return s
}

// roleStatements returns the statements of every IAM policy attached to role
// (a logical id) in the default template.
func roleStatements(t *testing.T, role string) []map[string]any {
	t.Helper()
	return statementsOf(resources(t, "AWS::IAM::Policy"), role)
}

// statementsOf returns the statements of the policies attached to role (a
// logical id) among policies.
func statementsOf(policies map[string]map[string]any, role string) []map[string]any {
	var out []map[string]any
	for _, pol := range policies {
		pp := pol["Properties"].(map[string]any)
		for _, r := range pp["Roles"].([]any) {
			if getAttID(r) == role {
				for _, st := range pp["PolicyDocument"].(map[string]any)["Statement"].([]any) {
					out = append(out, st.(map[string]any))
				}
			}
		}
	}
	return out
}

// allows reports whether some Allow statement grants action on a resource
// naming logical id res.
func allows(stmts []map[string]any, action, res string) bool {
	for _, st := range stmts {
		if st["Effect"] != "Allow" {
			continue
		}
		matched := false
		for _, a := range toStrings(st["Action"]) {
			if a == action || (strings.HasSuffix(a, "*") && strings.HasPrefix(action, strings.TrimSuffix(a, "*"))) {
				matched = true
			}
		}
		b, _ := json.Marshal(st["Resource"])
		if matched && strings.Contains(string(b), `"`+res+`"`) {
			return true
		}
	}
	return false
}

// The alarm topic is KMS-encrypted, so CloudWatch may publish only if the key
// policy lets it use the key and the topic policy lets it publish.
func TestAlarmsCanPublishToTheEncryptedTopic(t *testing.T) {
	synth(t)
	var topicID, keyID string
	for id, tp := range resources(t, "AWS::SNS::Topic") {
		if strings.HasPrefix(id, "Alarms") {
			topicID, keyID = id, getAttID(tp["Properties"].(map[string]any)["KmsMasterKeyId"])
		}
	}
	key, ok := resources(t, "AWS::KMS::Key")[keyID]
	if !ok {
		t.Fatalf("the topic's key %q is not a key of this stack", keyID)
	}
	cwMay := func(doc any, actions ...string) bool {
		for _, st := range doc.(map[string]any)["Statement"].([]any) {
			stm := st.(map[string]any)
			if stm["Effect"] != "Allow" || !strings.Contains(fmt.Sprint(stm["Principal"]), "cloudwatch.amazonaws.com") {
				continue
			}
			got := toStrings(stm["Action"])
			all := true
			for _, a := range actions {
				all = all && slices.Contains(got, a)
			}
			if all {
				return true
			}
		}
		return false
	}
	if !cwMay(key["Properties"].(map[string]any)["KeyPolicy"], "kms:Decrypt", "kms:GenerateDataKey*") {
		t.Errorf("the key policy does not let cloudwatch.amazonaws.com use the topic's key")
	}
	found := false
	for _, p := range resources(t, "AWS::SNS::TopicPolicy") {
		pp := p["Properties"].(map[string]any)
		for _, tp := range pp["Topics"].([]any) {
			if getAttID(tp) == topicID && cwMay(pp["PolicyDocument"], "sns:Publish") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no topic policy lets cloudwatch.amazonaws.com publish to %s", topicID)
	}
	// Every alarm notifies the topic.
	for id, a := range resources(t, "AWS::CloudWatch::Alarm") {
		acts, _ := a["Properties"].(map[string]any)["AlarmActions"].([]any)
		if len(acts) != 1 || getAttID(acts[0]) != topicID {
			t.Errorf("alarm %s notifies %v, want the topic %s", id, acts, topicID)
		}
	}
}

// Every sender to a KMS-encrypted dead-letter queue may send to it and use its
// key: functions' async dead-letter queues, the stream mapping's on-failure
// destination, and the scheduler's dead-letter queue.
func TestDeadLetterSendersHoldTheKey(t *testing.T) {
	synth(t)
	queues := resources(t, "AWS::SQS::Queue")
	roles := map[string]string{} // function id -> role id
	for id, f := range resources(t, "AWS::Lambda::Function") {
		roles[id] = getAttID(f["Properties"].(map[string]any)["Role"])
	}
	type sender struct{ who, role, queue string }
	var senders []sender
	for id, f := range resources(t, "AWS::Lambda::Function") {
		if d, ok := f["Properties"].(map[string]any)["DeadLetterConfig"].(map[string]any); ok {
			senders = append(senders, sender{"function " + id, roles[id], getAttID(d["TargetArn"])})
		}
	}
	for id, m := range resources(t, "AWS::Lambda::EventSourceMapping") {
		p := m["Properties"].(map[string]any)
		if d, ok := p["DestinationConfig"].(map[string]any); ok {
			fn := getAttID(p["FunctionName"])
			senders = append(senders, sender{"event source mapping " + id, roles[fn], getAttID(d["OnFailure"].(map[string]any)["Destination"])})
		}
	}
	for id, s := range resources(t, "AWS::Scheduler::Schedule") {
		tg := s["Properties"].(map[string]any)["Target"].(map[string]any)
		senders = append(senders, sender{"schedule " + id, getAttID(tg["RoleArn"]), getAttID(tg["DeadLetterConfig"].(map[string]any)["Arn"])})
	}
	if len(senders) < 4 { // observe-object, observe-schedule, the stream mapping, a schedule
		t.Fatalf("found %d dead-letter senders, want at least 4: %v", len(senders), senders)
	}
	for _, s := range senders {
		q, ok := queues[s.queue]
		if !ok {
			t.Errorf("%s: dead-letter target %q is not a queue of this stack", s.who, s.queue)
			continue
		}
		key := getAttID(q["Properties"].(map[string]any)["KmsMasterKeyId"])
		if key == "" {
			t.Errorf("%s: queue %s is not KMS-encrypted", s.who, s.queue)
			continue
		}
		stmts := roleStatements(t, s.role)
		if !allows(stmts, "sqs:SendMessage", s.queue) {
			t.Errorf("%s: role %s may not sqs:SendMessage to %s", s.who, s.role, s.queue)
		}
		for _, a := range []string{"kms:GenerateDataKey", "kms:Decrypt"} {
			if !allows(stmts, a, key) {
				t.Errorf("%s: role %s lacks %s on the queue's key %s", s.who, s.role, a, key)
			}
		}
	}
}

// Alarms watch for lost or late work: each dead-letter queue's depth, Lambda's
// DeadLetterErrors, the stream's iterator age, the API's 5xx, DynamoDB
// throttles on both tables, and throttled or timed-out waves.
func TestDeliveryAlarms(t *testing.T) {
	synth(t)
	type key struct{ ns, metric, dim string }
	got := map[key]int{}
	for _, a := range resources(t, "AWS::CloudWatch::Alarm") {
		p := a["Properties"].(map[string]any)
		dim := ""
		if ds, ok := p["Dimensions"].([]any); ok && len(ds) > 0 {
			d := ds[0].(map[string]any)
			dim = getAttID(d["Value"])
			if dim == "" {
				dim = fmt.Sprint(d["Value"])
			}
		}
		ns, _ := p["Namespace"].(string)
		metric, _ := p["MetricName"].(string) // "" for a math expression (the errors alarms)
		got[key{ns, metric, dim}]++
	}
	count := func(ns, metric string) (n int) {
		for k, c := range got {
			if k.ns == ns && k.metric == metric {
				n += c
			}
		}
		return n
	}
	// Every queue is a dead-letter queue, and each has a depth alarm.
	for id := range resources(t, "AWS::SQS::Queue") {
		if got[key{"AWS/SQS", "ApproximateNumberOfMessagesVisible", id}] != 1 {
			t.Errorf("no depth alarm on queue %s", id)
		}
	}
	for _, f := range resources(t, "AWS::Lambda::Function") {
		p := f["Properties"].(map[string]any)
		if p["DeadLetterConfig"] == nil {
			continue
		}
		if count("AWS/Lambda", "DeadLetterErrors") < 2 {
			t.Errorf("no DeadLetterErrors alarm for %v", p["Description"])
		}
	}
	for _, c := range []struct {
		ns, metric string
		want       int
	}{
		{"AWS/Lambda", "DeadLetterErrors", 2},
		{"AWS/Lambda", "IteratorAge", 1},
		{"AWS/ApiGateway", "5xx", 1},
		{"AWS/DynamoDB", "ReadThrottleEvents", 2},
		{"AWS/DynamoDB", "WriteThrottleEvents", 2},
		{"AWS/States", "ExecutionThrottled", 1},
		{"AWS/States", "ExecutionsTimedOut", 1},
	} {
		if n := count(c.ns, c.metric); n != c.want {
			t.Errorf("%s %s alarms: %d, want %d", c.ns, c.metric, n, c.want)
		}
	}
}

// Each function's errors alarm fires on unexpected errors only: Lambda's
// Errors less the expected ones its log group counts ("stage failed" lines
// of the types the wave handles by design).
func TestErrorsAlarmsLeaveOutExpectedErrors(t *testing.T) {
	synth(t)
	filters := resources(t, "AWS::Logs::MetricFilter")
	alarms := resources(t, "AWS::CloudWatch::Alarm")
	for name := range stack.Functions {
		var alarm map[string]any
		for id, a := range alarms {
			if strings.HasPrefix(id, strings.ReplaceAll(name, "-", "")+"errors") {
				alarm = a["Properties"].(map[string]any)
			}
		}
		if alarm == nil {
			t.Errorf("%s: no errors alarm", name)
			continue
		}
		b, _ := json.Marshal(alarm["Metrics"])
		if !strings.Contains(string(b), `"Expression":"errors - FILL(expected, 0)"`) || !strings.Contains(string(b), `"MetricName":"Errors"`) ||
			!strings.Contains(string(b), `"Namespace":"ora/expected-errors"`) {
			t.Errorf("%s: the errors alarm does not subtract the expected errors: %s", name, b)
		}
		found := false
		for _, f := range filters {
			p := f["Properties"].(map[string]any)
			tr, _ := json.Marshal(p["MetricTransformations"])
			if !strings.Contains(string(tr), `"MetricName":"`+name+`"`) {
				continue
			}
			found = true
			pattern, _ := p["FilterPattern"].(string)
			for _, c := range ExpectedErrors {
				if !strings.Contains(pattern, `"`+c+`"`) {
					t.Errorf("%s: the filter %q does not count %s", name, pattern, c)
				}
			}
			if strings.Contains(pattern, "InternalError") || !strings.Contains(pattern, `$.message = "stage failed"`) {
				t.Errorf("%s: the filter %q counts more than the expected stage failures", name, pattern)
			}
		}
		if !found {
			t.Errorf("%s: no expected-errors metric filter", name)
		}
	}
}
