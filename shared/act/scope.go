package act

import (
	"encoding/json"
	"net/url"
	"path"
	"slices"
	"strings"
)

// Allowed reports whether typ is one of the scope's allowed operations.
func Allowed(typ string, allowed []string) bool { return slices.Contains(allowed, typ) }

// Forbidden returns the first forbidden pattern target matches. A pattern
// matches a target equal to it, under it (the pattern is a folder prefix:
// "secrets" forbids "secrets/a"), or through path.Match globbing ("*.pem"; a
// pattern without a slash matches a name at any depth). Both sides are
// compared in canonical form (Canonical): a target cannot escape a pattern by
// spelling the same path another way.
// A URL target is tested as a whole, as host+path and as its path alone.
func Forbidden(target string, patterns []string) (string, bool) {
	for _, c := range candidates(target) {
		for _, p := range patterns {
			if strings.TrimSpace(p) == "" {
				continue
			}
			if matches(c, canonicalPattern(p)) {
				return p, true
			}
		}
	}
	return "", false
}

// Canonical returns the form a path is compared in: percent-decoded (until
// stable, so a double encoding decodes too; URLs only), backslashes as
// slashes, each segment's ";params" dropped (URLs only), slashes collapsed,
// dot segments resolved, case folded, without a leading slash. The target
// sees "/%61dmin/./users;x=1" as "admin/users", and so does the check.
func Canonical(p string, isURL bool) string {
	if isURL {
		for range 3 {
			d, err := url.PathUnescape(p)
			if err != nil || d == p {
				break
			}
			p = d
		}
	}
	p = strings.ReplaceAll(p, "\\", "/")
	if isURL {
		segs := strings.Split(p, "/")
		for i, s := range segs {
			if j := strings.IndexByte(s, ';'); j >= 0 {
				segs[i] = s[:j]
			}
		}
		p = strings.Join(segs, "/")
	}
	return strings.TrimPrefix(path.Clean("/"+strings.ToLower(p)), "/")
}

// canonicalPattern is a forbidden pattern in canonical form: case folded,
// slashes collapsed, dot segments resolved, no leading or trailing slash.
func canonicalPattern(p string) string {
	trail := strings.HasSuffix(p, "**")
	c := Canonical(strings.TrimSuffix(p, "**"), false)
	if trail {
		c = strings.TrimSuffix(c+"/**", "/")
		c = strings.TrimPrefix(c, "/")
	}
	if c == "" || c == "." {
		return "/"
	}
	return c
}

func candidates(target string) []string {
	if u, err := url.Parse(target); err == nil && u.Scheme != "" && u.Host != "" {
		p := Canonical(u.EscapedPath(), true)
		host := strings.ToLower(u.Host)
		return []string{strings.ToLower(u.Scheme) + ":/" + host + "/" + p, host + "/" + p, p}
	}
	return []string{Canonical(target, false)}
}

func matches(target, pattern string) bool {
	p := strings.TrimSuffix(strings.TrimSuffix(pattern, "**"), "/")
	if p == "" {
		return true // "/" or "**" forbids everything
	}
	if target == p || strings.HasPrefix(target, p+"/") {
		return true
	}
	if ok, err := path.Match(pattern, target); err == nil && ok {
		return true
	}
	parts := strings.Split(target, "/")
	// A pattern without a slash matches a name at any depth, as in .gitignore.
	if !strings.Contains(pattern, "/") {
		for _, seg := range parts {
			if ok, err := path.Match(pattern, seg); err == nil && ok {
				return true
			}
		}
	}
	// A glob also forbids what lies under a folder it matches.
	for i := 1; i < len(parts); i++ {
		if ok, err := path.Match(pattern, strings.Join(parts[:i], "/")); err == nil && ok {
			return true
		}
	}
	return false
}

// ParamTargets returns the targets an action's raw parameters name (its
// url, key and path), so a check of forbidden paths sees them whatever the
// executor reports.
func ParamTargets(params json.RawMessage) []string {
	var m map[string]any
	if json.Unmarshal(params, &m) != nil {
		return nil
	}
	var out []string
	for _, k := range []string{"url", "key", "path"} {
		if s, ok := m[k].(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}
