package act

import "encoding/json"

// Description is an action type's entry in the catalogue the reasoner shows a
// model and builds its decision schema from: what the action does, the JSON
// Schema of its parameters (in the subset Bedrock's strict tool use accepts,
// keys in the order a model should fill them), and the bounds the
// configuration puts on it, in words (hosts, prefixes, connections,
// functions, tools).
type Description struct {
	Type    string `json:"type"`
	Summary string `json:"summary"`
	// Parameters is a JSON Schema object, kept as written so key order
	// survives (a Go map would sort it).
	Parameters json.RawMessage `json:"parameters"`
	// Bounds lists the configured limits in words, one per line.
	Bounds []string `json:"bounds,omitempty"`
	// SideEffect is true when the action changes something outside ora's
	// ledger (a request, a message, a write, an invocation).
	SideEffect bool `json:"side_effect"`
}

// Describer is implemented by actions that can describe themselves to a
// model. An action that does not is left out of the catalogue.
type Describer interface {
	Describe() Description
}

// Catalogue returns the descriptions of the registered actions that
// implement Describer, sorted by type.
func (r *Registry) Catalogue() []Description {
	var out []Description
	for _, t := range r.Types() {
		a, _ := r.Lookup(t)
		if d, ok := a.(Describer); ok {
			desc := d.Describe()
			desc.Type = t
			out = append(out, desc)
		}
	}
	return out
}
