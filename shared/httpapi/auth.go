package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"

	"github.com/ora-runtime/ora/shared/ora"
)

// Token is a static bearer token of `ora dev` and the scopes it holds.
type Token struct {
	Token   string   `yaml:"token" json:"token"`
	Subject string   `yaml:"subject" json:"subject"`
	Scopes  []string `yaml:"scopes" json:"scopes"`
	// Namespace is the token holder's namespace (seed 002 §11.2); empty
	// means "main".
	Namespace string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
}

// StaticTokens returns an Authorizer over a fixed set of bearer tokens, compared
// in constant time.
func StaticTokens(tokens []Token) Authorizer {
	type entry struct {
		sum [32]byte
		tok Token
	}
	entries := make([]entry, len(tokens))
	for i, t := range tokens {
		entries[i] = entry{sha256.Sum256([]byte(t.Token)), t}
	}
	return func(r *http.Request, scope string) (string, error) {
		raw, ok := BearerToken(r)
		if !ok {
			return "", ora.Errorf(ora.EUNAUTHORIZED, "a bearer token is required")
		}
		sum := sha256.Sum256([]byte(raw))
		var found *Token
		for i := range entries {
			if subtle.ConstantTimeCompare(sum[:], entries[i].sum[:]) == 1 {
				found = &entries[i].tok
			}
		}
		if found == nil {
			return "", ora.Errorf(ora.EUNAUTHORIZED, "unknown bearer token")
		}
		if !slices.Contains(found.Scopes, scope) {
			return "", ora.Errorf(ora.EFORBIDDEN, "the token lacks scope %s", scope)
		}
		return found.Subject, nil
	}
}
