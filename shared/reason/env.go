package reason

import (
	"encoding/json"
	"strings"

	"github.com/ora-runtime/ora/shared/ora"
)

// Environment variables the reason function reads when ORA_REASONER=bedrock.
const (
	// EnvModelIDs lists the model ids, comma-separated: the first is the
	// primary model, the rest are fallbacks in order.
	EnvModelIDs = "ORA_BEDROCK_MODEL_IDS"
	// EnvConfig is an optional JSON Config laid over DefaultConfig.
	EnvConfig = "ORA_BEDROCK_CONFIG"
)

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
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}
