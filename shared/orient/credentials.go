package orient

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/ora-runtime/ora/shared/ora"
)

// URLCredentials keeps the credentials of the http family's URLs out of
// everything ora stores or shows. A URL entering a profile (Profiles.Put,
// Profiles.Propose) with a user or password, or a credential in its query
// (credentialParams), is kept in its redacted form: the user and password
// are removed and each credential query value is replaced by its marker
// ("[redacted:url:<host>:<param>]"). The credential values join the
// registry of secrets, so any writer that meets one redacts it, and the
// real URL is held here, in the process's memory only, for the fetcher
// (HTTP.Observe) to GET. Profiles, proposals, jobs, facts, packets, logs and
// API answers carry the redacted form. It is safe for concurrent use; a nil
// *URLCredentials redacts nothing and resolves nothing.
type URLCredentials struct {
	secrets *ora.Secrets

	mu   sync.RWMutex
	real map[string]string // redacted URL -> the URL as given
}

// NewURLCredentials returns an empty holder registering the credentials it
// meets in secrets (which may be nil).
func NewURLCredentials(secrets *ora.Secrets) *URLCredentials {
	return &URLCredentials{secrets: secrets, real: map[string]string{}}
}

// processCredentials are the process's holders, one per registry.
var processCredentials sync.Map // *ora.Secrets -> *URLCredentials

// processURLCredentials returns the process's holder for secrets (nil
// included), made on first use.
func processURLCredentials(secrets *ora.Secrets) *URLCredentials {
	if c, ok := processCredentials.Load(secrets); ok {
		return c.(*URLCredentials)
	}
	c, _ := processCredentials.LoadOrStore(secrets, NewURLCredentials(secrets))
	return c.(*URLCredentials)
}

// urlMarkerName is the registry name of a URL credential: the host and the
// query parameter, or "userinfo".
func urlMarkerName(host, part string) string { return "url:" + host + ":" + part }

// credential is a value taken out of a URL, with its registry name.
type credential struct{ name, value string }

// redactURL returns raw's redacted form and the credential values it took
// out; raw itself and nothing when it carries none (or is not an absolute
// URL).
func redactURL(raw string) (string, []credential) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return raw, nil
	}
	var creds []credential
	if u.User != nil {
		creds = append(creds, credential{urlMarkerName(u.Host, "user"), u.User.Username()})
		if p, ok := u.User.Password(); ok {
			creds = append(creds, credential{urlMarkerName(u.Host, "password"), p})
		}
		u.User = nil
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, part := range parts {
			k, v, _ := strings.Cut(part, "=")
			key, err := url.QueryUnescape(k)
			if err != nil || v == "" || strings.HasPrefix(v, "[redacted:") || !slices.Contains(credentialParams, strings.ToLower(key)) {
				continue
			}
			name := urlMarkerName(u.Host, key)
			creds = append(creds, credential{name, v})
			if plain, err := url.QueryUnescape(v); err == nil && plain != v {
				creds = append(creds, credential{name, plain})
			}
			parts[i] = k + "=" + ora.Marker(name)
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	if len(creds) == 0 {
		return raw, nil
	}
	return u.String(), creds
}

// Redact returns raw's redacted form, registering its credentials and
// holding raw for Real; raw itself when it carries none.
func (c *URLCredentials) Redact(raw string) string {
	red, creds := redactURL(raw)
	if c == nil || len(creds) == 0 {
		return red
	}
	for _, cr := range creds {
		c.secrets.Add(cr.name, cr.value)
	}
	c.mu.Lock()
	c.real[red] = raw
	c.mu.Unlock()
	return red
}

// Real returns the URL to GET for target, a job's (redacted) URL: the URL
// it was redacted from when this process holds it, else target itself, and
// false when target carries a marker (its credential is not held here).
func (c *URLCredentials) Real(target string) (string, bool) {
	if c != nil {
		c.mu.RLock()
		real, ok := c.real[target]
		c.mu.RUnlock()
		if ok {
			return real, true
		}
	}
	return target, !strings.Contains(target, "[redacted:")
}

// redactRules keeps the URLs of rules' http predicates in their redacted
// form (URLCredentials.Redact). A predicate that does not decode is left
// for validation to refuse.
func (c *URLCredentials) redactRules(rules []ora.AttentionRule) []ora.AttentionRule {
	var out []ora.AttentionRule
	for i, r := range rules {
		if r.SourceType != FamilyHTTP || len(r.Predicate) == 0 {
			continue
		}
		var p HTTPPredicate
		if decodeStrict(r.Predicate, &p) != nil {
			continue
		}
		changed := false
		urls := slices.Clone(p.URLs)
		for j, u := range urls {
			if red := c.Redact(u); red != u {
				urls[j], changed = red, true
			}
		}
		if !changed {
			continue
		}
		p.URLs = urls
		b, err := json.Marshal(p)
		if err != nil {
			continue
		}
		if out == nil {
			out = slices.Clone(rules)
		}
		out[i].Predicate = b
	}
	if out == nil {
		return rules
	}
	return out
}

// redactLimits keeps a limits' http_allow prefixes without credentials.
func (c *URLCredentials) redactLimits(l ora.Limits) ora.Limits {
	var allow []string
	for i, u := range l.HTTPAllow {
		if red := c.Redact(u); red != u {
			if allow == nil {
				allow = slices.Clone(l.HTTPAllow)
			}
			allow[i] = red
		}
	}
	if allow != nil {
		l.HTTPAllow = allow
	}
	return l
}

// redactProfile returns p with its http URLs in their redacted form.
func (c *URLCredentials) redactProfile(p ora.Profile) ora.Profile {
	p.Rules = c.redactRules(p.Rules)
	p.Limits = c.redactLimits(p.Limits)
	return p
}

// redactProposal returns p with the http URLs of its change in their
// redacted form.
func (c *URLCredentials) redactProposal(p ora.ProfileProposal) ora.ProfileProposal {
	p.Change.Rules = c.redactRules(p.Change.Rules)
	if p.Change.Limits != nil {
		l := c.redactLimits(*p.Change.Limits)
		p.Change.Limits = &l
	}
	return p
}
