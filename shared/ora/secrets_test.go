package ora

import "testing"

func TestSecretsRedact(t *testing.T) {
	s := NewSecrets()
	if s.Add("short", "abc") {
		t.Fatal("a 3-byte value was registered")
	}
	s.Add("github", "ghp_canary_123456")
	s.Add("github-prefix", "ghp_canary")
	tests := []struct{ name, in, want string }{
		{"none", "plain text", "plain text"},
		{"longest first", `{"h":"Bearer ghp_canary_123456"}`, `{"h":"Bearer [redacted:github]"}`},
		{"shorter value", "x ghp_canary y", "x [redacted:github-prefix] y"},
		{"short value untouched", "abc abc", "abc abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(s.Redact([]byte(tt.in))); got != tt.want {
				t.Errorf("Redact = %q, want %q", got, tt.want)
			}
			if got := s.RedactString(tt.in); got != tt.want {
				t.Errorf("RedactString = %q, want %q", got, tt.want)
			}
		})
	}
	if name, ok := s.Find([]byte("..ghp_canary_123456..")); !ok || name != "github" {
		t.Errorf("Find = %q, %v; want github, true", name, ok)
	}
	var nilS *Secrets
	if got := nilS.RedactString("ghp_canary"); got != "ghp_canary" {
		t.Errorf("nil registry changed text: %q", got)
	}
}
