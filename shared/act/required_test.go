package act_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/ora"
)

// Each standard action's Required list is what its own validation refuses:
// valid parameters pass CheckParameters, and each required one missing,
// null or empty fails it with EINVALID naming the parameter.
func TestRequiredIsWhatTheActionsRefuse(t *testing.T) {
	valid := map[string]map[string]any{
		act.TypeNotify:          {"subject": "s", "message": "m"},
		act.TypeHTTPRequest:     {"url": "https://not-allow-listed.example/x", "method": "POST"},
		act.TypeObjectPut:       {"key": "reports/a.json", "body": "{}"},
		act.TypeCommitmentOpen:  {"title": "t"},
		act.TypeCommitmentClose: {"id": "c1"},
	}
	reg := act.StandardParameters()
	for _, typ := range reg.Types() {
		t.Run(typ, func(t *testing.T) {
			params, ok := valid[typ]
			if !ok {
				t.Fatalf("no valid parameters for %s: add them", typ)
			}
			required := act.StandardRequired(typ)
			if len(required) == 0 {
				t.Fatalf("%s names no required parameter", typ)
			}
			if err := reg.CheckParameters(action(t, typ, params)); err != nil {
				t.Fatalf("valid parameters: %v (an allow-list refusal is not a parameter error)", err)
			}
			for _, p := range required {
				for _, bad := range []struct {
					name string
					v    any
					drop bool
				}{{"missing", nil, true}, {"null", nil, false}, {"empty", "", false}} {
					m := map[string]any{}
					for k, v := range params {
						m[k] = v
					}
					if bad.drop {
						delete(m, p)
					} else {
						m[p] = bad.v
					}
					err := reg.CheckParameters(action(t, typ, m))
					if ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), typ+".parameters."+p) {
						t.Errorf("%s %s: %v, want EINVALID naming %s.parameters.%s", p, bad.name, err, typ, p)
					}
				}
			}
		})
	}
	if err := reg.CheckParameters(ora.Action{Type: "no.such.action"}); err != nil {
		t.Errorf("unregistered type: %v, want nil (the actor refuses it)", err)
	}
}

func action(t *testing.T, typ string, params map[string]any) ora.Action {
	t.Helper()
	b, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	return ora.Action{Type: typ, Parameters: b}
}
