package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ora-runtime/ora/shared/ora"
)

// Reasoner is the rules reasoner: it decides by the first rule of its Set
// whose predicate holds for the signal, or by the Set's default.
type Reasoner struct {
	set *Set
	now func() time.Time
}

var _ ora.Reasoner = (*Reasoner)(nil)

// New returns a reasoner over set. Options.Now stamps decisions.
func New(set *Set, opts ...func(*Options)) *Reasoner {
	o := options(opts)
	return &Reasoner{set: set, now: o.Now}
}

// Match is the outcome of evaluating a Set against a signal.
type Match struct {
	// Rule is the name of the matching rule, "" for the default.
	Rule       string
	Action     string
	Parameters json.RawMessage
	Confidence float64
	Tier       int
	AuthorType ora.AuthorType
	Scope      ora.Scope
	Reasoning  string
	// Actions lists every action of an outcome with several (the first is
	// Action with Parameters); empty for an outcome of one action.
	Actions []ora.Action
}

// namespace roots the deterministic decision ids.
var namespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/ora-runtime/ora/rules"))

// DecisionID returns the id the rules reasoner gives its decision about a
// signal under a rules version: a name-based (SHA-1) UUID, so a retry yields
// the same id and a new rules version a new one.
func DecisionID(signalID, version string) string {
	return uuid.NewSHA1(namespace, []byte(version+"\x00"+signalID)).String()
}

// Reason decides about in.Signal. Errors: EINVALID when the signal is
// malformed or a rule's parameters cannot be rendered.
func (r *Reasoner) Reason(_ context.Context, in ora.ReasonerInput) (ora.ReasonerDecision, error) {
	if in.Signal.ID == "" {
		return ora.ReasonerDecision{}, ora.Invalid("signal.id", "required")
	}
	m, err := r.set.EvaluateWith(in.Signal, in.Packet)
	if err != nil {
		return ora.ReasonerDecision{}, err
	}
	name := m.Rule
	if name == "" {
		name = "default"
	}
	m.Scope.Ref = "rules/" + r.set.version + "#" + name
	d := ora.ReasonerDecision{
		ID:           DecisionID(in.Signal.ID, r.set.version),
		SignalID:     in.Signal.ID,
		ActionType:   m.Action,
		Parameters:   m.Parameters,
		Confidence:   m.Confidence,
		Reasoning:    fmt.Sprintf("rule %s (rules %s): %s", name, r.set.version, m.Reasoning),
		AuthorType:   m.AuthorType,
		Scope:        m.Scope,
		Tier:         m.Tier,
		Timestamp:    r.now().UTC(),
		PacketDigest: in.Packet.Digest,
		RulesVersion: r.set.version,
		Actions:      m.Actions,
	}
	if err := d.Validate(); err != nil {
		return ora.ReasonerDecision{}, fmt.Errorf("rules: decide %s: %w", in.Signal.ID, err)
	}
	return d, nil
}

// Evaluate returns the outcome of the first rule whose predicate holds for
// the signal, or the default's, with an empty orientation packet. Errors:
// EINVALID when the payload is not JSON or the parameters cannot be encoded.
func (s *Set) Evaluate(sig ora.NormalizedSignal) (Match, error) {
	return s.EvaluateWith(sig, ora.OrientationPacket{})
}

// EvaluateWith is Evaluate with the wave's orientation packet, which
// predicates and templates read under "orientation" (see the rules docs).
// Errors: as Evaluate.
func (s *Set) EvaluateWith(sig ora.NormalizedSignal, packet ora.OrientationPacket) (Match, error) {
	doc, err := document(sig)
	if err != nil {
		return Match{}, err
	}
	if s.orientation {
		doc[orientationRoot] = orientation(packet)
	}
	out, name := s.def, ""
	for _, r := range s.rules {
		if r.decides && r.when.eval(doc) {
			out, name = r.then, r.name
			break
		}
	}
	params, err := out.render(doc)
	if err != nil {
		return Match{}, fmt.Errorf("rules: rule %q: %w", name, err)
	}
	var plan []ora.Action
	for i, st := range out.steps {
		p, err := st.render(doc)
		if err != nil {
			return Match{}, fmt.Errorf("rules: rule %q action %d: %w", name, i, err)
		}
		plan = append(plan, ora.Action{Type: st.action, Parameters: p, DependsOn: out.dependsOn[i]})
	}
	scope := out.scope
	scope.AllowedOperations = append([]string(nil), scope.AllowedOperations...)
	scope.ForbiddenPaths = append([]string(nil), scope.ForbiddenPaths...)
	return Match{
		Rule:       name,
		Action:     out.action,
		Parameters: params,
		Confidence: out.confidence,
		Tier:       out.tier,
		AuthorType: out.authorType,
		Scope:      scope,
		Reasoning:  out.reasoning,
		Actions:    plan,
	}, nil
}

// ProgramFor returns the reasoning program a model runs for the signal: the
// program of the first rule that names one and whose predicate holds (with
// the packet, as EvaluateWith), and that rule's name; ok is false when no
// such rule matches (the reasoner's configuration chooses then). Errors:
// EINVALID when the payload is not JSON.
func (s *Set) ProgramFor(sig ora.NormalizedSignal, packet ora.OrientationPacket) (program ora.ProgramID, rule string, ok bool, err error) {
	var doc map[string]any
	for _, r := range s.rules {
		if r.program == "" {
			continue
		}
		if doc == nil {
			if doc, err = document(sig); err != nil {
				return "", "", false, err
			}
			if s.orientation {
				doc[orientationRoot] = orientation(packet)
			}
		}
		if r.when.eval(doc) {
			return r.program, r.name, true, nil
		}
	}
	return "", "", false, nil
}

// document is the signal as predicates see it: id, source.*, timestamp,
// normalized_at, dedup_key, raw_digest and the decoded payload. The raw bytes
// are left out; the packet is added under "orientation" when a rule reads it.
func document(sig ora.NormalizedSignal) (map[string]any, error) {
	src, err := json.Marshal(sig.Source)
	if err != nil {
		return nil, ora.Invalid("signal.source", "cannot encode: %v", err)
	}
	var source map[string]any
	if err := json.Unmarshal(src, &source); err != nil {
		return nil, ora.Invalid("signal.source", "cannot decode: %v", err)
	}
	var payload any
	if len(sig.Payload) > 0 {
		if err := json.Unmarshal(sig.Payload, &payload); err != nil {
			return nil, ora.Invalid("signal.payload", "must be JSON: %v", err)
		}
	}
	doc := map[string]any{
		"id":         sig.ID,
		"source":     source,
		"payload":    payload,
		"dedup_key":  sig.DedupKey,
		"raw_digest": sig.RawDigest,
	}
	if !sig.Timestamp.IsZero() {
		doc["timestamp"] = sig.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	if !sig.NormalizedAt.IsZero() {
		doc["normalized_at"] = sig.NormalizedAt.UTC().Format(time.RFC3339Nano)
	}
	return doc, nil
}

func (n node) eval(doc any) bool {
	switch {
	case n.all != nil:
		for _, k := range n.all {
			if !k.eval(doc) {
				return false
			}
		}
		return true
	case n.any != nil:
		for _, k := range n.any {
			if k.eval(doc) {
				return true
			}
		}
		return false
	case n.not != nil:
		return !n.not.eval(doc)
	}
	vals := n.path.Get(doc)
	if n.exists != nil {
		return (len(vals) > 0) == *n.exists
	}
	for _, v := range vals {
		if n.test(normalize(v)) {
			return true
		}
	}
	return false
}

// test reports whether one value satisfies every operator of a leaf.
func (n node) test(v any) bool {
	if n.equals != nil && !equal(v, *n.equals) {
		return false
	}
	if n.in != nil {
		found := false
		for _, w := range n.in {
			if equal(v, w) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if n.matches != nil {
		s, ok := v.(string)
		if !ok || !n.matches.MatchString(s) {
			return false
		}
	}
	if n.gt != nil || n.lt != nil {
		f, ok := v.(float64)
		if !ok {
			return false
		}
		if n.gt != nil && !(f > *n.gt) {
			return false
		}
		if n.lt != nil && !(f < *n.lt) {
			return false
		}
	}
	return true
}

// equal compares scalars of the same type; values of different types (the
// string "1" and the number 1) are never equal.
func equal(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	return false
}

// render fills the templates in the outcome's parameters and encodes them as
// JSON. A string that is exactly one {{ path }} takes the value's own type;
// otherwise each reference is replaced by the value's text ("" when absent).
func (o compiledOutcome) render(doc any) (json.RawMessage, error) {
	if o.parameters == nil {
		return nil, nil
	}
	v, err := o.fill(o.parameters, doc)
	if err != nil {
		return nil, err
	}
	// A connection's path is filled like a url's: a value never adds a
	// segment or climbs one.
	for _, key := range []string{"url", "path"} {
		u, ok := o.parameters[key].(string)
		if !ok || o.action != "http.request" {
			continue
		}
		// A url that is one whole template stays as its value: the
		// allow-list judges it as a whole.
		if refs := templateRef.FindAllStringSubmatchIndex(u, -1); len(refs) > 0 && !(len(refs) == 1 && refs[0][0] == 0 && refs[0][1] == len(u)) {
			v.(map[string]any)[key] = o.fillURL(u, doc)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, ora.Invalid("parameters", "cannot encode: %v", err)
	}
	return b, nil
}

func (o compiledOutcome) fill(v any, doc any) (any, error) {
	switch x := v.(type) {
	case string:
		refs := templateRef.FindAllStringSubmatchIndex(x, -1)
		if len(refs) == 0 {
			return x, nil
		}
		if len(refs) == 1 && refs[0][0] == 0 && refs[0][1] == len(x) {
			return o.lookup(x[refs[0][2]:refs[0][3]], doc), nil
		}
		var b strings.Builder
		last := 0
		for _, r := range refs {
			b.WriteString(x[last:r[0]])
			b.WriteString(text(o.lookup(x[r[2]:r[3]], doc)))
			last = r[1]
		}
		b.WriteString(x[last:])
		return b.String(), nil
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			f, err := o.fill(e, doc)
			if err != nil {
				return nil, err
			}
			m[k] = f
		}
		return m, nil
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			f, err := o.fill(e, doc)
			if err != nil {
				return nil, err
			}
			l[i] = f
		}
		return l, nil
	}
	return v, nil
}

// fillURL fills the templates of an http.request url, each value escaped for
// the URL component it lands in: a path segment (slashes, "?", "#" and a
// whole "." or ".." escaped, so a value never adds a segment or climbs one),
// the query (query escaping) or the fragment. A value in the scheme or host
// is escaped as a path segment too; the allow-list then judges the host.
func (o compiledOutcome) fillURL(x string, doc any) string {
	refs := templateRef.FindAllStringSubmatchIndex(x, -1)
	var b strings.Builder
	last := 0
	for _, r := range refs {
		b.WriteString(x[last:r[0]])
		v := text(o.lookup(x[r[2]:r[3]], doc))
		before := x[:r[0]]
		switch {
		case strings.Contains(before, "#"):
			b.WriteString(url.PathEscape(v))
		case strings.Contains(before, "?"):
			b.WriteString(url.QueryEscape(v))
		default:
			b.WriteString(escapeSegment(v))
		}
		last = r[1]
	}
	b.WriteString(x[last:])
	return b.String()
}

// escapeSegment escapes v as one path segment.
func escapeSegment(v string) string {
	switch v {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	return url.PathEscape(v)
}

func (o compiledOutcome) lookup(ref string, doc any) any {
	t, ok := o.templates[ref]
	if !ok {
		return nil
	}
	vals := t.path.Get(doc)
	if len(vals) == 0 || vals[0] == nil {
		return t.fallback
	}
	return vals[0]
}

// text renders a template value inside a longer string.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
