// Package rules holds ora's default rules file, rules/ora.rules.yaml, embedded
// so that the embedded runtime, the Lambdas and the end-to-end tests share one
// versioned copy. shared/rules parses and evaluates it.
package rules

import _ "embed" // for the go:embed directive

// Default is the content of ora.rules.yaml, the rules file used when no other
// is configured (ORA_RULES_FILE, or rules_file in the ora dev config).
//
//go:embed ora.rules.yaml
var Default []byte
