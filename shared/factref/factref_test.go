package factref

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
)

// TestSplitJoin splits bodies as the fetch step and Compile write them and
// joins them back: the bytes come back exactly, references replace only the
// values of "normalized" keys of MinBytes or more, and a missing body is
// named.
func TestSplitJoin(t *testing.T) {
	long := strings.Repeat("the output of a recent action, ", 6)
	tests := []struct {
		name string
		kind ora.EntryKind
		body string
		refs int
	}{
		{"two facts", ora.KindObservedFact, `{"facts":[{"id":"a","normalized":{"x":"` + long + `"}},{"id":"b","normalized":["` + long + `"]}]}`, 2},
		{"a short body stays", ora.KindObservedFact, `{"facts":[{"id":"a","normalized":{"x":1}}]}`, 0},
		{"a nested key is inside its value", ora.KindOrientationPacket, `{"bands":[{"facts":[{"normalized":{"normalized":{"x":"` + long + `"}}}]}]}`, 1},
		{"a string that reads like the key", ora.KindObservedFact, `{"facts":[{"normalized":"` + long + `,\"normalized\":{\"no\":1}"}]}`, 1},
		{"another kind keeps its body", ora.KindSignalReceived, `{"normalized":{"x":"` + long + `"}}`, 0},
		{"malformed JSON keeps its body", ora.KindObservedFact, `{"normalized":{"x":"` + long, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row, bodies := Split(tt.kind, []byte(tt.body))
			if len(bodies) != tt.refs || len(Digests(row)) != tt.refs {
				t.Fatalf("Split: %d bodies, %d references; want %d", len(bodies), len(Digests(row)), tt.refs)
			}
			if tt.refs == 0 {
				if string(row) != tt.body {
					t.Errorf("a body without references changed: %q", row)
				}
				return
			}
			byDigest := map[string][]byte{}
			for _, b := range bodies {
				if ora.Digest(b.Bytes) != b.Digest || len(b.Bytes) < MinBytes {
					t.Errorf("body %s: digest or size (%d bytes) wrong", b.Digest, len(b.Bytes))
				}
				byDigest[b.Digest] = b.Bytes
			}
			if !HasRefs(row) || len(row) >= len(tt.body) {
				t.Errorf("stored form of %d bytes for a body of %d, references %v", len(row), len(tt.body), HasRefs(row))
			}
			got, missing := Join(row, func(d string) []byte { return byDigest[d] })
			if missing != "" || !bytes.Equal(got, []byte(tt.body)) {
				t.Errorf("Join = %q, missing %q; want the body as written", got, missing)
			}
			gone := bodies[0].Digest
			delete(byDigest, gone)
			if got, missing := Join(row, func(d string) []byte { return byDigest[d] }); got != nil || missing != gone {
				t.Errorf("Join without %s = %d bytes, missing %q; want none, naming it", gone, len(got), missing)
			}
		})
	}
}
