package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
)

// connectionsTemplate synthesizes the stack with two connections in the
// context, as a user adds them with -c ora:connections=...
var connectionsTemplate = sync.OnceValue(func() map[string]any {
	ctx, err := CDKJSONContext("cdk.json")
	if err != nil {
		panic(err)
	}
	if os.Getenv("ORA_INFRA_ROOT") != "" {
		ctx["ora:root"] = root
	}
	ctx["ora:connections"] = []map[string]any{
		{"name": "github", "url": "https://api.github.com", "auth": map[string]any{"kind": "bearer"}},
		{"name": "billing", "url": "https://billing.example.com/v2", "auth": map[string]any{"kind": "oauth2_client_credentials", "token_url": "https://auth.example.com/oauth2/token", "client_id": "ora"}},
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	st := NewOraStack(app, "OraConnections", ConfigFromContext(app))
	b, _ := json.Marshal(assertions.Template_FromStack(st.Stack, nil).ToJSON())
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
})

// refs returns the logical ids v refers to ({"Ref": id}), anywhere inside.
func refs(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		if id, ok := x["Ref"].(string); ok {
			out = append(out, id)
		}
		for _, y := range x {
			out = append(out, refs(y)...)
		}
	case []any:
		for _, y := range x {
			out = append(out, refs(y)...)
		}
	}
	return out
}

// TestConnectionSecretsAreReadOnlyByAct: one secret per connection, and
// secretsmanager:GetSecretValue on them for the act function alone, which
// reads nothing else but the signing secret.
func TestConnectionSecretsAreReadOnlyByAct(t *testing.T) {
	synth(t)
	res := connectionsTemplate()["Resources"].(map[string]any)
	conn := map[string]bool{}
	var signing string
	for id, r := range res {
		m := r.(map[string]any)
		if m["Type"] != "AWS::SecretsManager::Secret" {
			continue
		}
		desc := fmt.Sprint(m["Properties"].(map[string]any)["Description"])
		switch {
		case strings.HasPrefix(desc, "ora connection "):
			conn[id] = true
		case strings.HasPrefix(id, "ActionSigningSecret"):
			signing = id
		}
	}
	if len(conn) != 2 || signing == "" {
		t.Fatalf("connection secrets %v, signing secret %q; want 2 and one", conn, signing)
	}
	var actRole string
	for _, r := range res {
		m := r.(map[string]any)
		p, _ := m["Properties"].(map[string]any)
		if m["Type"] == "AWS::Lambda::Function" && p["Description"] == "ora act" {
			actRole = fmt.Sprint(p["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0])
			env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
			got := refs(env["ORA_CONNECTIONS"])
			sort.Strings(got)
			if len(got) != 2 || !conn[got[0]] || !conn[got[1]] {
				t.Errorf("act's ORA_CONNECTIONS refers to %v, want the two connection secrets", got)
			}
		}
	}
	if actRole == "" {
		t.Fatal("no act function")
	}
	readers := map[string][]string{} // secret -> roles that may read it
	actReads := map[string]bool{}
	for _, r := range res {
		m := r.(map[string]any)
		if m["Type"] != "AWS::IAM::Policy" {
			continue
		}
		p := m["Properties"].(map[string]any)
		roles := refs(p["Roles"])
		for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			stm := st.(map[string]any)
			if !strings.Contains(fmt.Sprint(stm["Action"]), "secretsmanager:GetSecretValue") {
				continue
			}
			if fmt.Sprint(stm["Resource"]) == "*" {
				t.Errorf("%v may read every secret", roles)
			}
			for _, s := range refs(stm["Resource"]) {
				readers[s] = append(readers[s], roles...)
				for _, role := range roles {
					if role == actRole {
						actReads[s] = true
					}
				}
			}
		}
	}
	for s := range conn {
		if len(readers[s]) != 1 || readers[s][0] != actRole {
			t.Errorf("connection secret %s is readable by %v, want the act function's role %s alone", s, readers[s], actRole)
		}
	}
	for s := range actReads {
		if !conn[s] && s != signing {
			t.Errorf("the act function may read %s, which is neither a connection's secret nor the signing secret", s)
		}
	}
}
