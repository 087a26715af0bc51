package act

import (
	"encoding/json"
	"fmt"

	"github.com/ora-runtime/ora/shared/ora"
)

// Requirer is implemented by actions that cannot run without some of their
// parameters. Required names them (keys of the parameters object); the
// action's own validation refuses the parameters with EINVALID when one is
// missing, null or empty. A rules file is checked against it when it loads.
type Requirer interface {
	Required() []string
}

// Required returns notify's required parameters: message.
func (*SNSNotify) Required() []string { return []string{"message"} }

// Required returns notify's required parameters: message.
func (*LogNotify) Required() []string { return []string{"message"} }

// Required returns http.request's required parameters: url.
func (*HTTPRequest) Required() []string { return []string{"url"} }

// Required returns object.put's required parameters: key.
func (*ObjectPut) Required() []string { return []string{"key"} }

// Required returns commitment.open's required parameters: title.
func (*CommitmentOpen) Required() []string { return []string{"title"} }

// Required returns none's required parameters: reason.
func (*None) Required() []string { return []string{"reason"} }

// Required returns commitment.close's required parameters: id.
func (*CommitmentClose) Required() []string { return []string{"id"} }

// validate is notify's own decoding: it has no Checker (no allow-list), but
// a message is required.
func (*SNSNotify) validate(params json.RawMessage) error {
	_, err := decodeNotify(params)
	return err
}

func (*LogNotify) validate(params json.RawMessage) error {
	_, err := decodeNotify(params)
	return err
}

// Required returns the parameters the action registered for typ cannot run
// without; nil when it names none or typ is not registered.
func (r *Registry) Required(typ string) []string {
	a, ok := r.Lookup(typ)
	if !ok {
		return nil
	}
	if q, ok := a.(Requirer); ok {
		return q.Required()
	}
	return nil
}

// CheckParameters validates an action's parameters with the registered
// action's own validation (its Check, or its decoding) and reports only what
// is wrong with the parameters themselves: an allow-list's refusal
// (EFORBIDDEN) is the actor's to judge with the decision's scope, and an
// unregistered type is the actor's to refuse. The reasoner's task calls it
// before it records a decision, so a decision whose required parameter came
// out null goes to a human instead of failing its Act. Errors: EINVALID.
func (r *Registry) CheckParameters(a ora.Action) error {
	impl, ok := r.Lookup(a.Type)
	if !ok {
		return nil
	}
	var err error
	switch c := impl.(type) {
	case Checker:
		_, err = c.Check(a.Parameters)
	case interface{ validate(json.RawMessage) error }:
		err = c.validate(a.Parameters)
	}
	if ora.ErrorCode(err) != ora.EINVALID {
		return nil
	}
	return fmt.Errorf("act: check parameters: %w", err)
}

// standardShapes is the standard registry without configuration, stores or
// clients: enough to ask its actions what their parameters need, never to
// run them.
var standardShapes = Standard(Config{}, NewLogNotify(nil), nil, nil, nil)

// StandardRequired returns Required of the standard action typ, for callers
// without a registry (a rules file loads before any actor exists).
func StandardRequired(typ string) []string { return standardShapes.Required(typ) }

// StandardParameters returns the standard actions' own parameter validation
// (Registry.CheckParameters) for callers without the actor's registry: the
// reason Lambda. Allow-lists are left out; the actor applies them.
func StandardParameters() *Registry { return Standard(Config{}, NewLogNotify(nil), nil, nil, nil) }
