package reason

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/ora"
)

// Policy is what the operator allows a model decision: its permissions come
// from here, never from the model. The model proposes an action, a tier, a
// scope and a confidence; the Reasoner keeps the action only when the
// matching rule permits its type, raises the tier to the rule's minimum,
// intersects the scope with the rule's and caps the confidence at the
// rule's maximum.
type Policy struct {
	// Instructions is the operator's policy in words, shown to the model
	// in the system prompt (what to do, what never to do).
	Instructions string `yaml:"instructions,omitempty" json:"instructions,omitempty"`
	// Rules is the policy table. The first rule matching a signal (its
	// source, event type and the program) applies; none matching: Default.
	Rules []PolicyRule `yaml:"rules,omitempty" json:"rules,omitempty"`
}

// PolicyRule is one row of the policy table.
type PolicyRule struct {
	// Name names the rule in decisions' reasoning and in logs.
	Name string `yaml:"name" json:"name"`
	// Source matches a signal's source name (e.g. "github") or kind
	// (webhook, schedule, object, table); empty matches any.
	Source string `yaml:"source,omitempty" json:"source,omitempty"`
	// EventType matches the signal's event type (a webhook's event type or
	// a table's event), as a glob ("issues.*"); empty matches any.
	EventType string `yaml:"event_type,omitempty" json:"event_type,omitempty"`
	// Program matches the reasoning program; empty matches any.
	Program ora.ProgramID `yaml:"program,omitempty" json:"program,omitempty"`
	// Actions lists the action types a model decision may carry; empty:
	// none only. none is always permitted.
	Actions []string `yaml:"actions,omitempty" json:"actions,omitempty"`
	// MinTier is the lowest tier a side-effecting decision runs at
	// (default 2: the safety validator always looks); none runs at 1.
	MinTier int `yaml:"min_tier,omitempty" json:"min_tier,omitempty"`
	// MaxConfidence caps a model decision's confidence (default
	// DefaultMaxConfidence: a human approves every side effect). Above 0.5
	// a decision runs without waiting for a human, above 0.8 without review.
	MaxConfidence *float64 `yaml:"max_confidence,omitempty" json:"max_confidence,omitempty"`
	// ForbiddenPaths are added to every decision's forbidden paths.
	ForbiddenPaths []string `yaml:"forbidden_paths,omitempty" json:"forbidden_paths,omitempty"`
}

// Policy defaults.
const (
	// DefaultMinTier is the minimum tier of a side-effecting model decision.
	DefaultMinTier = 2
	// DefaultMaxConfidence caps a model decision whose rule sets no
	// maximum: below 0.5, so a human approves it before anything runs.
	DefaultMaxConfidence = HumanOnlyConfidence
)

// DefaultRule applies to signals no rule matches: only none, a human
// approves anything else the model proposes (it is refused and recorded).
var DefaultRule = PolicyRule{Name: "default"}

// Validate checks the table; the error names the first bad rule.
func (p Policy) Validate() error {
	for i, r := range p.Rules {
		field := fmt.Sprintf("reason.policy.rules[%d]", i)
		if r.Name == "" {
			return ora.Invalid(field+".name", "required")
		}
		if r.EventType != "" {
			if _, err := path.Match(r.EventType, ""); err != nil {
				return ora.Invalid(field+".event_type", "%q is not a glob: %v", r.EventType, err)
			}
		}
		if r.MinTier != 0 && (r.MinTier < 1 || r.MinTier > 3) {
			return ora.Invalid(field+".min_tier", "%d is outside 1..3", r.MinTier)
		}
		if c := r.MaxConfidence; c != nil && (math.IsNaN(*c) || *c < 0 || *c > 1) {
			return ora.Invalid(field+".max_confidence", "%v is outside 0..1", *c)
		}
	}
	return nil
}

// Permission is what the policy allows one signal's decision.
type Permission struct {
	// Rule names the rule that applied.
	Rule string `json:"rule"`
	// Actions are the permitted action types (none always among them), in
	// catalogue order.
	Actions []string `json:"permitted_actions"`
	// MinTier is the minimum tier of a side-effecting action.
	MinTier int `json:"min_tier"`
	// MaxConfidence caps the decision's confidence.
	MaxConfidence float64 `json:"max_confidence"`
	// ForbiddenPaths are added to the decision's.
	ForbiddenPaths []string `json:"forbidden_paths,omitempty"`
}

// Allows reports whether typ is permitted.
func (p Permission) Allows(typ string) bool { return slices.Contains(p.Actions, typ) }

// eventType is what a rule's event_type matches.
func eventType(s ora.Source) string {
	if s.EventType != "" {
		return s.EventType
	}
	return s.Event
}

func (r PolicyRule) matches(sig ora.NormalizedSignal, program ora.ProgramID) bool {
	if r.Source != "" && r.Source != sig.Source.Name && r.Source != string(sig.Source.Type) {
		return false
	}
	if r.EventType != "" {
		if ok, _ := path.Match(r.EventType, eventType(sig.Source)); !ok {
			return false
		}
	}
	return r.Program == "" || r.Program == program
}

// For returns what the policy permits a decision of program about sig:
// the first matching rule (or DefaultRule) with its types limited to the
// catalogue's, commitment.* taken out for table signals (a commitment is a
// table change: a decision about one must not make another), none always
// in.
func (p Policy) For(sig ora.NormalizedSignal, program ora.ProgramID, catalogue []act.Description) Permission {
	rule := DefaultRule
	for _, r := range p.Rules {
		if r.matches(sig, program) {
			rule = r
			break
		}
	}
	perm := Permission{Rule: rule.Name, MinTier: rule.MinTier, MaxConfidence: DefaultMaxConfidence, ForbiddenPaths: rule.ForbiddenPaths}
	if perm.MinTier == 0 {
		perm.MinTier = DefaultMinTier
	}
	if rule.MaxConfidence != nil {
		perm.MaxConfidence = *rule.MaxConfidence
	}
	for _, d := range catalogue {
		t := d.Type
		switch {
		case t == act.TypeNone:
		case !slices.Contains(rule.Actions, t):
			continue
		case sig.Source.Type == ora.SourceTable && strings.HasPrefix(t, "commitment."):
			continue
		}
		perm.Actions = append(perm.Actions, t)
	}
	if !perm.Allows(act.TypeNone) {
		perm.Actions = append(perm.Actions, act.TypeNone)
	}
	return perm
}

// sideEffect reports whether typ changes something (unknown types do).
func sideEffect(typ string, catalogue []act.Description) bool {
	for _, d := range catalogue {
		if d.Type == typ {
			return d.SideEffect
		}
	}
	return true
}

// route applies perm to a proposed decision: it returns the decision ora
// records. ABORT, a none first action, or any action whose type the policy
// does not permit or lies outside the model's own allowed_operations for it
// makes the whole decision a none decision (recorded, never runnable as
// proposed, even by an approval); a refused type (or follow-ups after none)
// is escalated (confidence below 0.5) so a human sees what was refused. A
// permitted decision keeps its actions and their parameters, runs at least
// at the policy's tier when any action has a side effect (then it also
// carries at most the policy's confidence), and its scope is the model's
// intersected with the policy's: allowed operations the actions' types
// alone, forbidden paths every action's and the policy's.
func route(d ora.ReasonerDecision, p SafeOPSDecisionResult, perm Permission, catalogue []act.Description) ora.ReasonerDecision {
	a := p.Action
	none := func(reason string, conf float64) ora.ReasonerDecision {
		params, _ := json.Marshal(act.NoneParams{Reason: reason})
		d.ActionType, d.Parameters, d.Actions = act.TypeNone, params, nil
		d.Scope = ora.Scope{AllowedOperations: []string{act.TypeNone}}
		d.Tier, d.Confidence = 1, math.Min(d.Confidence, conf)
		d.Reasoning = reason + "\n\n" + d.Reasoning
		return d
	}
	proposed := fmt.Sprintf("%s %s", a.Type, a.Parameters)
	for _, f := range p.Then {
		proposed += fmt.Sprintf(", then %s %s (after %v)", f.Action.Type, f.Action.Parameters, f.DependsOn)
	}
	switch {
	case p.AllowedAction == "ABORT":
		return none(fmt.Sprintf("ABORT: the model judged it unsafe to proceed; nothing is done (it had proposed %s).", proposed), 1)
	case a.Type == act.TypeNone && len(p.Then) > 0:
		return none(fmt.Sprintf("Refused: the model proposed none followed by further actions; nothing is done. The model proposed %s.", proposed), HumanOnlyConfidence)
	case a.Type == act.TypeNone:
		var np act.NoneParams
		_ = json.Unmarshal(a.Parameters, &np)
		return none("Nothing to do: "+np.Reason, 1)
	}
	var types, forbidden []string
	effect := false
	for i, x := range p.proposals() {
		switch {
		case !perm.Allows(x.Type):
			return none(fmt.Sprintf("Refused: the policy (rule %q) does not permit %s for this signal (permitted: %s; action %d); nothing is done. The model proposed %s.",
				perm.Rule, x.Type, strings.Join(perm.Actions, ", "), i, proposed), HumanOnlyConfidence)
		case !slices.Contains(x.AllowedOperations, x.Type):
			return none(fmt.Sprintf("Refused: the model proposed %s %s outside its own allowed_operations %v (action %d); nothing is done. The model proposed %s.",
				x.Type, x.Parameters, x.AllowedOperations, i, proposed), HumanOnlyConfidence)
		}
		types = union(types, []string{x.Type})
		forbidden = union(forbidden, x.ForbiddenPaths)
		effect = effect || sideEffect(x.Type, catalogue)
	}
	d.Scope = ora.Scope{AllowedOperations: types, ForbiddenPaths: union(forbidden, perm.ForbiddenPaths)}
	if effect && d.Tier < perm.MinTier {
		d.Reasoning = fmt.Sprintf("Tier raised from %d to %d by the policy (rule %q).\n\n%s", d.Tier, perm.MinTier, perm.Rule, d.Reasoning)
		d.Tier = perm.MinTier
	}
	if effect && d.Confidence > perm.MaxConfidence {
		d.Reasoning = fmt.Sprintf("Confidence capped from %.2f at %.2f by the policy (rule %q).\n\n%s", d.Confidence, perm.MaxConfidence, perm.Rule, d.Reasoning)
		d.Confidence = perm.MaxConfidence
	}
	return d
}

// union returns a's items followed by b's that a lacks.
func union(a, b []string) []string {
	out := append([]string{}, a...)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
