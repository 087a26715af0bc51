package reason

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/ora"
)

// BatchPayload is the payload of a batch run: each signal's typed program
// payload (SafeOPSDecisionResult, ...) by signal id.
type BatchPayload map[string]any

// payloadKind is what a run's decision payload is: one program payload, or
// one per signal of a batch.
type payloadKind struct {
	program ora.ProgramID
	ids     []string // the batch's signal ids; nil for one signal
	// decision is the program's payload schema (the bridge's, built from
	// its action catalogue for SafeOPSDecision).
	decision string
	// toolCalls: the envelope allows tools, so the observation has
	// tool_calls.
	toolCalls bool
}

func payloadFor(program ora.ProgramID, in Input, decision string, tools bool) payloadKind {
	pk := payloadKind{program: program, decision: decision, toolCalls: tools}
	for _, x := range in.Batch {
		pk.ids = append(pk.ids, x.Signal.ID)
	}
	return pk
}

// decisionSchema is the schema of the decision field. A batch's is the same
// for every batch: the signals are named by their number in the prompt, not
// by an enum of their ids, so Bedrock compiles one grammar for all batches;
// decode checks the numbers and that each signal is decided once.
func (p payloadKind) decisionSchema() string {
	if p.ids == nil {
		return p.decision
	}
	decision, defs := splitDefs(p.decision)
	return withDefs(`{"type":"object","additionalProperties":false,"required":["decisions"],"properties":{
"decisions":{"type":"array","description":"one decision per signal of the batch","items":{"type":"object","additionalProperties":false,"required":["signal","decision"],"properties":{
"signal":{"type":"integer","description":"the signal's number in the batch (SIGNAL 1, SIGNAL 2, ...)"},
"decision":`+decision+`}}}}}`, defs)
}

// schema is the record_observation input schema.
func (p payloadKind) schema() string {
	return string(observationSchemaWith(p.decisionSchema(), p.toolCalls))
}

func (p payloadKind) tools() []bedrock.Tool {
	what := fmt.Sprintf("the %s decision it supports", p.program)
	if p.ids != nil {
		what = fmt.Sprintf("one %s decision for each of the %d signals", p.program, len(p.ids))
	}
	return []bedrock.Tool{{
		Name:        ObservationTool,
		Description: "Record this stage's observation and " + what + ".",
		Schema:      json.RawMessage(p.schema()),
		Strict:      true,
	}}
}

// decode validates and decodes a decision payload: the program's typed
// payload, or a BatchPayload naming every signal of the batch exactly once.
func (p payloadKind) decode(raw json.RawMessage) (any, error) {
	if p.ids == nil {
		return decodePayload(p.program, p.decision, raw)
	}
	if err := validateJSON(p.decisionSchema(), raw); err != nil {
		return nil, ora.Invalid("decision", "batch: %v", err)
	}
	var in struct {
		Decisions []struct {
			Signal   int             `json:"signal"`
			Decision json.RawMessage `json:"decision"`
		} `json:"decisions"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, ora.Invalid("decision", "batch: %v", err)
	}
	out := BatchPayload{}
	for _, d := range in.Decisions {
		if d.Signal < 1 || d.Signal > len(p.ids) {
			return nil, ora.Invalid("decision", "batch: signal %d is not in the batch of %d", d.Signal, len(p.ids))
		}
		id := p.ids[d.Signal-1]
		if _, dup := out[id]; dup {
			return nil, ora.Invalid("decision", "batch: signal %d (%s) decided twice", d.Signal, id)
		}
		v, err := decodePayload(p.program, p.decision, d.Decision)
		if err != nil {
			return nil, ora.Invalid("decision", "batch: signal %d (%s): %v", d.Signal, id, err)
		}
		out[id] = v
	}
	var missing []string
	for _, id := range p.ids {
		if _, ok := out[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, ora.Invalid("decision", "batch: no decision for %s", strings.Join(missing, ", "))
	}
	return out, nil
}
