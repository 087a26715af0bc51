package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ohler55/ojg/jp"
	"go.yaml.in/yaml/v3"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/ora"
)

// DefaultActions lists the action types the actor supports; a rules file may
// name only these unless Options.Actions says otherwise.
var DefaultActions = []string{"notify", "http.request", "object.put", "commitment.open", "commitment.close", "none", "function.invoke", "mcp.call"}

// What a rules file does with a signal no rule matches (its unmatched key).
const (
	// UnmatchedEscalate decides the default outcome (the file's default key,
	// usually a low-confidence notify a human must approve).
	UnmatchedEscalate = "escalate"
	// UnmatchedIgnore decides none: the signal is recorded, nothing is done,
	// and the decision says no rule matched.
	UnmatchedIgnore = "ignore"
)

// Options tune parsing and the reasoner.
type Options struct {
	// Actions lists the action types a rule may choose. Default DefaultActions.
	Actions []string
	// Now stamps decisions. Default time.Now.
	Now func() time.Time
	// Required names the parameters an action type cannot run without
	// (checked when the file loads). Default act.StandardRequiredFor: the
	// standard actions' own.
	Required func(action string, params map[string]any) []string
}

func options(opts []func(*Options)) Options {
	o := Options{Actions: DefaultActions, Now: time.Now, Required: act.StandardRequiredFor}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// file is the YAML document as written. Field names are the keys of the
// rules file format (see the README).
type file struct {
	Version   string   `yaml:"version"`
	Rules     []rule   `yaml:"rules"`
	Unmatched string   `yaml:"unmatched"`
	Default   *outcome `yaml:"default"`
}

type rule struct {
	Name        string     `yaml:"name"`
	Description string     `yaml:"description"`
	When        *predicate `yaml:"when"`
	Then        *outcome   `yaml:"then"`
	// Program names the reasoning program a model runs for the signals
	// the rule matches (see Set.ProgramFor); a rule with a program may
	// leave out then, and the rules reasoner then skips it.
	Program string `yaml:"program"`
}

type predicate struct {
	All     []predicate `yaml:"all"`
	Any     []predicate `yaml:"any"`
	Not     *predicate  `yaml:"not"`
	Field   string      `yaml:"field"`
	Equals  yaml.Node   `yaml:"equals"`
	In      yaml.Node   `yaml:"in"`
	Exists  *bool       `yaml:"exists"`
	Matches *string     `yaml:"matches"`
	GT      *float64    `yaml:"gt"`
	LT      *float64    `yaml:"lt"`
}

type outcome struct {
	Action     string         `yaml:"action"`
	Parameters map[string]any `yaml:"parameters"`
	Confidence *float64       `yaml:"confidence"`
	Tier       int            `yaml:"tier"`
	AuthorType string         `yaml:"author_type"`
	Scope      struct {
		AllowedOperations []string `yaml:"allowed_operations"`
		ForbiddenPaths    []string `yaml:"forbidden_paths"`
	} `yaml:"scope"`
	Reasoning string `yaml:"reasoning"`
	// Actions, instead of Action and Parameters, makes a decision of
	// several actions; each may name depends_on (earlier indexes).
	Actions []step `yaml:"actions"`
}

// step is one action of an outcome with several.
type step struct {
	Action     string         `yaml:"action"`
	Parameters map[string]any `yaml:"parameters"`
	DependsOn  []int          `yaml:"depends_on"`
}

// Set is a parsed and validated rules file, ready to evaluate. It is safe for
// concurrent use.
type Set struct {
	version string
	rules   []compiledRule
	def     compiledOutcome
	// orientation: some predicate or template reads the packet, so
	// evaluation builds its view (see orientation).
	orientation bool
}

// Version returns the file's version field.
func (s *Set) Version() string { return s.version }

// Len returns the number of rules, not counting the default.
func (s *Set) Len() int { return len(s.rules) }

type compiledRule struct {
	name string
	when node
	then compiledOutcome
	// decides is false for a rule that only names a program.
	decides bool
	program ora.ProgramID
}

type compiledOutcome struct {
	action     string
	parameters map[string]any // strings may hold templates
	templates  map[string]template
	// steps are the actions of an outcome with several (each with its
	// action, parameters and templates), dependsOn their depends_on.
	steps      []compiledOutcome
	dependsOn  [][]int
	confidence float64
	tier       int
	authorType ora.AuthorType
	scope      ora.Scope
	reasoning  string
}

// LoadFile reads and parses the rules file at path. Errors: EINVALID naming
// the rule and field at fault, or the file that cannot be read.
func LoadFile(path string, opts ...func(*Options)) (*Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, ora.Invalid("rules_file", "cannot read %s: %v", path, err)
	}
	s, err := Parse(b, opts...)
	if err != nil {
		return nil, fmt.Errorf("rules: load %s: %w", path, err)
	}
	return s, nil
}

// Load parses the file at path, or fallback (usually the embedded default,
// rules.Default of the repository's rules folder) when path is empty.
func Load(path string, fallback []byte, opts ...func(*Options)) (*Set, error) {
	if path != "" {
		return LoadFile(path, opts...)
	}
	return Parse(fallback, opts...)
}

// Parse parses and validates a rules file. Unknown keys are errors, so a typo
// never silently disables a predicate. Errors: EINVALID whose Field names the
// place, e.g. `rules[2](github-push).when.all[0].matches`.
func Parse(data []byte, opts ...func(*Options)) (*Set, error) {
	o := options(opts)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ora.Invalid("version", "the rules file is empty")
		}
		return nil, ora.Invalid("rules_file", "%v", err)
	}
	if strings.TrimSpace(f.Version) == "" {
		return nil, ora.Invalid("version", "required")
	}
	s := &Set{version: f.Version}
	seen := map[string]int{}
	for i, r := range f.Rules {
		where := fmt.Sprintf("rules[%d]", i)
		if r.Name == "" {
			return nil, ora.Invalid(where+".name", "required")
		}
		where = fmt.Sprintf("rules[%d](%s)", i, r.Name)
		if j, dup := seen[r.Name]; dup {
			return nil, ora.Invalid(where+".name", "duplicate of rules[%d]", j)
		}
		seen[r.Name] = i
		if r.When == nil {
			return nil, ora.Invalid(where+".when", "required")
		}
		n, err := compilePredicate(*r.When, where+".when")
		if err != nil {
			return nil, err
		}
		cr := compiledRule{name: r.Name, when: n, program: ora.ProgramID(r.Program)}
		if r.Program != "" && !slices.Contains(ora.Programs, cr.program) {
			return nil, ora.Invalid(where+".program", "%q is not one of %v", r.Program, ora.Programs)
		}
		switch {
		case r.Then != nil:
			if cr.then, err = compileOutcome(*r.Then, where+".then", o); err != nil {
				return nil, err
			}
			cr.decides = true
		case r.Program == "":
			return nil, ora.Invalid(where+".then", "required (or a program)")
		}
		s.rules = append(s.rules, cr)
		s.orientation = s.orientation || n.readsOrientation() || cr.then.readsOrientation()
	}
	switch f.Unmatched {
	case "", UnmatchedEscalate:
	case UnmatchedIgnore:
		if f.Default != nil {
			return nil, ora.Invalid("default", "unmatched: ignore decides none for an unmatched signal; remove default, or set unmatched: escalate to use it")
		}
		f.Default = ignored()
	default:
		return nil, ora.Invalid("unmatched", "%q is not ignore or escalate", f.Unmatched)
	}
	if f.Default == nil {
		return nil, ora.Invalid("default", "required with unmatched: escalate: the outcome when no rule matches (or set unmatched: ignore)")
	}
	def, err := compileOutcome(*f.Default, "default", o)
	if err != nil {
		return nil, err
	}
	s.def = def
	s.orientation = s.orientation || def.readsOrientation()
	return s, nil
}

// ignored is the outcome of unmatched: ignore: none, acted on at once, with
// the reason recorded.
func ignored() *outcome {
	conf := 0.95
	o := &outcome{Action: "none", Parameters: map[string]any{"reason": "no rule matched {{ source.type }} {{ source.event_type | default: signal }} {{ id }}; the rules file ignores unmatched signals"},
		Confidence: &conf, Tier: 1, AuthorType: string(ora.AuthorAuditor),
		Reasoning: "No rule matched this signal and the rules file says unmatched: ignore, so it is recorded and nothing is done."}
	o.Scope.AllowedOperations = []string{"none"}
	return o
}

// node is a compiled predicate.
type node struct {
	all, any []node
	not      *node
	field    string
	path     jp.Expr
	equals   *any
	in       []any
	exists   *bool
	matches  *regexp.Regexp
	gt, lt   *float64
}

func compilePredicate(p predicate, where string) (node, error) {
	combinators := 0
	if p.All != nil {
		combinators++
	}
	if p.Any != nil {
		combinators++
	}
	if p.Not != nil {
		combinators++
	}
	leaf := p.Field != "" || p.Equals.Kind != 0 || p.In.Kind != 0 || p.Exists != nil || p.Matches != nil || p.GT != nil || p.LT != nil
	switch {
	case combinators > 1 || (combinators == 1 && leaf):
		return node{}, ora.Invalid(where, "use exactly one of all, any, not, or a field test")
	case combinators == 0 && !leaf:
		return node{}, ora.Invalid(where, "empty predicate: use all, any, not, or field with an operator")
	case p.All != nil || p.Any != nil:
		key, list := "all", p.All
		if p.Any != nil {
			key, list = "any", p.Any
		}
		if len(list) == 0 {
			return node{}, ora.Invalid(where+"."+key, "needs at least one predicate")
		}
		kids := make([]node, len(list))
		for i, c := range list {
			k, err := compilePredicate(c, fmt.Sprintf("%s.%s[%d]", where, key, i))
			if err != nil {
				return node{}, err
			}
			kids[i] = k
		}
		if key == "all" {
			return node{all: kids}, nil
		}
		return node{any: kids}, nil
	case p.Not != nil:
		k, err := compilePredicate(*p.Not, where+".not")
		if err != nil {
			return node{}, err
		}
		return node{not: &k}, nil
	}
	if p.Field == "" {
		return node{}, ora.Invalid(where+".field", "required with an operator")
	}
	path, err := parsePath(p.Field)
	if err != nil {
		return node{}, ora.Invalid(where+".field", "%q is not a field path: %v", p.Field, err)
	}
	n := node{field: p.Field, path: path, exists: p.Exists}
	ops := 0
	if p.Exists != nil {
		ops++
	}
	if p.Equals.Kind != 0 {
		ops++
		v, err := scalar(&p.Equals)
		if err != nil {
			return node{}, ora.Invalid(where+".equals", "%v", err)
		}
		n.equals = &v
	}
	if p.In.Kind != 0 {
		ops++
		if p.In.Kind != yaml.SequenceNode || len(p.In.Content) == 0 {
			return node{}, ora.Invalid(where+".in", "must be a non-empty list of values")
		}
		for i, c := range p.In.Content {
			v, err := scalar(c)
			if err != nil {
				return node{}, ora.Invalid(fmt.Sprintf("%s.in[%d]", where, i), "%v", err)
			}
			n.in = append(n.in, v)
		}
	}
	if p.Matches != nil {
		ops++
		re, err := regexp.Compile(*p.Matches)
		if err != nil {
			return node{}, ora.Invalid(where+".matches", "bad regular expression: %v", err)
		}
		n.matches = re
	}
	for _, b := range []struct {
		key string
		v   *float64
	}{{"gt", p.GT}, {"lt", p.LT}} {
		if b.v == nil {
			continue
		}
		ops++
		if math.IsNaN(*b.v) || math.IsInf(*b.v, 0) {
			return node{}, ora.Invalid(where+"."+b.key, "must be a finite number")
		}
	}
	n.gt, n.lt = p.GT, p.LT
	if ops == 0 {
		return node{}, ora.Invalid(where, "field %q needs an operator: equals, in, exists, matches, gt or lt", p.Field)
	}
	if p.Exists != nil && ops > 1 {
		return node{}, ora.Invalid(where+".exists", "cannot be combined with another operator")
	}
	return n, nil
}

// parsePath turns a field path relative to the signal (payload.repository.name,
// payload.commits[0].id, source.provider) or a JSONPath starting with $ into a
// JSONPath expression.
func parsePath(field string) (jp.Expr, error) {
	s := field
	if !strings.HasPrefix(s, "$") {
		s = "$." + s
	}
	return jp.ParseString(s)
}

// scalar decodes a YAML scalar into a comparable value: string, float64, bool
// or nil.
func scalar(n *yaml.Node) (any, error) {
	if n.Kind != yaml.ScalarNode {
		return nil, fmt.Errorf("must be a string, number, boolean or null")
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return normalize(v), nil
}

// normalize maps every number to float64 so that YAML's ints and JSON's
// floats compare equal.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	}
	return v
}

var templateRef = regexp.MustCompile(`\{\{\s*([^{}]+?)\s*\}\}`)

func compileOutcome(o outcome, where string, opts Options) (compiledOutcome, error) {
	actions := opts.Actions
	if len(o.Actions) > 0 {
		return compileSteps(o, where, opts)
	}
	if o.Action == "" {
		return compiledOutcome{}, ora.Invalid(where+".action", "required")
	}
	if !slices.Contains(actions, o.Action) {
		return compiledOutcome{}, ora.Invalid(where+".action", "%q is not one of %s", o.Action, strings.Join(actions, ", "))
	}
	if o.Confidence == nil {
		return compiledOutcome{}, ora.Invalid(where+".confidence", "required")
	}
	if c := *o.Confidence; math.IsNaN(c) || c < 0 || c > 1 {
		return compiledOutcome{}, ora.Invalid(where+".confidence", "%v is outside 0..1", c)
	}
	if o.Tier < 1 || o.Tier > 3 {
		return compiledOutcome{}, ora.Invalid(where+".tier", "%d is outside 1..3", o.Tier)
	}
	at := ora.AuthorType(o.AuthorType)
	if at != ora.AuthorArchitect && at != ora.AuthorAuditor {
		return compiledOutcome{}, ora.Invalid(where+".author_type", "%q is not architect or auditor", o.AuthorType)
	}
	if strings.TrimSpace(o.Reasoning) == "" {
		return compiledOutcome{}, ora.Invalid(where+".reasoning", "required")
	}
	allowed := o.Scope.AllowedOperations
	if len(allowed) == 0 {
		allowed = []string{o.Action}
	}
	for i, op := range allowed {
		if !slices.Contains(actions, op) {
			return compiledOutcome{}, ora.Invalid(fmt.Sprintf("%s.scope.allowed_operations[%d]", where, i), "%q is not one of %s", op, strings.Join(actions, ", "))
		}
	}
	if !slices.Contains(allowed, o.Action) {
		return compiledOutcome{}, ora.Invalid(where+".scope.allowed_operations", "does not allow the rule's own action %q", o.Action)
	}
	for i, p := range o.Scope.ForbiddenPaths {
		if strings.TrimSpace(p) == "" {
			return compiledOutcome{}, ora.Invalid(fmt.Sprintf("%s.scope.forbidden_paths[%d]", where, i), "empty path")
		}
	}
	if raw, err := json.Marshal(o.Parameters); err == nil {
		if h, found := ora.CredentialHeaderIn(raw); found {
			return compiledOutcome{}, ora.Invalid(where+".parameters.headers", "%q carries a credential in the rules file: add a connection (connections: in the config) and name it in the action's parameters", h)
		}
	}
	templates := map[string]template{}
	if err := collectTemplates(o.Parameters, where+".parameters", templates); err != nil {
		return compiledOutcome{}, err
	}
	if err := checkRequired(o.Action, o.Parameters, templates, opts.Required, where+".parameters"); err != nil {
		return compiledOutcome{}, err
	}
	return compiledOutcome{
		action:     o.Action,
		parameters: o.Parameters,
		templates:  templates,
		confidence: *o.Confidence,
		tier:       o.Tier,
		authorType: at,
		scope:      ora.Scope{AllowedOperations: allowed, ForbiddenPaths: o.Scope.ForbiddenPaths},
		reasoning:  strings.TrimSpace(o.Reasoning),
	}, nil
}

// compileSteps compiles an outcome with several actions: the first is the
// primary one, the scope defaults to every action's type and must allow
// each, depends_on names earlier actions only.
func compileSteps(o outcome, where string, opts Options) (compiledOutcome, error) {
	actions := opts.Actions
	if o.Action != "" || o.Parameters != nil {
		return compiledOutcome{}, ora.Invalid(where+".actions", "give either action and parameters, or actions")
	}
	plan := make([]ora.Action, len(o.Actions))
	var types []string
	for i, st := range o.Actions {
		if st.Action == "" {
			return compiledOutcome{}, ora.Invalid(fmt.Sprintf("%s.actions[%d].action", where, i), "required")
		}
		plan[i] = ora.Action{Type: st.Action, DependsOn: st.DependsOn}
		if !slices.Contains(types, st.Action) {
			types = append(types, st.Action)
		}
	}
	if err := ora.CheckDependsOn(plan); err != nil {
		return compiledOutcome{}, ora.Invalid(where+".actions", "%v", err)
	}
	primary := o
	primary.Actions, primary.Action, primary.Parameters = nil, o.Actions[0].Action, o.Actions[0].Parameters
	if len(primary.Scope.AllowedOperations) == 0 {
		primary.Scope.AllowedOperations = types
	}
	c, err := compileOutcome(primary, where, opts)
	if err != nil {
		return compiledOutcome{}, err
	}
	for i, st := range o.Actions {
		w := fmt.Sprintf("%s.actions[%d]", where, i)
		if !slices.Contains(actions, st.Action) {
			return compiledOutcome{}, ora.Invalid(w+".action", "%q is not one of %s", st.Action, strings.Join(actions, ", "))
		}
		if !slices.Contains(c.scope.AllowedOperations, st.Action) {
			return compiledOutcome{}, ora.Invalid(where+".scope.allowed_operations", "does not allow the rule's action %q", st.Action)
		}
		templates := map[string]template{}
		if err := collectTemplates(st.Parameters, w+".parameters", templates); err != nil {
			return compiledOutcome{}, err
		}
		if err := checkRequired(st.Action, st.Parameters, templates, opts.Required, w+".parameters"); err != nil {
			return compiledOutcome{}, err
		}
		c.steps = append(c.steps, compiledOutcome{action: st.Action, parameters: st.Parameters, templates: templates})
		c.dependsOn = append(c.dependsOn, st.DependsOn)
	}
	return c, nil
}

// collectTemplates parses every {{ path }} (or {{ path | default: value }})
// in the parameters' strings, so a bad path fails at load and not at the
// first matching signal.
func collectTemplates(v any, where string, into map[string]template) error {
	switch x := v.(type) {
	case string:
		for _, m := range templateRef.FindAllStringSubmatch(x, -1) {
			if _, ok := into[m[1]]; ok {
				continue
			}
			t, err := parseTemplate(m[1])
			if err != nil {
				return ora.Invalid(where, "template {{%s}}: %v", m[1], err)
			}
			into[m[1]] = t
		}
	case map[string]any:
		for k, e := range x {
			if err := collectTemplates(e, where+"."+k, into); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := collectTemplates(e, fmt.Sprintf("%s[%d]", where, i), into); err != nil {
				return err
			}
		}
	case nil, bool, int, int64, uint64, float64:
	default:
		return ora.Invalid(where, "unsupported value of type %T", v)
	}
	return nil
}
