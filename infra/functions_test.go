package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The functions guardrailTemplate configures through ora:functions.
const (
	reportARN = "arn:aws:lambda:us-east-1:123456789012:function:report"
	triageARN = "arn:aws:lambda:us-east-1:123456789012:function:triage:live"
)

// invokeGrants returns, per function description ("ora act"), the resources
// of every lambda:InvokeFunction statement of the function's role.
func invokeGrants(t *testing.T, tmpl map[string]any) map[string][]string {
	t.Helper()
	res := tmpl["Resources"].(map[string]any)
	roleOf := map[string]string{} // role logical id -> function description
	for _, r := range res {
		f := r.(map[string]any)
		if f["Type"] != "AWS::Lambda::Function" {
			continue
		}
		p := f["Properties"].(map[string]any)
		role, _ := p["Role"].(map[string]any)["Fn::GetAtt"].([]any)
		if len(role) > 0 {
			roleOf[fmt.Sprint(role[0])] = fmt.Sprint(p["Description"])
		}
	}
	out := map[string][]string{}
	for _, r := range res {
		pol := r.(map[string]any)
		if pol["Type"] != "AWS::IAM::Policy" {
			continue
		}
		p := pol["Properties"].(map[string]any)
		var owners []string
		for _, role := range p["Roles"].([]any) {
			if ref, ok := role.(map[string]any)["Ref"]; ok && roleOf[fmt.Sprint(ref)] != "" {
				owners = append(owners, roleOf[fmt.Sprint(ref)])
			}
		}
		for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			stm := st.(map[string]any)
			if !slices.Contains(toStrings(stm["Action"]), "lambda:InvokeFunction") {
				continue
			}
			var resources []string
			switch v := stm["Resource"].(type) {
			case []any:
				for _, x := range v {
					b, _ := json.Marshal(x)
					resources = append(resources, strings.Trim(string(b), `"`))
				}
			default:
				b, _ := json.Marshal(v)
				resources = append(resources, strings.Trim(string(b), `"`))
			}
			for _, o := range owners {
				out[o] = append(out[o], resources...)
			}
		}
	}
	return out
}

// The act function may invoke exactly the configured functions' ARNs, and
// none without ora:functions; no other function gets to invoke them, and
// the act function learns them through ORA_FUNCTIONS.
func TestActMayInvokeOnlyConfiguredFunctions(t *testing.T) {
	synth(t)
	tests := []struct {
		name string
		tmpl map[string]any
		want []string
	}{
		{"cdk.json: no functions", tmpl, nil},
		{"ora:functions", guardrailTemplate(), []string{reportARN, triageARN}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			grants := invokeGrants(t, tt.tmpl)
			got := grants["ora act"]
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("act may invoke %v, want %v", got, tt.want)
			}
			for owner, resources := range grants {
				for _, r := range resources {
					if owner != "ora act" && (r == reportARN || r == triageARN) {
						t.Errorf("%s may invoke the user's function %s", owner, r)
					}
				}
			}
			var env, reasonEnv string
			for _, r := range tt.tmpl["Resources"].(map[string]any) {
				f := r.(map[string]any)
				if f["Type"] != "AWS::Lambda::Function" {
					continue
				}
				props := f["Properties"].(map[string]any)
				environment, _ := props["Environment"].(map[string]any)
				variables, _ := environment["Variables"].(map[string]any)
				vars := fmt.Sprint(variables["ORA_FUNCTIONS"])
				switch props["Description"] {
				case "ora act":
					env = vars
				case "ora reason": // for the model's catalogue (function.invoke)
					reasonEnv = vars
				}
			}
			if reasonEnv != env {
				t.Errorf("the reason function's ORA_FUNCTIONS %q, want the act function's %q", reasonEnv, env)
			}
			var funcs map[string]struct {
				ARN string `json:"arn"`
			}
			if err := json.Unmarshal([]byte(env), &funcs); err != nil || len(funcs) != len(tt.want) {
				t.Errorf("ORA_FUNCTIONS %q (%v), want %d functions", env, err, len(tt.want))
			}
			for _, f := range funcs {
				if !slices.Contains(tt.want, f.ARN) {
					t.Errorf("ORA_FUNCTIONS names %s", f.ARN)
				}
			}
		})
	}
}
