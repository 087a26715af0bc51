package reason

import (
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
)

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ConfigFromEnv(env(map[string]string{EnvModelIDs: DefaultFallbackModel + ", " + DefaultModel}))
	if err != nil {
		t.Fatalf("ConfigFromEnv: %v", err)
	}
	if c.Model != DefaultFallbackModel || len(c.FallbackModels) != 1 || c.FallbackModels[0] != DefaultModel {
		t.Errorf("models: got %s %v", c.Model, c.FallbackModels)
	}
	c, err = ConfigFromEnv(env(map[string]string{EnvConfig: `{"max_stages": 2}`}))
	if err != nil || c.MaxStages != 2 || c.Model != DefaultModel {
		t.Errorf("config overlay: got %+v, %v", c, err)
	}
	c, err = ConfigFromEnv(env(map[string]string{EnvGuardrailID: "gr-1", EnvGuardrailVersion: "3"}))
	if err != nil || c.Guardrail.ID != "gr-1" || c.Guardrail.Version != "3" {
		t.Errorf("guardrail: got %+v, %v", c.Guardrail, err)
	}
	for name, m := range map[string]map[string]string{
		"bad json":                     {EnvConfig: `{`},
		"no model":                     {EnvModelIDs: " , "},
		"model unpriced":               {EnvModelIDs: "some.unknown-model-v1:0"},
		"guardrail id without version": {EnvGuardrailID: "gr-1"},
		"guardrail version without id": {EnvGuardrailVersion: "1"},
	} {
		if _, err := ConfigFromEnv(env(m)); ora.ErrorCode(err) != ora.EINVALID {
			t.Errorf("%s: got %v, want EINVALID", name, err)
		}
	}
}

// A motor version's model profile replaces the fields it names; the rules
// version it is given keys the pattern cache; a bad profile names the field.
func TestWithProfile(t *testing.T) {
	c := DefaultConfig()
	got, err := c.WithProfile([]byte(`{"model":"`+DefaultFallbackModel+`","fallback_models":[],"prompts_version":"p9","max_stages":2}`), "1.2.0")
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != DefaultFallbackModel || len(got.FallbackModels) != 0 || got.PromptsVersion != "p9" || got.MaxStages != 2 || got.WaveTokenBudget != c.WaveTokenBudget {
		t.Errorf("overlay: %+v", got)
	}
	if mv := got.MotorVersion(); mv != "rules=1.2.0;prompts=p9;model="+DefaultFallbackModel {
		t.Errorf("motor version %q", mv)
	}
	if c.Model != DefaultModel || len(c.FallbackModels) != 1 {
		t.Errorf("the base configuration changed: %+v", c)
	}
	if _, err := c.WithProfile([]byte(`{"max_stages":9}`), "1"); ora.ErrorField(err) != "reason.max_stages" {
		t.Errorf("bad profile: %v", err)
	}
	if _, err := c.WithProfile([]byte(`[1]`), "1"); ora.ErrorField(err) != "model" {
		t.Errorf("not a profile: %v", err)
	}
}
