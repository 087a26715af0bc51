package observe

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"regexp"
	"sort"

	"github.com/ora-runtime/ora/shared/ora"
)

// redactRaw returns raw with every value of secrets replaced by its marker
// (ora.Marker), and the names of the values it replaced; raw itself and no
// names when it holds none. A webhook delivery is redacted field by field
// (redactDelivery); every other raw form is JSON, redacted as bytes. The
// signal is then normalized from what this returns, so the stored raw
// normalizes again to the stored signal (the witness's check).
func redactRaw(secrets *ora.Secrets, kind ora.SourceKind, raw []byte) ([]byte, []string) {
	if secrets.Len() == 0 {
		return raw, nil
	}
	if kind != ora.SourceWebhook {
		out := secrets.Redact(raw)
		return out, newMarkers(raw, out)
	}
	var d Delivery
	if json.Unmarshal(raw, &d) != nil {
		return raw, nil // normalize reports it
	}
	if out, names := redactDelivery(secrets, d); out != nil {
		return out, names
	}
	return raw, nil
}

// redactDelivery returns the encoding of d with every value of secrets
// replaced by its marker, and the names replaced; nil when d holds none.
// The body is base64 in the encoded delivery, where no value would be
// found: it is redacted as bytes and, a form body, field by field after
// URL-decoding; so are the kept headers.
func redactDelivery(secrets *ora.Secrets, d Delivery) ([]byte, []string) {
	if secrets.Len() == 0 {
		return nil, nil
	}
	body, names := redactBody(secrets, d.header("Content-Type"), d.Body)
	changed := !bytes.Equal(body, d.Body)
	d.Body = body
	var header map[string]string
	for k, v := range d.Header {
		if r := secrets.RedactString(v); r != v {
			if header == nil {
				header = maps.Clone(d.Header)
			}
			header[k], changed = r, true
			names = append(names, newMarkers([]byte(v), []byte(r))...)
		}
	}
	if !changed {
		return nil, nil
	}
	if header != nil {
		d.Header = header
	}
	out, err := json.Marshal(d)
	if err != nil {
		return nil, nil
	}
	return out, uniq(names)
}

// redactBody redacts a webhook body: its bytes, and a form body's fields
// once URL-decoded (a value holding '+', '/' or '%' is escaped there). A
// form that changed is encoded again.
func redactBody(secrets *ora.Secrets, contentType string, body []byte) ([]byte, []string) {
	out := secrets.Redact(body)
	names := newMarkers(body, out)
	if !isForm(contentType) {
		return out, names
	}
	form, err := url.ParseQuery(string(out))
	if err != nil {
		return out, names
	}
	changed := false
	for k, vs := range form {
		for i, v := range vs {
			if r := secrets.RedactString(v); r != v {
				vs[i], changed = r, true
				names = append(names, newMarkers([]byte(v), []byte(r))...)
			}
		}
		form[k] = vs
	}
	if !changed {
		return out, names
	}
	return []byte(form.Encode()), names
}

var markerRE = regexp.MustCompile(`\[redacted:([^\]]+)\]`)

// newMarkers returns the names of the markers after holds more often than
// before (what redaction put there, not markers the input already held).
func newMarkers(before, after []byte) []string {
	if len(before) == len(after) && bytes.Equal(before, after) {
		return nil
	}
	count := func(b []byte) map[string]int {
		m := map[string]int{}
		for _, sub := range markerRE.FindAllSubmatch(b, -1) {
			m[string(sub[1])]++
		}
		return m
	}
	was, now := count(before), count(after)
	var names []string
	for name, n := range now {
		if n > was[name] {
			names = append(names, name)
		}
	}
	return uniq(names)
}

// uniq sorts names and drops repeats.
func uniq(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	out := names[:1]
	for _, n := range names[1:] {
		if n != out[len(out)-1] {
			out = append(out, n)
		}
	}
	return out
}
