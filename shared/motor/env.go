package motor

import (
	"fmt"
	"os"
	"strings"

	defaultrules "github.com/ora-runtime/ora/rules"
)

// Environment variables the Lambdas that read the motor share (api, reason,
// operate): all of them must agree on the base version.
const (
	// EnvRulesFile names the rules file of the base version (default: the
	// embedded rules/ora.rules.yaml).
	EnvRulesFile = "ORA_RULES_FILE"
	// EnvAppVersion is the app context's version (ora.AppVersion), computed
	// at synth from the stack's configuration.
	EnvAppVersion = "ORA_APP_VERSION"
	// EnvModelIDs lists, comma-separated, the model ids the stack lets the
	// reason function invoke (the same variable, and list, as the reason
	// function's primary and fallback models: its IAM policy names them).
	// The api function checks proposed model profiles against it.
	EnvModelIDs = "ORA_BEDROCK_MODEL_IDS"
)

// ModelsFromEnv returns the model ids EnvModelIDs lists, for
// Options.Models: never nil, so an unset or empty variable allows no model.
func ModelsFromEnv(getenv func(string) string) []string {
	ids := []string{}
	for _, id := range strings.Split(getenv(EnvModelIDs), ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// BaseFromEnv returns the base bundle of the Lambdas: the rules file
// EnvRulesFile names, or the embedded default. Errors: EINVALID (the file).
func BaseFromEnv(getenv func(string) string) (Bundle, error) {
	text := defaultrules.Default
	if path := getenv(EnvRulesFile); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return Bundle{}, fmt.Errorf("motor: %s: %w", EnvRulesFile, err)
		}
		text = b
	}
	return NewBase(text, "the configured rules file", 0)
}
