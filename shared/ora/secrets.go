package ora

import (
	"bytes"
	"encoding/json"
	"html"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// MinSecretLen is the shortest value the Secrets registry will hold: shorter
// values would match ordinary text and redact it.
const MinSecretLen = 6

// Secrets is the one registry of sensitive values (connection secrets,
// webhook secrets, API tokens, the action signing secret, task tokens) that
// every writer consults before bytes leave the process or reach storage:
// ledger entries, evidence, packets, API responses, console pages, `ora
// trace`, logs and model requests. Values are registered by name; Redact
// replaces every occurrence with "[redacted:<name>]".
//
// The registry is defence in depth: secrets are kept out of what ora writes
// by design (connections resolve credentials at send time), and the registry
// catches what slips through. It is safe for concurrent use; the zero value
// is an empty registry.
type Secrets struct {
	mu     sync.RWMutex
	byVal  map[string]string // value -> name
	sorted []string          // values, longest first
	anchor map[string]int    // value -> the index of its rarest byte (anchorOf)
}

// NewSecrets returns an empty registry.
func NewSecrets() *Secrets { return &Secrets{} }

// Add registers value under name, with the forms it takes once written into
// JSON or HTML (a value holding a quote, '<', '>' or '&' is escaped there).
// Values shorter than MinSecretLen are ignored (and reported false) rather
// than redacting common text.
func (s *Secrets) Add(name, value string) bool {
	if s == nil || len(value) < MinSecretLen {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byVal == nil {
		s.byVal, s.anchor = map[string]string{}, map[string]int{}
	}
	if _, ok := s.byVal[value]; ok {
		return true
	}
	forms := []string{value, html.EscapeString(value)}
	if b, err := json.Marshal(value); err == nil {
		forms = append(forms, string(b[1:len(b)-1]))
	}
	for _, f := range forms {
		if _, ok := s.byVal[f]; !ok {
			s.byVal[f] = name
			s.anchor[f] = anchorOf(f)
			s.sorted = append(s.sorted, f)
		}
	}
	sort.Slice(s.sorted, func(i, j int) bool { return len(s.sorted[i]) > len(s.sorted[j]) })
	return true
}

// Len returns how many values are registered (each with its escaped forms).
func (s *Secrets) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.sorted)
}

// Marker returns what Redact puts in place of the value registered as name.
func Marker(name string) string { return "[redacted:" + name + "]" }

// TaskTokenName is the name task tokens are registered under (AddTaskToken).
const TaskTokenName = "task-token"

// AddTaskToken registers a Step Functions task token (of a wave waiting for
// a person or for the operator), where it is minted or received. Every
// writer redacts it except the ledger (RedactEntry): the ledger entry that
// records the wait is where the token is read back to settle it, and the
// read routes drop its key.
func (s *Secrets) AddTaskToken(token string) bool { return s.Add(TaskTokenName, token) }

// Redact returns b with every registered value replaced by its marker. When b
// holds none, b itself is returned (no copy).
func (s *Secrets) Redact(b []byte) []byte { return s.redact(b, false) }

func (s *Secrets) redact(b []byte, keepTokens bool) []byte {
	if s == nil || len(b) == 0 {
		return b
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.sorted {
		if keepTokens && s.byVal[v] == TaskTokenName {
			continue
		}
		if containsAt(b, v, s.anchor[v]) {
			b = bytes.ReplaceAll(b, []byte(v), []byte(Marker(s.byVal[v])))
		}
	}
	return b
}

// anchorOf returns the index of the byte of v that the bytes redaction
// scans (entries, evidence, packets: JSON full of hex digests) hold least
// often: a byte that is neither a hex digit nor JSON's punctuation, lower
// case letters and digits after others. bytes.Contains looks for a value's
// first byte, and values that start with a hex digit ("dev-...", a hex
// token) stopped at every digest: searching for "dev-demo-secret" by its
// '-' is several times faster on a wave's entries.
func anchorOf(v string) int {
	rank := func(c byte) int {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', strings.IndexByte("\" :,{}[]", c) >= 0:
			return 3
		case c >= 'g' && c <= 'z':
			return 2
		}
		return 1
	}
	best := 0
	for i := 1; i < len(v); i++ {
		if rank(v[i]) < rank(v[best]) {
			best = i
		}
	}
	return best
}

// containsAt reports whether b contains v, finding the candidates by v's
// byte at index at (anchorOf): bytes.Contains(b, []byte(v)), faster where
// v's first byte is common in b.
func containsAt(b []byte, v string, at int) bool {
	c := v[at]
	for i := at; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], c)
		if j < 0 {
			return false
		}
		i += j
		if start := i - at; start+len(v) <= len(b) && string(b[start:start+len(v)]) == v {
			return true
		}
	}
	return false
}

// RedactString is Redact for a string.
func (s *Secrets) RedactString(str string) string { return s.redactString(str, false) }

func (s *Secrets) redactString(str string, keepTokens bool) string {
	if s == nil || str == "" {
		return str
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.sorted {
		if keepTokens && s.byVal[v] == TaskTokenName {
			continue
		}
		if strings.Contains(str, v) {
			str = strings.ReplaceAll(str, v, Marker(s.byVal[v]))
		}
	}
	return str
}

// Find reports the name of the first registered value b contains.
func (s *Secrets) Find(b []byte) (name string, found bool) {
	if s == nil {
		return "", false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.sorted {
		if containsAt(b, v, s.anchor[v]) {
			return s.byVal[v], true
		}
	}
	return "", false
}

// CredentialHeaders are the request headers that carry credentials. A rule
// or a decision may not set them: a connection supplies them at send time,
// so they never reach the ledger.
var CredentialHeaders = []string{"Authorization", "Cookie", "Proxy-Authorization", "X-Api-Key"}

// CredentialHeader reports whether name (any case) is a credential header.
func CredentialHeader(name string) bool {
	c := http.CanonicalHeaderKey(strings.TrimSpace(name))
	for _, h := range CredentialHeaders {
		if c == h {
			return true
		}
	}
	return false
}

// CredentialHeaderIn returns the first credential header an action's
// parameters set in their "headers" object.
func CredentialHeaderIn(params json.RawMessage) (string, bool) {
	var p struct {
		Headers map[string]json.RawMessage `json:"headers"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil {
		return "", false
	}
	names := make([]string, 0, len(p.Headers))
	for k := range p.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if CredentialHeader(k) {
			return k, true
		}
	}
	return "", false
}

// RedactEntry returns e with every registered value in its body and meta
// replaced by its marker, task tokens excepted (AddTaskToken); a body that
// changed gets its new digest (the ledger stores what it was given, less the
// secrets). Ledger adapters call it at append.
func (s *Secrets) RedactEntry(e Entry) Entry {
	if s.Len() == 0 {
		return e
	}
	if b := s.redact(e.Body, true); len(b) != len(e.Body) || !bytes.Equal(b, e.Body) {
		e.Body, e.Digest = b, Digest(b)
	}
	for _, v := range e.Meta {
		if s.redactString(v, true) != v {
			m := make(map[string]string, len(e.Meta))
			for k, v2 := range e.Meta {
				m[k] = s.redactString(v2, true)
			}
			e.Meta = m
			break
		}
	}
	return e
}
