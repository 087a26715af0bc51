package ora

import (
	"encoding/json"
	"strings"
)

// AppPatch is an app-level fix an operator supplies with a resume, as the
// stage that runs again receives it (the state machine hands it over as
// app_patch): Kind input | mapping | spec, Target what it replaces, Value the
// new input, mapping or spec, Digest the sha256 the resume recorded it under.
type AppPatch struct {
	Kind   string          `json:"kind"`
	Target string          `json:"target"`
	Value  json.RawMessage `json:"value"`
	Digest string          `json:"digest,omitempty"`
}

// Sum returns the patch's sha256: the digest of its JSON encoding with
// Digest empty. A resume records a patch with its Sum as Digest; a stage
// that applies a patch refuses one whose Digest is not its Sum.
func (p AppPatch) Sum() string {
	p.Digest = ""
	body, err := json.Marshal(p)
	if err != nil {
		return "" // Value is not JSON: no patch has this sum
	}
	return Digest(body)
}

// PatchInput is the kind of app patch that replaces one field of the
// signal's payload.
const PatchInput = "input"

// ApplyInput returns payload with the field at the input patch's Target (a
// dotted path of object keys, "issue.title") replaced by Value. The field
// must already be in the payload: a patch corrects a field, it does not add
// one. Errors: EINVALID naming patch.target.
func (p AppPatch) ApplyInput(payload json.RawMessage) (json.RawMessage, error) {
	if p.Kind != PatchInput {
		return nil, Invalid("patch.kind", "%q is not an input patch", p.Kind)
	}
	var doc any
	if err := json.Unmarshal(payload, &doc); err != nil {
		return nil, Invalid("patch.target", "the signal's payload is not JSON: %v", err)
	}
	var value any
	if err := json.Unmarshal(p.Value, &value); err != nil {
		return nil, Invalid("patch.value", "is not JSON: %v", err)
	}
	keys := strings.Split(p.Target, ".")
	node := doc
	for i, k := range keys {
		obj, ok := node.(map[string]any)
		if !ok {
			return nil, Invalid("patch.target", "%s is not an object in the signal's payload", strings.Join(keys[:i], "."))
		}
		next, ok := obj[k]
		if !ok {
			return nil, Invalid("patch.target", "the signal's payload has no field %s", strings.Join(keys[:i+1], "."))
		}
		if i == len(keys)-1 {
			obj[k] = value
			break
		}
		node = next
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, Errorf(EINTERNAL, "patch %s: %v", p.Target, err)
	}
	return out, nil
}
