package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

func TestValidateSubscriptions(t *testing.T) {
	tests := []struct {
		name string
		sub  Subscription
		want string // "" when valid
	}{
		{"email", Subscription{"email", "a@example.com"}, ""},
		{"https", Subscription{"https", "https://hooks.example.com/x"}, ""},
		{"sqs", Subscription{"sqs", "arn:aws:sqs:eu-west-1:123456789012:q"}, ""},
		{"not an address", Subscription{"email", "example.com"}, "not an email address"},
		{"plain http", Subscription{"https", "http://hooks.example.com/x"}, "not an https:// URL"},
		{"a queue URL, not its ARN", Subscription{"sqs", "https://sqs.eu-west-1.amazonaws.com/1/q"}, "not an SQS queue ARN"},
		{"unknown kind", Subscription{"sms", "+15550100"}, `kind "sms" is not email, https or sqs`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateSubscriptions("ora:alarmSubscriptions", []Subscription{tt.sub})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "ora:alarmSubscriptions[0]")):
				t.Errorf("error %v, want one naming ora:alarmSubscriptions[0] and %q", err, tt.want)
			}
		})
	}
}

// Escalations and alarms each reach the receivers configured for them, one
// subscription per entry, on their own topics.
func TestSubscriptions(t *testing.T) {
	synth(t)
	type sub struct{ topic, protocol, endpoint string }
	var got []sub
	for _, r := range guardrailTemplate()["Resources"].(map[string]any) {
		m := r.(map[string]any)
		if m["Type"] != "AWS::SNS::Subscription" {
			continue
		}
		p := m["Properties"].(map[string]any)
		ep, _ := p["Endpoint"].(string)
		if ep == "" {
			ep = "arn:" + getAttID(p["Endpoint"]) // an imported queue resolves to its ARN
		}
		got = append(got, sub{getAttID(p["TopicArn"]), p["Protocol"].(string), ep})
	}
	want := []struct{ topicPrefix, protocol, endpoint string }{
		{"Escalations", "email", "approvers@example.com"},
		{"Escalations", "https", "https://hooks.example.com/ora"},
		{"Escalations", "sqs", "approvals"},
		{"Alarms", "email", "oncall@example.com"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d subscriptions %v, want %d", len(got), got, len(want))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			if strings.HasPrefix(g.topic, w.topicPrefix) && g.protocol == w.protocol && strings.Contains(g.endpoint, w.endpoint) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s subscription of %s to the %s topic in %v", w.protocol, w.endpoint, w.topicPrefix, got)
		}
	}
	// Without the context keys, no subscription (and no placeholder) is made.
	if n := len(resources(t, "AWS::SNS::Subscription")); n != 0 {
		t.Errorf("the default stack has %d subscriptions, want 0", n)
	}
}

// The functions that invoke Bedrock may subscribe the account to a
// third-party model at its first invocation; the others may not. Escalate
// may settle a task token.
func TestFirstUseAndSettlerGrants(t *testing.T) {
	synth(t)
	roleOf := func(name string) string {
		f, ok := stack.Functions[name]
		if !ok {
			t.Fatalf("no function %s", name)
		}
		return *stack.Stack.GetLogicalId(f.Role().Node().DefaultChild().(awscdk.CfnElement))
	}
	grants := func(name, action string) bool {
		for _, st := range roleStatements(t, roleOf(name)) {
			for _, a := range toStrings(st["Action"]) {
				if a == action && st["Effect"] == "Allow" {
					return true
				}
			}
		}
		return false
	}
	for name := range stack.Functions {
		want := name == "reason" || name == "validate-intent"
		if got := grants(name, "aws-marketplace:Subscribe"); got != want {
			t.Errorf("%s may subscribe through AWS Marketplace: %v, want %v", name, got, want)
		}
	}
	for _, name := range []string{"escalate", "api"} {
		if !grants(name, "states:SendTaskSuccess") {
			t.Errorf("%s may not call states:SendTaskSuccess", name)
		}
	}
}

// ora:orientation reaches every function that plans, fetches, compiles or
// judges proposals, and only plan and fetch may read the objects bucket.
func TestOrientationContext(t *testing.T) {
	synth(t)
	tpl := guardrailTemplate()
	envOf := map[string]map[string]any{}
	for id, r := range tpl["Resources"].(map[string]any) {
		m := r.(map[string]any)
		if m["Type"] != "AWS::Lambda::Function" {
			continue
		}
		env, _ := m["Properties"].(map[string]any)["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		envOf[id] = vars
	}
	want := map[string]string{"ORA_OBJECTS_BUCKET": "acme-invoices", "ORA_OBSERVE_HTTP_ALLOW": "https://status.example.com/", "ORA_TOKEN_BUDGET": "120000",
		"ORA_ORIENTATION_ADMIN": `{"max_horizon_waves":20}`, "ORA_PROPOSAL_TTL": "72h"}
	for _, name := range []string{"plan", "fetch", "compile", "reason", "api"} {
		found := false
		for id, vars := range envOf {
			if !strings.HasPrefix(id, strings.ReplaceAll(name, "-", "")) {
				continue
			}
			found = true
			for k, v := range want {
				if vars[k] != v {
					t.Errorf("%s: %s = %v, want %s", name, k, vars[k], v)
				}
			}
		}
		if !found {
			t.Errorf("no function %s", name)
		}
	}
	readers := map[string]bool{}
	for _, r := range tpl["Resources"].(map[string]any) {
		m := r.(map[string]any)
		if m["Type"] != "AWS::IAM::Policy" {
			continue
		}
		p := m["Properties"].(map[string]any)
		for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			stm := st.(map[string]any)
			b, _ := json.Marshal(stm["Resource"])
			if !strings.Contains(string(b), "acme-invoices") {
				continue
			}
			for _, a := range toStrings(stm["Action"]) {
				if strings.Contains(a, "Put") || strings.Contains(a, "Delete") {
					t.Errorf("a role may %s on the objects bucket", a)
				}
			}
			for _, role := range p["Roles"].([]any) {
				readers[getAttID(role)] = true
			}
		}
	}
	if len(readers) != 2 {
		t.Errorf("%d roles may read the objects bucket (%v), want plan's and fetch's", len(readers), readers)
	}
	for r := range readers {
		if !strings.HasPrefix(r, "plan") && !strings.HasPrefix(r, "fetch") {
			t.Errorf("role %s may read the objects bucket", r)
		}
	}
}

// ora:golden gives the api function the deployment's golden set: its
// location in the environment and read access to that prefix only.
func TestGoldenSetContext(t *testing.T) {
	synth(t)
	tpl := guardrailTemplate()
	var apiEnv map[string]any
	for id, r := range tpl["Resources"].(map[string]any) {
		m := r.(map[string]any)
		if m["Type"] == "AWS::Lambda::Function" && strings.HasPrefix(id, "api") {
			env, _ := m["Properties"].(map[string]any)["Environment"].(map[string]any)
			apiEnv, _ = env["Variables"].(map[string]any)
		}
	}
	if apiEnv["ORA_GOLDEN_BUCKET"] != "acme-ora-golden" || apiEnv["ORA_GOLDEN_PREFIX"] != "gate/" {
		t.Errorf("api environment: ORA_GOLDEN_BUCKET %v, ORA_GOLDEN_PREFIX %v", apiEnv["ORA_GOLDEN_BUCKET"], apiEnv["ORA_GOLDEN_PREFIX"])
	}
	// The gate replays through the reason function's reasoner and catalogue.
	for _, k := range []string{"ORA_REASONER", "ORA_ACT_CONFIG", "ORA_FUNCTIONS"} {
		if v, ok := apiEnv[k].(string); !ok || v == "" {
			t.Errorf("api environment: %s is %v, want the reason function's", k, apiEnv[k])
		}
	}
	var grants []string
	for _, r := range tpl["Resources"].(map[string]any) {
		m := r.(map[string]any)
		if m["Type"] != "AWS::IAM::Policy" {
			continue
		}
		p := m["Properties"].(map[string]any)
		roles, _ := json.Marshal(p["Roles"])
		for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			b, _ := json.Marshal(st.(map[string]any)["Resource"])
			if strings.Contains(string(b), "acme-ora-golden") {
				grants = append(grants, string(roles)+" "+string(b))
				// The reason function records under recordings/ only
				// (TestGoldenRecordRate).
				if !strings.Contains(string(roles), "api") && !(strings.Contains(string(roles), "reason") && strings.Contains(string(b)+fmt.Sprint(st), "gate/recordings/")) {
					t.Errorf("a role other than api's reads the golden set: %s", roles)
				}
				if strings.Contains(string(b), "acme-ora-golden/*") {
					t.Errorf("the grant covers the whole bucket, not the prefix: %s", b)
				}
			}
		}
	}
	if len(grants) == 0 {
		t.Error("no role may read the golden set")
	}
}

// ora:goldenRecordRate gives the reason function the rate and the golden
// set's location, and lets it write and read under the prefix's recordings/
// only (list that prefix only); without the key, neither.
func TestGoldenRecordRate(t *testing.T) {
	synth(t)
	cases := []struct {
		name string
		tpl  map[string]any
		set  bool
	}{
		{"cdk.json (no key)", tmpl, false},
		{"ora:goldenRecordRate 0.05", guardrailTemplate(), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var env map[string]any
			var grants []string
			for id, r := range tc.tpl["Resources"].(map[string]any) {
				m := r.(map[string]any)
				p, _ := m["Properties"].(map[string]any)
				if m["Type"] == "AWS::Lambda::Function" && fmt.Sprint(p["Description"]) == "ora reason" {
					e, _ := p["Environment"].(map[string]any)
					env, _ = e["Variables"].(map[string]any)
				}
				if m["Type"] != "AWS::IAM::Policy" || !strings.HasPrefix(id, "reason") {
					continue
				}
				for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
					if b, _ := json.Marshal(st); strings.Contains(string(b), "acme-ora-golden") {
						grants = append(grants, string(b))
					}
				}
			}
			if _, has := env["ORA_GOLDEN_RECORD_RATE"]; has != tc.set {
				t.Errorf("reason environment has ORA_GOLDEN_RECORD_RATE: %v, want %v", has, tc.set)
			}
			if !tc.set {
				if len(grants) != 0 {
					t.Errorf("reason may reach the golden set without the key: %v", grants)
				}
				return
			}
			if env["ORA_GOLDEN_RECORD_RATE"] != "0.05" || env["ORA_GOLDEN_BUCKET"] != "acme-ora-golden" || env["ORA_GOLDEN_PREFIX"] != "gate/" {
				t.Errorf("reason environment %v", env)
			}
			var put, list bool
			for _, g := range grants {
				switch {
				case strings.Contains(g, `"s3:PutObject"`):
					put = strings.Contains(g, "acme-ora-golden/gate/recordings/*") && !strings.Contains(g, "PutObjectAcl")
				case strings.Contains(g, `"s3:ListBucket"`):
					list = strings.Contains(g, `"s3:prefix":["gate/recordings/*"]`) || strings.Contains(g, `"s3:prefix":"gate/recordings/*"`)
				default:
					t.Errorf("an unexpected grant on the golden set: %s", g)
				}
			}
			if !put || !list {
				t.Errorf("grants %v: want PutObject under gate/recordings/ and ListBucket of that prefix only", grants)
			}
		})
	}
}
