package act_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
)

func describeConfig() act.Config {
	return act.Config{
		HTTP:   act.HTTPConfig{AllowedHosts: []string{"api.example.com", "https://hooks.example.org"}, TimeoutSeconds: 5},
		Object: act.ObjectConfig{AllowedPrefixes: []string{"reports/", "actions/"}},
	}
}

// TestCatalogue: every standard action describes itself, with the bounds the
// configuration puts on it, in the strict subset, and the registry's
// catalogue is the one a reasoner without a registry builds.
func TestCatalogue(t *testing.T) {
	cfg := describeConfig()
	reg := act.Standard(cfg, act.NewLogNotify(quiet), act.Folder{Root: t.TempDir()}, nil, nil)
	got := reg.Catalogue()
	if want := act.StandardCatalogue(cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("registry catalogue differs from StandardCatalogue:\n got %+v\nwant %+v", got, want)
	}
	if len(got) != len(reg.Types()) {
		t.Errorf("catalogue has %d entries for %d registered types", len(got), len(reg.Types()))
	}
	bounds := map[string]string{act.TypeHTTPRequest: "api.example.com, https://hooks.example.org", act.TypeObjectPut: "reports/, actions/", act.TypeNotify: "log"}
	for _, d := range got {
		t.Run(d.Type, func(t *testing.T) {
			if d.Summary == "" {
				t.Error("no summary")
			}
			if _, err := bedrock.CheckStrict(d.Parameters); err != nil {
				t.Errorf("parameters schema outside the strict subset: %v", err)
			}
			if want := bounds[d.Type]; want != "" && !strings.Contains(strings.Join(d.Bounds, "; "), want) {
				t.Errorf("bounds %q do not name %q", d.Bounds, want)
			}
			if d.SideEffect != (d.Type != act.TypeNone) {
				t.Errorf("side effect = %v", d.SideEffect)
			}
		})
	}
}

// TestDescribedParametersRun: parameters that satisfy each action's
// described schema are accepted by the action itself.
func TestDescribedParametersRun(t *testing.T) {
	cfg := describeConfig()
	reg := act.Standard(cfg, act.NewLogNotify(quiet), act.Folder{Root: t.TempDir()}, nil, nil)
	params := map[string]string{
		act.TypeNone:            `{"reason":"a label change needs no response"}`,
		act.TypeNotify:          `{"subject":"deploy failed","message":"the deploy of api failed twice"}`,
		act.TypeHTTPRequest:     `{"method":"POST","connection":"","path":"","url":"https://api.example.com/issues/7/comments","body":"{\"body\":\"thanks\"}"}`,
		act.TypeObjectPut:       `{"key":"reports/7.txt","content_type":"text/plain","body":"triage report"}`,
		act.TypeCommitmentOpen:  `{"title":"follow up on issue 7","id":""}`,
		act.TypeCommitmentClose: `{"id":"c-7"}`,
	}
	for _, d := range reg.Catalogue() {
		t.Run(d.Type, func(t *testing.T) {
			raw, ok := params[d.Type]
			if !ok {
				t.Fatalf("no example parameters for %s", d.Type)
			}
			c := jsonschema.NewCompiler()
			doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(d.Parameters)))
			if err := c.AddResource("p.json", doc); err != nil {
				t.Fatal(err)
			}
			s, err := c.Compile("p.json")
			if err != nil {
				t.Fatal(err)
			}
			v, _ := jsonschema.UnmarshalJSON(strings.NewReader(raw))
			if err := s.Validate(v); err != nil {
				t.Errorf("example does not validate: %v", err)
			}
			a, _ := reg.Lookup(d.Type)
			if ch, ok := a.(act.Checker); ok {
				if _, err := ch.Check(json.RawMessage(raw)); err != nil {
					t.Errorf("Check: %v", err)
				}
			}
		})
	}
}

func TestNone(t *testing.T) {
	n := act.NewNone()
	r, err := n.Run(context.Background(), json.RawMessage(`{"reason":"nothing to do"}`))
	if err != nil || r.Type != act.TypeNone || r.Digest == "" {
		t.Errorf("Run = %+v, %v; want a none receipt with the reason's digest", r, err)
	}
	if _, err := n.Run(context.Background(), json.RawMessage(`{"reason":" "}`)); err == nil {
		t.Error("a none without a reason was accepted")
	}
}

func TestCatalogueFromEnv(t *testing.T) {
	env := map[string]string{
		act.EnvConfig:   `{"http":{"allowed_hosts":["api.example.com"]},"object":{"allowed_prefixes":["reports/"]}}`,
		act.EnvTopicARN: "arn:aws:sns:us-east-1:123456789012:ora-notify",
	}
	got, err := act.CatalogueFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	all := ""
	for _, d := range got {
		all += strings.Join(d.Bounds, ";") + ";"
	}
	for _, want := range []string{"api.example.com", "reports/", env[act.EnvTopicARN]} {
		if !strings.Contains(all, want) {
			t.Errorf("bounds %q lack %q", all, want)
		}
	}
	for _, d := range got {
		if d.Type == act.TypeFunctionInvoke {
			t.Errorf("function.invoke is in the catalogue without ORA_FUNCTIONS: %+v", d)
		}
	}
	// With functions, the model is shown function.invoke over their names
	// and payload schemas, as the act function that runs them describes it.
	env[act.EnvFunctions] = `{"write-report":{"arn":"arn:aws:lambda:us-east-1:123456789012:function:write-report:live","description":"Writes a report","payload_schema":{"type":"object","properties":{"issue":{"type":"integer"}},"required":["issue"]}},"page":"arn:aws:lambda:us-east-1:123456789012:function:page"}`
	got, err = act.CatalogueFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	var fn *act.Description
	for i := range got {
		if got[i].Type == act.TypeFunctionInvoke {
			fn = &got[i]
		}
	}
	if fn == nil {
		t.Fatal("no function.invoke in the catalogue with ORA_FUNCTIONS set")
	}
	if !strings.Contains(string(fn.Parameters), `"enum":["write-report"]`) || !strings.Contains(string(fn.Parameters), `"issue":{"type":"integer"}`) ||
		!strings.Contains(strings.Join(fn.Bounds, ";"), "functions: page, write-report") {
		t.Errorf("function.invoke %s %v: want a branch per function with write-report's payload schema", fn.Parameters, fn.Bounds)
	}
	// As the Converse adapter sends it: nested in the decision's schema,
	// reduced to the strict subset.
	strict, err := bedrock.StrictSchema(json.RawMessage(`{"type":"object","properties":{"parameters":` + string(fn.Parameters) + `},"required":["parameters"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bedrock.CheckStrict(strict); err != nil {
		t.Errorf("function.invoke's parameters are outside the strict subset: %v", err)
	}
	env[act.EnvFunctions] = "["
	if _, err := act.CatalogueFromEnv(func(k string) string { return env[k] }); err == nil {
		t.Error("a bad ORA_FUNCTIONS was accepted")
	}
	delete(env, act.EnvFunctions)
	env[act.EnvConfig] = "{"
	if _, err := act.CatalogueFromEnv(func(k string) string { return env[k] }); err == nil {
		t.Error("a bad ORA_ACT_CONFIG was accepted")
	}
}
