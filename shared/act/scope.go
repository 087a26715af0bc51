package act

import (
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
// pattern without a slash matches a name at any depth). A leading slash is
// ignored on both sides.
// A URL target is tested as a whole, as host+path and as its path alone.
func Forbidden(target string, patterns []string) (string, bool) {
	for _, c := range candidates(target) {
		for _, p := range patterns {
			if p == "" {
				continue
			}
			if matches(c, p) {
				return p, true
			}
		}
	}
	return "", false
}

func candidates(target string) []string {
	out := []string{target}
	if u, err := url.Parse(target); err == nil && u.Scheme != "" && u.Host != "" {
		p := u.EscapedPath()
		out = append(out, u.Host+p, strings.TrimPrefix(p, "/"), p)
	} else {
		out = append(out, path.Clean("/" + target)[1:])
	}
	return out
}

func matches(target, pattern string) bool {
	// Patterns and targets are relative: "/etc" and "etc" name the same place.
	target, pattern = strings.TrimPrefix(target, "/"), strings.TrimPrefix(pattern, "/")
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
