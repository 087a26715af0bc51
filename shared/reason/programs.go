package reason

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/ora"
)

// SafeOPSDecisionResult is SafeOPSDecision's payload: is it safe to proceed
// with the proposed operation? Action is the operation itself and Then the
// follow-up actions, which the Reasoner turns into an ora.ReasonerDecision.
type SafeOPSDecisionResult struct {
	AllowedAction      string          `json:"allowed_action"` // PROCEED | ABORT | WARN
	SafetyCheckSummary string          `json:"safety_check_summary"`
	Action             *ActionProposal `json:"action"`
	Then               []FollowUp      `json:"then"`
}

// FollowUp is an action after a SafeOPSDecision's first: DependsOn numbers
// the earlier actions it waits for (0 is Action, 1 the first of Then, ...).
type FollowUp struct {
	Action    *ActionProposal `json:"action"`
	DependsOn []int           `json:"depends_on"`
}

// proposals returns the decision's actions in order: Action, then Then's.
func (p SafeOPSDecisionResult) proposals() []*ActionProposal {
	out := []*ActionProposal{p.Action}
	for _, f := range p.Then {
		out = append(out, f.Action)
	}
	return out
}

// plan returns the decision's actions as the actor runs them: nil for one
// action, else every action with its depends_on.
func (p SafeOPSDecisionResult) plan() []ora.Action {
	if len(p.Then) == 0 {
		return nil
	}
	out := []ora.Action{{Type: p.Action.Type, Parameters: p.Action.Parameters}}
	for _, f := range p.Then {
		out = append(out, ora.Action{Type: f.Action.Type, Parameters: f.Action.Parameters, DependsOn: f.DependsOn})
	}
	return out
}

// ActionProposal is the operation a SafeOPSDecision judges.
type ActionProposal struct {
	Type              string          `json:"type"`
	Parameters        json.RawMessage `json:"parameters,omitempty"`
	Tier              int             `json:"tier"`
	AllowedOperations []string        `json:"allowed_operations"`
	ForbiddenPaths    []string        `json:"forbidden_paths,omitempty"`
	AuthorType        ora.AuthorType  `json:"author_type,omitempty"`
}

// checkProposal checks the i-th action of a SafeOPSDecision (0: action,
// i: then[i-1].action).
func checkProposal(a *ActionProposal, i int) error {
	field := "action"
	if i > 0 {
		field = fmt.Sprintf("then[%d].action", i-1)
	}
	switch {
	case a == nil:
		return fmt.Errorf("%s is required", field)
	case a.Type == "":
		return fmt.Errorf("%s.type is required", field)
	case a.Tier < 1 || a.Tier > 3:
		return fmt.Errorf("%s.tier %d is outside 1..3", field, a.Tier)
	case len(a.AllowedOperations) == 0:
		return fmt.Errorf("%s.allowed_operations needs at least one operation", field)
	case a.AuthorType != ora.AuthorArchitect && a.AuthorType != ora.AuthorAuditor:
		return fmt.Errorf("%s.author_type %q is not architect or auditor", field, a.AuthorType)
	case len(a.Parameters) > 0 && !strings.HasPrefix(strings.TrimSpace(string(a.Parameters)), "{"):
		return fmt.Errorf("%s.parameters must be a JSON object", field)
	}
	return nil
}

// OPSBlockGeneratorResult is OPSBlockGenerator's payload: an atomic sequence
// of commands.
type OPSBlockGeneratorResult struct {
	OPSBlock        []string `json:"ops_block"`
	ComplexityScore int      `json:"complexity_score"` // 1..10
	RiskAnalysis    string   `json:"risk_analysis"`
}

// GuardFailureInterpreterResult is GuardFailureInterpreter's payload: why a
// guard failed and how to fix it.
type GuardFailureInterpreterResult struct {
	RootCause       string `json:"root_cause"`
	RemediationPlan string `json:"remediation_plan"`
	IsTransient     bool   `json:"is_transient"`
}

// PhaseTransitionValidatorResult is PhaseTransitionValidator's payload.
type PhaseTransitionValidatorResult struct {
	TransitionStatus string   `json:"transition_status"` // READY | NOT_READY
	MissingCriteria  []string `json:"missing_criteria"`
}

// program is a typed reasoning program: its goal, its payload's JSON Schema
// and a decoder that validates the payload.
type program struct {
	goal   string
	schema string
	decode func(json.RawMessage) (any, error)
}

var programs = map[ora.ProgramID]program{
	ora.ProgramSafeOPSDecision: {
		goal: "Determine whether it is safe to proceed with the operation, and propose it.",
		// The standard actions with no configured bounds; a Bridge builds
		// its own from its catalogue (Options.Catalogue).
		schema: SafeOPSSchema(act.StandardCatalogue(act.Config{})),
		decode: func(raw json.RawMessage) (any, error) {
			var p SafeOPSDecisionResult
			if err := strictDecode(raw, &p); err != nil {
				return nil, err
			}
			switch p.AllowedAction {
			case "PROCEED", "ABORT", "WARN":
			default:
				return nil, fmt.Errorf("allowed_action %q is not PROCEED, ABORT or WARN", p.AllowedAction)
			}
			for i, a := range p.proposals() {
				if err := checkProposal(a, i); err != nil {
					return nil, err
				}
			}
			if err := ora.CheckDependsOn(p.plan()); err != nil {
				return nil, fmt.Errorf("then: %v", err)
			}
			return p, nil
		},
	},
	ora.ProgramOPSBlockGenerator: {
		goal: "Generate a valid OPS block: an atomic sequence of commands.",
		schema: `{"type":"object","additionalProperties":false,"required":["ops_block","complexity_score","risk_analysis"],"properties":{
"ops_block":{"type":"array","items":{"type":"string","minLength":1},"minItems":1},
"complexity_score":{"type":"integer","minimum":1,"maximum":10},
"risk_analysis":{"type":"string","minLength":1}}}`,
		decode: func(raw json.RawMessage) (any, error) {
			var p OPSBlockGeneratorResult
			if err := strictDecode(raw, &p); err != nil {
				return nil, err
			}
			if len(p.OPSBlock) == 0 {
				return nil, fmt.Errorf("ops_block needs at least one command")
			}
			if p.ComplexityScore < 1 || p.ComplexityScore > 10 {
				return nil, fmt.Errorf("complexity_score %d is outside 1..10", p.ComplexityScore)
			}
			return p, nil
		},
	},
	ora.ProgramGuardFailureInterpreter: {
		goal: "Analyze why a guard failed and suggest remediation.",
		schema: `{"type":"object","additionalProperties":false,"required":["root_cause","remediation_plan","is_transient"],"properties":{
"root_cause":{"type":"string","minLength":1},
"remediation_plan":{"type":"string","minLength":1},
"is_transient":{"type":"boolean"}}}`,
		decode: func(raw json.RawMessage) (any, error) {
			var p GuardFailureInterpreterResult
			if err := strictDecode(raw, &p); err != nil {
				return nil, err
			}
			if p.RootCause == "" {
				return nil, fmt.Errorf("root_cause is required")
			}
			return p, nil
		},
	},
	ora.ProgramPhaseTransitionValidator: {
		goal: "Verify whether the criteria for moving to the next phase are met.",
		schema: `{"type":"object","additionalProperties":false,"required":["transition_status","missing_criteria"],"properties":{
"transition_status":{"type":"string","enum":["READY","NOT_READY"]},
"missing_criteria":{"type":"array","items":{"type":"string"}}}}`,
		decode: func(raw json.RawMessage) (any, error) {
			var p PhaseTransitionValidatorResult
			if err := strictDecode(raw, &p); err != nil {
				return nil, err
			}
			switch p.TransitionStatus {
			case "READY":
				if len(p.MissingCriteria) > 0 {
					return nil, fmt.Errorf("transition_status READY with missing criteria %v", p.MissingCriteria)
				}
			case "NOT_READY":
			default:
				return nil, fmt.Errorf("transition_status %q is not READY or NOT_READY", p.TransitionStatus)
			}
			return p, nil
		},
	},
}

// DecodePayload validates a program's decision payload against the
// program's JSON Schema (required fields, types, enums, no unknown fields),
// then decodes it into its typed result (SafeOPSDecisionResult, ...). Nothing
// missing is filled in with a default. Errors: EINVALID naming what is wrong.
func DecodePayload(id ora.ProgramID, raw json.RawMessage) (any, error) {
	return decodePayload(id, payloadSchema(id), raw)
}

// decodePayload is DecodePayload against the schema src.
func decodePayload(id ora.ProgramID, src string, raw json.RawMessage) (any, error) {
	p, ok := programs[id]
	if !ok {
		return nil, ora.Invalid("program_id", "%q is not a known program", id)
	}
	if err := validateJSON(src, raw); err != nil {
		return nil, ora.Invalid("decision", "%s: %v", id, err)
	}
	v, err := p.decode(raw)
	if err != nil {
		return nil, ora.Invalid("decision", "%s: %v", id, err)
	}
	return v, nil
}

func strictDecode(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return fmt.Errorf("payload is empty")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("payload: %v", err)
	}
	return nil
}
