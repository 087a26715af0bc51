package ora

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

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

func TestSecretsRedactEscapedForms(t *testing.T) {
	s := NewSecrets()
	s.Add("quote", `pa"ss<w>rd&1`)
	for _, in := range []string{`pa"ss<w>rd&1`, `pa\"ss\u003cw\u003erd\u00261`, `pa&#34;ss&lt;w&gt;rd&amp;1`} {
		t.Run(in, func(t *testing.T) {
			if got := s.RedactString("x " + in + " y"); got != "x [redacted:quote] y" {
				t.Errorf("RedactString = %q", got)
			}
		})
	}
}

func TestCredentialHeaderIn(t *testing.T) {
	tests := []struct {
		name, params, want string
	}{
		{"none", `{"url":"https://h/","headers":{"Content-Type":"application/json"}}`, ""},
		{"authorization", `{"headers":{"authorization":"Bearer x"}}`, "authorization"},
		{"cookie", `{"headers":{"Cookie":"s=1"}}`, "Cookie"},
		{"proxy", `{"headers":{"PROXY-AUTHORIZATION":"Basic x"}}`, "PROXY-AUTHORIZATION"},
		{"api key", `{"headers":{"x-api-key":"k"}}`, "x-api-key"},
		{"no headers", `{"message":"hi"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found := CredentialHeaderIn([]byte(tt.params))
			if got != tt.want || found != (tt.want != "") {
				t.Errorf("CredentialHeaderIn = %q, %v; want %q", got, found, tt.want)
			}
		})
	}
}

// A task token is redacted by every writer but the ledger: the entry that
// records a wait is where the token is read back to settle it.
func TestSecretsTaskTokenStaysInTheLedger(t *testing.T) {
	s := NewSecrets()
	const token = "AQCEAAAAKgAAAAMAAAAAAAAAAUh3task-token-canary"
	s.AddTaskToken(token)
	s.Add("connection:github", "ghp_connection-canary")
	body := []byte(`{"task_token":"` + token + `","note":"ghp_connection-canary"}`)
	if got := string(s.Redact(body)); strings.Contains(got, token) || !strings.Contains(got, Marker(TaskTokenName)) {
		t.Errorf("Redact = %s, want the token redacted", got)
	}
	if got := s.RedactString("settle " + token); got != "settle "+Marker(TaskTokenName) {
		t.Errorf("RedactString = %q", got)
	}
	e := s.RedactEntry(Entry{Body: body, Meta: map[string]string{"token": token}})
	if !strings.Contains(string(e.Body), token) || e.Meta["token"] != token {
		t.Errorf("RedactEntry dropped the task token: %s %v", e.Body, e.Meta)
	}
	if strings.Contains(string(e.Body), "ghp_connection-canary") {
		t.Errorf("RedactEntry kept the connection secret: %s", e.Body)
	}
}

// containsAt finds what bytes.Contains finds, whichever byte it anchors on:
// random values and texts over a small alphabet (so that partial matches,
// overlaps and matches at either end are common).
func TestContainsAtIsBytesContains(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	const alphabet = `de-v"a0:`
	gen := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 20000 {
		v := gen(MinSecretLen + r.IntN(4))
		text := gen(r.IntN(60))
		if r.IntN(3) == 0 { // plant v
			at := r.IntN(len(text) + 1)
			text = text[:at] + v + text[at:]
		}
		for _, at := range []int{anchorOf(v), 0, len(v) - 1} {
			if got, want := containsAt([]byte(text), v, at), bytes.Contains([]byte(text), []byte(v)); got != want {
				t.Fatalf("containsAt(%q, %q, %d) = %v, bytes.Contains %v", text, v, at, got, want)
			}
		}
	}
	if got := anchorOf("dev-demo-secret"); got != 3 {
		t.Errorf(`anchorOf("dev-demo-secret") = %d, want 3 (the '-': neither hex nor JSON punctuation)`, got)
	}
}
