package reason

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/ora-runtime/ora/shared/ora"
)

// enumKeys are payload keys whose scalar values are kept in a fingerprint:
// they name what happened, not which instance it happened to.
var enumKeys = map[string]bool{
	"action": true, "type": true, "event": true, "event_type": true, "status": true,
	"state": true, "kind": true, "severity": true, "level": true, "ref_type": true,
}

// Fingerprint returns the pattern-cache key of a signal for a program: the
// sha256 of a normalized form made of
//   - the program id;
//   - the source's type, name, provider, event type, job name, schedule,
//     bucket, table and event (not the object path, which names an instance);
//   - the payload's shape: every key path with its JSON type, arrays collapsed
//     to one element shape, sorted;
//   - the string, number and boolean values under the keys action, type,
//     event, event_type, status, state, kind, severity, level and ref_type
//     (at any depth), which name what happened.
//
// Ids, timestamps, free text and other instance values are left out, so two
// signals of the same kind share a fingerprint.
func Fingerprint(program ora.ProgramID, s ora.NormalizedSignal) string {
	src := s.Source
	src.Path = ""
	var payload any
	_ = json.Unmarshal(s.Payload, &payload)
	var lines []string
	shape("$", payload, &lines)
	sort.Strings(lines)
	lines = dedupe(lines)
	b, _ := json.Marshal(struct {
		Program ora.ProgramID `json:"program"`
		Source  ora.Source    `json:"source"`
		Shape   []string      `json:"shape"`
	}{program, src, lines})
	return ora.Digest(b)
}

// envelopeFingerprint keys the cache for an envelope without a signal: the
// program, goal, kernel mode and tools allowed.
func envelopeFingerprint(env ora.ReasoningEnvelope) string {
	tools := append([]string(nil), env.ToolsAllowed...)
	sort.Strings(tools)
	b, _ := json.Marshal([]any{env.ProgramID, strings.TrimSpace(env.Goal), env.KernelStateRef.Mode, tools})
	return ora.Digest(b)
}

func shape(path string, v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		*out = append(*out, path+":object")
		for k, c := range v {
			p := path + "." + k
			if enumKeys[strings.ToLower(k)] {
				switch c.(type) {
				case string, float64, bool:
					b, _ := json.Marshal(c)
					*out = append(*out, p+"="+string(b))
					continue
				}
			}
			shape(p, c, out)
		}
	case []any:
		*out = append(*out, path+":array")
		for _, c := range v {
			shape(path+"[]", c, out)
		}
	case string:
		*out = append(*out, path+":string")
	case float64:
		*out = append(*out, path+":number")
	case bool:
		*out = append(*out, path+":boolean")
	case nil:
		*out = append(*out, path+":null")
	}
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
