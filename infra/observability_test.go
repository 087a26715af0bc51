package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFunctionsLogJSON checks every function writes JSON logs (its own lines
// are JSON already; this makes Lambda's platform lines JSON too and passes the
// level to the function).
func TestFunctionsLogJSON(t *testing.T) {
	synth(t)
	fns := resources(t, "AWS::Lambda::Function")
	if len(fns) == 0 {
		t.Fatal("no functions")
	}
	n := 0
	for id, fn := range fns {
		props := fn["Properties"].(map[string]any)
		if d, _ := props["Description"].(string); !strings.HasPrefix(d, "ora ") {
			continue // CDK's own helpers (bucket notifications)
		}
		n++
		lc, _ := props["LoggingConfig"].(map[string]any)
		if lc["LogFormat"] != "JSON" || lc["ApplicationLogLevel"] != "INFO" || lc["SystemLogLevel"] != "WARN" {
			t.Errorf("%s: LoggingConfig %v, want LogFormat JSON, ApplicationLogLevel INFO, SystemLogLevel WARN", id, lc)
		}
	}
	if want := len(FunctionNames(root)); n != want {
		t.Errorf("checked %d ora functions, want %d", n, want)
	}
}

// TestDashboard checks the CloudWatch dashboard graphs what the README says.
func TestDashboard(t *testing.T) {
	synth(t)
	dash := resources(t, "AWS::CloudWatch::Dashboard")
	if len(dash) != 1 {
		t.Fatalf("%d dashboards, want 1", len(dash))
	}
	for _, d := range dash {
		b, _ := json.Marshal(d["Properties"].(map[string]any)["DashboardBody"])
		body := string(b)
		for _, want := range []string{
			`ora_waves_total`, `completed`, `rejected`, `failed`, // waves per minute by outcome
			`ExecutionTime`, `p50`, `p99`, // wave duration
			`ora_decisions_total`, `ora_escalations_total`,
			`ora_escalations_pending`, `ora_escalation_oldest_age_seconds`, // published by the outbox sweep
			`ora_stage_failures_total`, `ora_incidents_total`,
			`ora_model_cost_usd_total`, `per 1,000 signals`,
			`ApproximateNumberOfMessagesVisible`,
			`\"Ora\"`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("dashboard body lacks %s", want)
			}
		}
		if n := strings.Count(body, "ApproximateNumberOfMessagesVisible"); n < 3 {
			t.Errorf("%d DLQ depth metrics, want one per dead-letter queue (3)", n)
		}
	}
}

// TestFunctionsMayWriteEMF checks each function's role may write to its log
// group (EMF lines are log lines) and send trace segments to X-Ray.
func TestFunctionsMayWriteEMF(t *testing.T) {
	synth(t)
	roles := resources(t, "AWS::IAM::Role")
	policies := resources(t, "AWS::IAM::Policy")
	for id, fn := range resources(t, "AWS::Lambda::Function") {
		props := fn["Properties"].(map[string]any)
		if d, _ := props["Description"].(string); !strings.HasPrefix(d, "ora ") {
			continue
		}
		roleRef, _ := props["Role"].(map[string]any)["Fn::GetAtt"].([]any)
		if len(roleRef) == 0 {
			t.Fatalf("%s: role %v", id, props["Role"])
		}
		role := roles[roleRef[0].(string)]
		b, _ := json.Marshal(role["Properties"].(map[string]any)["ManagedPolicyArns"])
		if !strings.Contains(string(b), "service-role/AWSLambdaBasicExecutionRole") {
			t.Errorf("%s: role %s lacks AWSLambdaBasicExecutionRole (logs:CreateLogStream, logs:PutLogEvents): %s", id, roleRef[0], b)
		}
		xrayOK := false
		for _, p := range policies {
			pp := p["Properties"].(map[string]any)
			rb, _ := json.Marshal(pp["Roles"])
			db, _ := json.Marshal(pp["PolicyDocument"])
			if strings.Contains(string(rb), roleRef[0].(string)) && strings.Contains(string(db), "xray:PutTraceSegments") {
				xrayOK = true
			}
		}
		if !xrayOK {
			t.Errorf("%s: role %s may not put X-Ray trace segments", id, roleRef[0])
		}
	}
}
