package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"regexp"
	"strings"

	"github.com/ora-runtime/ora/shared/ora"
)

// Correlation keys: where known, every log line of a wave carries them.
const (
	KeySignalID       = "signal_id"
	KeyWaveID         = "wave_id"
	KeyDecisionID     = "decision_id"
	KeyPacketID       = "packet_id"
	KeyProfileVersion = "profile_version"
	KeyMotorVersion   = "motor_version"
)

// CorrelationKeys are the keys the task wrapper lifts from a task's input and
// output into its log lines, in the order they are written.
var CorrelationKeys = []string{KeySignalID, KeyWaveID, KeyDecisionID, KeyPacketID, KeyProfileVersion, KeyMotorVersion}

// Redacted replaces a secret in a log line.
const Redacted = "[redacted]"

// sensitiveKey matches attribute keys whose values are never logged: secrets,
// tokens (task tokens, bearer tokens), passwords, signatures and auth headers.
var sensitiveKey = regexp.MustCompile(`(?i)(secret|token|password|passwd|signature|authorization|api[_-]?key|cookie|credential)`)

// tokenCount matches the names of model token counts and budgets
// (estimated_tokens, token_budget, Bedrock's inputTokens and
// cacheReadInputTokens), which name numbers, not credentials.
var tokenCount = regexp.MustCompile(`(?i)(estimated|input|output|max|min|total|used|cached|prompt|completion)_?tokens|tokens_?(used|budget|count|total|in|out)|token_?(budget|used|count|limit)`)

// Sensitive reports whether a field named key holds a secret that is never
// logged nor shown (secrets, tokens, passwords, signatures, auth headers);
// a model's token counts and budgets are not.
func Sensitive(key string) bool {
	return sensitiveKey.MatchString(tokenCount.ReplaceAllString(key, ""))
}

// LogOptions tune NewLogger.
type LogOptions struct {
	// Level is the lowest level written. Default slog.LevelInfo.
	Level slog.Leveler
	// Secrets are values that must never appear in a line: each occurrence in
	// a string value is replaced by Redacted (signing secrets, bearer tokens).
	Secrets []string
	// Registry is the runtime's registry of sensitive values, consulted on
	// every line as it is written, so values registered later (tokens an
	// OAuth 2.0 server mints) are redacted too. Optional.
	Registry *ora.Secrets
	// Attrs are written on every line (function_name, for instance).
	Attrs []slog.Attr
}

// NewLogger returns a logger writing one JSON object per line to w with the
// keys level, message, timestamp and service, plus the correlation keys and
// Lambda fields found in each call's context (see WithFields and
// WithInvocation). Attributes named like secrets, and the values listed in
// LogOptions.Secrets, are redacted.
func NewLogger(w io.Writer, service string, opts ...func(*LogOptions)) *slog.Logger {
	o := LogOptions{Level: slog.LevelInfo}
	for _, f := range opts {
		f(&o)
	}
	var secrets []string
	for _, s := range o.Secrets {
		if len(s) >= 4 { // shorter values would redact ordinary words
			secrets = append(secrets, s)
		}
	}
	if o.Registry != nil {
		w = redactingWriter{w, o.Registry}
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: o.Level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 {
				switch a.Key {
				case slog.TimeKey:
					a.Key = "timestamp"
					return a
				case slog.MessageKey:
					a.Key = "message"
				}
			}
			if a.Key != "message" && Sensitive(a.Key) {
				return slog.String(a.Key, Redacted)
			}
			if len(secrets) > 0 {
				if v := a.Value.Resolve(); v.Kind() == slog.KindString || v.Kind() == slog.KindAny {
					s := v.String()
					if v.Kind() == slog.KindAny {
						if e, ok := v.Any().(error); ok {
							s = e.Error()
						} else {
							return a
						}
					}
					if r := redact(s, secrets); r != s {
						return slog.String(a.Key, r)
					}
				}
			}
			return a
		},
	})
	attrs := append([]slog.Attr{slog.String("service", service)}, o.Attrs...)
	return slog.New(contextHandler{h.WithAttrs(attrs), secrets})
}

// redactingWriter redacts registered values from each line (slog's JSON
// handler writes a line in one Write).
type redactingWriter struct {
	w       io.Writer
	secrets *ora.Secrets
}

func (r redactingWriter) Write(b []byte) (int, error) {
	if _, err := r.w.Write(r.secrets.Redact(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func redact(s string, secrets []string) string {
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	return s
}

// contextHandler adds the context's invocation fields and correlation keys
// to each record, and redacts secrets in the message itself.
type contextHandler struct {
	slog.Handler
	secrets []string
}

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if len(h.secrets) > 0 {
		if m := redact(r.Message, h.secrets); m != r.Message {
			nr := slog.NewRecord(r.Time, r.Level, m, r.PC)
			r.Attrs(func(a slog.Attr) bool { nr.AddAttrs(a); return true })
			r = nr
		}
	}
	if inv, ok := ctx.Value(invocationKey{}).(Invocation); ok {
		r.AddAttrs(
			slog.Bool("cold_start", inv.ColdStart),
			slog.String("function_name", inv.FunctionName),
			slog.String("function_request_id", inv.RequestID),
			slog.String("xray_trace_id", inv.TraceID),
		)
	}
	if f, ok := ctx.Value(fieldsKey{}).(fields); ok {
		// A field the line already has keeps the line's value, unless that
		// is an empty string (a writer that did not know it, such as an
		// orientation line's trace_id): then the context's fills it in.
		present, empty := map[string]bool{}, false
		r.Attrs(func(a slog.Attr) bool {
			if a.Value.Kind() == slog.KindString && a.Value.String() == "" && Field(ctx, a.Key) != "" {
				empty = true
			} else {
				present[a.Key] = true
			}
			return true
		})
		if empty {
			nr := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
			r.Attrs(func(a slog.Attr) bool {
				if present[a.Key] || a.Value.Kind() != slog.KindString || a.Value.String() != "" {
					nr.AddAttrs(a)
				}
				return true
			})
			r = nr
		}
		for _, kv := range f {
			if !present[kv[0]] {
				r.AddAttrs(slog.String(kv[0], kv[1]))
			}
		}
	}
	return h.Handler.Handle(ctx, r)
}

// KeyTraceID is the correlation key of a wave's trace: the X-Ray trace id
// (its Root) on AWS, one derived from the wave id in ora dev (TraceIDOf).
const KeyTraceID = "trace_id"

// TraceIDOf returns the trace id of a stage's call: the Root of the X-Ray
// trace header the Lambda runtime gives (Root=1-...;Parent=...;Sampled=1),
// else, outside Lambda, an id in X-Ray's form derived from the wave id, so
// every line of one wave carries the same one in both homes.
func TraceIDOf(xrayHeader, waveID string) string {
	for _, part := range strings.Split(xrayHeader, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "Root="); ok {
			return v
		}
	}
	if xrayHeader != "" && !strings.Contains(xrayHeader, "=") {
		return xrayHeader
	}
	if waveID == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(waveID))
	return "1-" + hex.EncodeToString(sum[:4]) + "-" + hex.EncodeToString(sum[4:16])
}

func (h contextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return contextHandler{h.Handler.WithAttrs(as), h.secrets}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{h.Handler.WithGroup(name), h.secrets}
}

// Invocation is what the Lambda runtime tells a function about one call.
type Invocation struct {
	FunctionName string
	RequestID    string
	TraceID      string
	ColdStart    bool
}

type invocationKey struct{}

// WithInvocation returns ctx carrying inv: every line logged with it has
// cold_start, function_name, function_request_id and xray_trace_id.
func WithInvocation(ctx context.Context, inv Invocation) context.Context {
	return context.WithValue(ctx, invocationKey{}, inv)
}

type fieldsKey struct{}

// fields are ordered key/value pairs; later values of a key replace earlier.
type fields [][2]string

// WithFields returns ctx carrying the correlation keys kv (key, value, key,
// value, ...); empty values are ignored. Lines logged with ctx carry them.
func WithFields(ctx context.Context, kv ...string) context.Context {
	old, _ := ctx.Value(fieldsKey{}).(fields)
	f := append(fields(nil), old...)
	for i := 0; i+1 < len(kv); i += 2 {
		k, v := kv[i], kv[i+1]
		if v == "" {
			continue
		}
		replaced := false
		for j := range f {
			if f[j][0] == k {
				f[j][1], replaced = v, true
			}
		}
		if !replaced {
			f = append(f, [2]string{k, v})
		}
	}
	return context.WithValue(ctx, fieldsKey{}, f)
}

// Field returns the correlation key k carried by ctx, or "".
func Field(ctx context.Context, k string) string {
	f, _ := ctx.Value(fieldsKey{}).(fields)
	for _, kv := range f {
		if kv[0] == k {
			return kv[1]
		}
	}
	return ""
}
