package reason

import (
	"encoding/json"
	"strings"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/ora"
)

// Environment variables the reason function reads when ORA_REASONER=bedrock.
const (
	// EnvModelIDs lists the model ids, comma-separated: the first is the
	// primary model, the rest are fallbacks in order.
	EnvModelIDs = "ORA_BEDROCK_MODEL_IDS"
	// EnvConfig is an optional JSON Config laid over DefaultConfig.
	EnvConfig = "ORA_BEDROCK_CONFIG"
	// EnvGuardrailID and EnvGuardrailVersion name the Bedrock guardrail
	// applied to every Converse call and by the safety validator (both or
	// neither).
	EnvGuardrailID      = "ORA_GUARDRAIL_ID"
	EnvGuardrailVersion = "ORA_GUARDRAIL_VERSION"
)

// GuardrailFromEnv returns the guardrail EnvGuardrailID and
// EnvGuardrailVersion name (the zero Guardrail when neither is set).
// Errors: EINVALID when only one is set.
func GuardrailFromEnv(getenv func(string) string) (bedrock.Guardrail, error) {
	g := bedrock.Guardrail{ID: getenv(EnvGuardrailID), Version: getenv(EnvGuardrailVersion)}
	if err := g.Validate(); err != nil {
		return bedrock.Guardrail{}, ora.Invalid(EnvGuardrailID, "%s and %s go together: %v", EnvGuardrailID, EnvGuardrailVersion, err)
	}
	return g, nil
}

// ConfigFromEnv returns DefaultConfig with EnvConfig and EnvModelIDs applied,
// validated. Errors: EINVALID naming the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := DefaultConfig()
	if raw := getenv(EnvConfig); raw != "" {
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			return Config{}, ora.Invalid(EnvConfig, "not a JSON reasoner config: %v", err)
		}
	}
	if raw := getenv(EnvModelIDs); raw != "" {
		var ids []string
		for _, id := range strings.Split(raw, ",") {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return Config{}, ora.Invalid(EnvModelIDs, "names no model")
		}
		c.Model, c.FallbackModels = ids[0], ids[1:]
	}
	g, err := GuardrailFromEnv(getenv)
	if err != nil {
		return Config{}, err
	}
	if g.Enabled() {
		c.Guardrail = g
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}
