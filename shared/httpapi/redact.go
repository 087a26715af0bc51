package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/ora-runtime/ora/shared/ora"
)

// Redacting returns h with every registered secret replaced by its marker in
// the response bodies it writes: the one place the API's bytes leave, so no
// route can forget. The key-based redaction below (task tokens, which the
// engine must keep) stays beside it.
func Redacting(secrets *ora.Secrets, h http.Handler) http.Handler {
	if secrets == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(redactingWriter{w, secrets}, r)
	})
}

type redactingWriter struct {
	http.ResponseWriter
	secrets *ora.Secrets
}

// Write redacts each chunk: a JSON answer is written whole (json.Encoder).
func (w redactingWriter) Write(b []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(w.secrets.Redact(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w redactingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Redacted replaces the value of every secret key in what the read routes
// return.
const Redacted = "[redacted]"

// secretKeys are the JSON keys whose values never leave through a read route:
// the escalation's task token (whoever holds it can settle the wave without
// ora.approve), in the ledger's architect-intent and in the wave's history.
var secretKeys = []string{"task_token", "taskToken", "TaskToken"}

func secretKey(k string) bool {
	for _, s := range secretKeys {
		if k == s {
			return true
		}
	}
	return false
}

// mentionsSecret reports whether b may hold a secret key.
func mentionsSecret(b []byte) bool {
	for _, s := range secretKeys {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// redactJSON returns raw with the value of every secret key replaced by
// Redacted, looking into strings that hold JSON too (Step Functions history
// carries a task's parameters as a JSON string). Raw without a secret key is
// returned unchanged, byte for byte.
func redactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !mentionsSecret(raw) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return json.RawMessage(`"` + Redacted + `"`) // not JSON yet mentions a secret: show nothing
	}
	out, err := json.Marshal(redactValue(v))
	if err != nil {
		return json.RawMessage(`"` + Redacted + `"`)
	}
	return out
}

func redactValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if secretKey(k) {
				x[k] = Redacted
				continue
			}
			x[k] = redactValue(val)
		}
		return x
	case []any:
		for i := range x {
			x[i] = redactValue(x[i])
		}
		return x
	case string:
		if mentionsSecret([]byte(x)) && json.Valid([]byte(x)) && strings.ContainsAny(x, "{[") {
			return string(redactJSON(json.RawMessage(x)))
		}
	}
	return v
}
