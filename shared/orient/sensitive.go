package orient

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/ora-runtime/ora/shared/ora"
)

// The kinds of sensitive provenance: what made a value sensitive.
const (
	// SensitiveURL is a URL carrying credentials: a user or password, or a
	// query parameter that carries a credential (token, key, signature...).
	SensitiveURL = "url_credentials"
	// SensitiveHeader is the value of a header that carries credentials
	// (ora.CredentialHeaders).
	SensitiveHeader = "credential_header"
	// SensitiveSecret is a value holding one ora.Secrets knows.
	SensitiveSecret = "secret"
	// SensitiveField is the value of a provenance field the configuration
	// marks sensitive (Options.SensitiveProvenance).
	SensitiveField = "sensitive_field"
)

// ProvenanceSensitive is the provenance key listing, comma-separated and
// sorted, the keys whose values are kept as references.
const ProvenanceSensitive = "sensitive"

// SensitiveRef is how a sensitive provenance value is kept in a fact, and
// so in the packet: its kind and its digest, never the value
// ("sensitive:url_credentials:sha256:…"). Whoever holds the value can check
// it against the reference; nobody can read it back.
func SensitiveRef(kind, value string) string {
	return "sensitive:" + kind + ":sha256:" + ora.Digest([]byte(value))
}

// credentialParams are query parameters that carry credentials.
var credentialParams = []string{"access_token", "api_key", "apikey", "auth", "key", "password", "secret", "sig", "signature",
	"token", "x-amz-credential", "x-amz-security-token", "x-amz-signature"}

// sensitiveKind returns why a provenance value is sensitive, or "".
func (o Options) sensitiveKind(key, value string) string {
	if value == "" {
		return ""
	}
	k := strings.ToLower(key)
	switch {
	case slices.Contains(o.SensitiveProvenance, key):
		return SensitiveField
	case ora.CredentialHeader(strings.TrimPrefix(k, "header:")):
		return SensitiveHeader
	}
	if _, found := o.Secrets.Find([]byte(value)); found {
		return SensitiveSecret
	}
	if u, err := url.Parse(value); err == nil && u.Scheme != "" && u.Host != "" {
		if u.User != nil {
			return SensitiveURL
		}
		for p := range u.Query() {
			if slices.Contains(credentialParams, strings.ToLower(p)) {
				return SensitiveURL
			}
		}
	}
	return ""
}

// guardProvenance keeps each sensitive provenance value of f as its
// reference (SensitiveRef), there and wherever the fact repeats the value
// (its source_ref, dedupe_key and normalized content), and lists the keys
// under ProvenanceSensitive.
func (o Options) guardProvenance(f *ora.Fact) {
	var keys []string
	for k, v := range f.Provenance {
		kind := o.sensitiveKind(k, v)
		if kind == "" {
			continue
		}
		ref := SensitiveRef(kind, v)
		f.Provenance[k] = ref
		f.SourceRef = strings.ReplaceAll(f.SourceRef, v, ref)
		f.DedupeKey = strings.ReplaceAll(f.DedupeKey, v, ref)
		if enc, err := json.Marshal(v); err == nil {
			f.Normalized = bytes.ReplaceAll(f.Normalized, enc[1:len(enc)-1], []byte(ref))
		}
		f.Normalized = bytes.ReplaceAll(f.Normalized, []byte(v), []byte(ref))
		keys = append(keys, k)
	}
	if len(keys) > 0 {
		sort.Strings(keys)
		f.Provenance[ProvenanceSensitive] = strings.Join(keys, ",")
	}
}
