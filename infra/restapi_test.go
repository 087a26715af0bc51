package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// restProfile synthesizes the stack as `cdk deploy -c ora:api=rest` does:
// cdk.json's context and feature flags plus the flag, with cdk-nag.
var restProfile = sync.OnceValues(func() (map[string]any, awscdk.Stack) {
	ctx, err := CDKJSONContext("cdk.json")
	if err != nil {
		panic(err)
	}
	if os.Getenv("ORA_INFRA_ROOT") != "" {
		ctx["ora:root"] = root
	}
	ctx["ora:api"] = APIREST
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	st := NewOraStack(app, "OraRest", ConfigFromContext(app))
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	b, _ := json.Marshal(assertions.Template_FromStack(st.Stack, nil).ToJSON())
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out, st.Stack
})

func restResources(typ string) map[string]map[string]any {
	tpl, _ := restProfile()
	out := map[string]map[string]any{}
	for id, r := range tpl["Resources"].(map[string]any) {
		if m := r.(map[string]any); typ == "" || m["Type"] == typ {
			out[id] = m
		}
	}
	return out
}

// freeTypes reads localstack/README.md's table of resource types: each row
// names one or more types in backticks (a trailing * matches a prefix) and,
// in its last column, whether LocalStack's free plan runs them.
func freeTypes(t *testing.T) (free, paid []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "localstack", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	typeRe := regexp.MustCompile("`((?:AWS|Custom)::[A-Za-z0-9:*]+)`")
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		last := strings.ToLower(strings.TrimSpace(cells[len(cells)-1]))
		for _, m := range typeRe.FindAllStringSubmatch(cells[0], -1) {
			if strings.HasPrefix(last, "yes") {
				free = append(free, m[1])
			} else {
				paid = append(paid, m[1])
			}
		}
	}
	if len(free) == 0 {
		t.Fatal("localstack/README.md lists no resource type as free")
	}
	return free, paid
}

func matchesType(pattern, typ string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(typ, p)
	}
	return pattern == typ
}

// The REST API profile deploys only resource types localstack/README.md
// marks as run by LocalStack's free plan, and none it marks paid.
func TestRESTProfileUsesOnlyFreeTypes(t *testing.T) {
	free, paid := freeTypes(t)
	types := map[string]bool{}
	for _, r := range restResources("") {
		types[r["Type"].(string)] = true
	}
	var used []string
	for typ := range types {
		used = append(used, typ)
	}
	sort.Strings(used)
	t.Logf("resource types of the ora:api=rest profile: %s", strings.Join(used, ", "))
	for _, typ := range used {
		ok := false
		for _, p := range free {
			ok = ok || matchesType(p, typ)
		}
		for _, p := range paid {
			if matchesType(p, typ) {
				t.Errorf("%s is marked paid in localstack/README.md (%s)", typ, p)
			}
		}
		if !ok {
			t.Errorf("%s is not listed as free in localstack/README.md", typ)
		}
	}
	for _, typ := range []string{"AWS::ApiGatewayV2::Api", "AWS::Cognito::UserPool"} {
		if types[typ] {
			t.Errorf("the REST profile deploys %s", typ)
		}
	}
	// The default profile does use paid types: the list tells them apart.
	synth(t)
	defaultPaid := 0
	for _, r := range tmpl["Resources"].(map[string]any) {
		for _, p := range paid {
			if matchesType(p, r.(map[string]any)["Type"].(string)) {
				defaultPaid++
			}
		}
	}
	if defaultPaid == 0 {
		t.Error("the default (http) profile uses no type the list marks paid; the list cannot tell the profiles apart")
	}
}

// The REST API serves the HTTP API's routes: the webhook route open, every
// other one behind the TOKEN authorizer, which is the api function; the api
// function holds the token key.
func TestRESTProfileRoutesAndAuthorizer(t *testing.T) {
	res := restResources("AWS::ApiGateway::Resource")
	// Rebuild each resource's full path from its parent chain.
	var pathOf func(id string) string
	pathOf = func(id string) string {
		r, ok := res[id]
		if !ok {
			return "" // the API's root
		}
		p := r["Properties"].(map[string]any)
		return pathOf(getAttID(p["ParentId"])) + "/" + fmt.Sprint(p["PathPart"])
	}
	authorizers := restResources("AWS::ApiGateway::Authorizer")
	if len(authorizers) != 1 {
		t.Fatalf("%d authorizers, want 1", len(authorizers))
	}
	var authID string
	for id, a := range authorizers {
		authID = id
		p := a["Properties"].(map[string]any)
		uri, _ := json.Marshal(p["AuthorizerUri"])
		if p["Type"] != "TOKEN" || p["IdentitySource"] != "method.request.header.Authorization" || !strings.Contains(string(uri), `"api`) {
			t.Errorf("authorizer %v, want TOKEN on the Authorization header invoking the api function", p)
		}
	}
	got := map[string]string{}
	for _, m := range restResources("AWS::ApiGateway::Method") {
		p := m["Properties"].(map[string]any)
		key := fmt.Sprint(p["HttpMethod"]) + " " + pathOf(getAttID(p["ResourceId"]))
		got[key] = fmt.Sprint(p["AuthorizationType"])
		if p["AuthorizationType"] == "CUSTOM" && getAttID(p["AuthorizerId"]) != authID {
			t.Errorf("%s: authorizer %v, want %s", key, p["AuthorizerId"], authID)
		}
	}
	want := map[string]string{"POST /webhooks/{source}": "NONE"}
	for _, r := range apiRoutes {
		want[r.method+" "+r.path] = "CUSTOM"
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: authorization %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d methods, want %d: %v", len(got), len(want), got)
	}
	// The api function knows the key and may read it.
	var keyID string
	for id := range restResources("AWS::SecretsManager::Secret") {
		if strings.HasPrefix(id, "ApiTokenKey") {
			keyID = id
		}
	}
	if keyID == "" {
		t.Fatal("no ApiTokenKey secret")
	}
	for _, f := range restResources("AWS::Lambda::Function") {
		p := f["Properties"].(map[string]any)
		if p["Description"] != "ora api" {
			continue
		}
		vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		if getAttID(vars["ORA_API_TOKEN_SECRET_ARN"]) != keyID {
			t.Errorf("api: ORA_API_TOKEN_SECRET_ARN = %v, want the ApiTokenKey secret", vars["ORA_API_TOKEN_SECRET_ARN"])
		}
		stmts := restRoleStatements(getAttID(p["Role"]))
		if !allows(stmts, "secretsmanager:GetSecretValue", keyID) {
			t.Errorf("api may not read the token key")
		}
	}
	tpl, st := restProfile()
	if _, ok := tpl["Outputs"].(map[string]any)["ApiTokenKeyArn"]; !ok {
		t.Error("no ApiTokenKeyArn output")
	}
	for _, e := range *assertions.Annotations_FromStack(st).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))) {
		t.Errorf("cdk-nag (rest profile): %+v", *e)
	}
}

// restRoleStatements is roleStatements over the REST profile's template.
func restRoleStatements(role string) []map[string]any {
	return statementsOf(restResources("AWS::IAM::Policy"), role)
}
