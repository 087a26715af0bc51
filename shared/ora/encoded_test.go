package ora

import (
	"bytes"
	"testing"
)

// A body NewEntry encoded is known to be JSON; every other body is scanned,
// before and after, so a changed byte is still refused.
func TestValidateKnowsEncodedBodies(t *testing.T) {
	e, err := NewEntry("sig-enc", KindObservedFact, "q", map[string]any{"n": 1, "s": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Validate(); err != nil {
		t.Fatalf("encoded entry: %v", err)
	}
	broken := e
	broken.Body = bytes.Replace(bytes.Clone(e.Body), []byte(`"n":1`), []byte(`"n":}`), 1)
	broken.Digest = Digest(broken.Body)
	cases := []struct {
		name  string
		e     Entry
		field string // "" when valid
	}{
		{"encoded", e, ""},
		{"one byte changed, digest updated", broken, "body"},
		{"body changed, digest kept", Entry{SignalID: e.SignalID, Kind: e.Kind, Body: []byte(`{"n":2,"s":"x"}`), Digest: e.Digest, CreatedAt: e.CreatedAt}, "digest"},
		{"written by hand", Entry{SignalID: "s", Kind: KindObservedFact, Body: []byte(` {"a": [1]} `), CreatedAt: e.CreatedAt}, ""},
		{"not JSON by hand", Entry{SignalID: "s", Kind: KindObservedFact, Body: []byte(`{"a":`), CreatedAt: e.CreatedAt}, "body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.e.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || ErrorCode(err) != EINVALID || !bytes.Contains([]byte(err.Error()), []byte(tc.field)) {
				t.Fatalf("Validate = %v, want EINVALID naming %s", err, tc.field)
			}
		})
	}
}
