package ora

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// AppVersion returns the app context's version (seed 003): the semantic
// version the user declares (app_version in the ora dev config, the
// ora:appVersion context key on AWS; "0.0.0" when none is declared) with
// the first 12 hex digits of the sha256 of the app context's canonical JSON
// as its build metadata, e.g. "1.4.0+3f2a9c0d1e7b". The app context is what
// the user configures for their agent: the sources (names and types, never
// their secrets), the actions' configuration and bounds, the scopes and the
// per-source settings; the caller passes it. A change the user did not
// version still changes the version, and equal contexts always give equal
// versions. Errors: EINVALID when declared is not MAJOR.MINOR.PATCH.
func AppVersion(declared string, app any) (string, error) {
	if declared == "" {
		declared = "0.0.0"
	}
	parts := strings.Split(declared, ".")
	if len(parts) != 3 {
		return "", Invalid("app_version", "%q is not a semantic version MAJOR.MINOR.PATCH", declared)
	}
	for _, p := range parts {
		if n, err := strconv.Atoi(p); err != nil || n < 0 || (len(p) > 1 && p[0] == '0') {
			return "", Invalid("app_version", "%q is not a semantic version MAJOR.MINOR.PATCH", declared)
		}
	}
	// Marshalling a map sorts its keys; a struct keeps its field order: both
	// are canonical for one program.
	body, err := json.Marshal(app)
	if err != nil {
		return "", fmt.Errorf("app_version: the app context is not JSON: %w", err)
	}
	return declared + "+" + Digest(body)[:12], nil
}
