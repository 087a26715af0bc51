package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ora-runtime/ora/shared/ora"
)

// The bounds of a rendered body: what the console and `ora trace` show of a
// body, whatever its size or depth. The raw body stays a link away.
const (
	RenderDepth = 32       // levels shown; deeper values become a marker
	RenderBytes = 64 << 10 // bytes of output; the rest is cut with a marker
)

// RenderOptions bounds and filters Render.
type RenderOptions struct {
	MaxDepth int // levels shown (RenderDepth when 0)
	MaxBytes int // bytes of output (RenderBytes when 0)
	// SecretKey reports whether a key's value is shown as Redacted; nil
	// shows every value. The registry of secret values (ora.Secrets) is
	// applied to the rendered text by the caller.
	SecretKey func(key string) bool
}

// Rendering is a body rendered for people.
type Rendering struct {
	Text string
	// Truncated is true when the text stops before the body's end (over
	// MaxBytes) or leaves values out (deeper than MaxDepth).
	Truncated bool
	// Size is the raw body's size in bytes.
	Size int
}

// Render indents JSON two spaces per level, keys in their order, in at most
// MaxDepth levels (a deeper value shows as "… N levels more") and about
// MaxBytes of text, ending "… truncated, N bytes" when cut. It reads the body
// token by token, so neither its depth nor its size costs more than the
// bounds. Text that is not JSON comes back as it is, cut at MaxBytes.
func Render(raw []byte, o RenderOptions) Rendering {
	if o.MaxDepth <= 0 {
		o.MaxDepth = RenderDepth
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = RenderBytes
	}
	out := Rendering{Size: len(raw)}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return out
	}
	r := renderer{dec: json.NewDecoder(bytes.NewReader(trimmed)), o: o}
	r.dec.UseNumber()
	err := r.value(0)
	if errors.Is(err, errFull) {
		return cut(r.buf.String(), o.MaxBytes, len(raw))
	}
	complete := false
	if err == nil {
		_, err = r.dec.Token()
		complete = errors.Is(err, io.EOF) // nothing after the value
	}
	if !complete { // not JSON
		return cut(string(raw), o.MaxBytes, len(raw))
	}
	out.Text, out.Truncated = r.buf.String(), r.elided
	return out
}

// cut returns s bounded to n bytes (on a rune boundary), marked when cut.
func cut(s string, n, size int) Rendering {
	if len(s) <= n {
		return Rendering{Text: s, Size: size}
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	s = s[:n]
	return Rendering{Text: s + fmt.Sprintf("\n… truncated, %d bytes", size), Truncated: true, Size: size}
}

var errFull = errors.New("render: output bound reached")

type renderer struct {
	dec    *json.Decoder
	o      RenderOptions
	buf    strings.Builder
	elided bool
}

func (r *renderer) write(s string) error {
	r.buf.WriteString(s)
	if r.buf.Len() > r.o.MaxBytes {
		return errFull
	}
	return nil
}

func (r *renderer) indent(depth int) error {
	return r.write("\n" + strings.Repeat("  ", depth))
}

// value renders the next value at depth.
func (r *renderer) value(depth int) error {
	tok, err := r.dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return r.scalar(tok)
	}
	if depth >= r.o.MaxDepth {
		levels, err := r.skip()
		if err != nil {
			return err
		}
		r.elided = true
		return r.write(fmt.Sprintf(`"… %d levels more"`, levels))
	}
	open, closer := string(d), "]"
	if d == '{' {
		closer = "}"
	}
	if err := r.write(open); err != nil {
		return err
	}
	n := 0
	for r.dec.More() {
		if n > 0 {
			if err := r.write(","); err != nil {
				return err
			}
		}
		n++
		if err := r.indent(depth + 1); err != nil {
			return err
		}
		if d == '{' {
			tok, err := r.dec.Token()
			if err != nil {
				return err
			}
			key, _ := tok.(string)
			kb, _ := json.Marshal(key)
			if err := r.write(string(kb) + ": "); err != nil {
				return err
			}
			if r.o.SecretKey != nil && r.o.SecretKey(key) {
				if _, err := r.skipValue(); err != nil {
					return err
				}
				if err := r.write(`"` + Redacted + `"`); err != nil {
					return err
				}
				continue
			}
		}
		if err := r.value(depth + 1); err != nil {
			return err
		}
	}
	if _, err := r.dec.Token(); err != nil { // the closing delimiter
		return err
	}
	if n > 0 {
		if err := r.indent(depth); err != nil {
			return err
		}
	}
	return r.write(closer)
}

func (r *renderer) scalar(tok json.Token) error {
	switch v := tok.(type) {
	case nil:
		return r.write("null")
	case bool:
		if v {
			return r.write("true")
		}
		return r.write("false")
	case json.Number:
		return r.write(v.String())
	case string:
		b, _ := json.Marshal(v)
		return r.write(string(b))
	}
	return fmt.Errorf("render: unexpected token %v", tok)
}

// skip reads past the rest of a container whose opening delimiter was just
// read, returning how many levels it held.
func (r *renderer) skip() (int, error) {
	depth, deepest := 1, 1
	for depth > 0 {
		tok, err := r.dec.Token()
		if err != nil {
			return 0, err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
				deepest = max(deepest, depth)
			} else {
				depth--
			}
		}
	}
	return deepest, nil
}

// skipValue reads past the next value.
func (r *renderer) skipValue() (int, error) {
	tok, err := r.dec.Token()
	if err != nil {
		return 0, err
	}
	if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
		return r.skip()
	}
	return 0, nil
}

// ServedDepth is the deepest body the read routes return as it is: far
// deeper than any body ingest accepts (ora.MaxBodyDepth), and far enough
// under JSON decoders' limits (10,000 levels in Go's) that a client decodes
// the answer that wraps it.
const ServedDepth = 512

// bounded returns b, or, when b nests deeper than ServedDepth (a body stored
// before ingest bounded depth), a small object saying so: its size and
// why. The entry's digest still names the stored body.
func bounded(b json.RawMessage) json.RawMessage {
	if ora.Deeper(b, ServedDepth) < 0 {
		return b
	}
	out, _ := json.Marshal(map[string]any{
		"truncated": fmt.Sprintf("nested deeper than %d levels: not served", ServedDepth),
		"bytes":     len(b),
	})
	return out
}
