package motor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/ora-runtime/ora/shared/ora"
)

// ValidatorSettings is the schema of a bundle's validators block: the knobs
// of the validators a motor version sets. Every field is optional; what a
// block leaves out keeps the code's default (DefaultValidatorSettings). The
// state machine decides which validators run (technical always, safety from
// tier 2, intent from tier 3): these settings tune what a validator checks
// once it runs, they never skip one.
type ValidatorSettings struct {
	Safety SafetySettings `json:"safety"`
	Intent IntentSettings `json:"intent"`
}

// SafetySettings tune the safety validator.
type SafetySettings struct {
	// Guardrail applies the configured Bedrock guardrail to the action
	// parameters and the signal text (default true; without a configured
	// guardrail there is nothing to apply). false turns that check off; the
	// scope checks always run.
	Guardrail *bool `json:"guardrail,omitempty"`
	// GuardrailMinTier is the lowest decision tier the guardrail checks: 2
	// (the default: every decision safety validates) or 3.
	GuardrailMinTier int `json:"guardrail_min_tier,omitempty"`
	// ForbiddenPaths are patterns (as a scope's forbidden_paths) that no
	// action's target may match, on top of each decision's own
	// scope.forbidden_paths: a motor can tighten safety, not loosen it.
	ForbiddenPaths []string `json:"forbidden_paths,omitempty"`
}

// IntentSettings tune the intent validator.
type IntentSettings struct {
	// Judge asks the model (the intent judge, with the Bedrock reasoner)
	// whether a tier-3 wave's evidence fulfils its decision's stated intent
	// (default true). false keeps the plan-against-evidence checks only.
	Judge *bool `json:"judge,omitempty"`
}

// DefaultValidatorSettings are the settings of a motor whose bundle has no
// validators block, with every default spelled out.
func DefaultValidatorSettings() ValidatorSettings {
	on := true
	return ValidatorSettings{
		Safety: SafetySettings{Guardrail: &on, GuardrailMinTier: 2},
		Intent: IntentSettings{Judge: &on},
	}
}

// GuardrailOn reports whether the safety validator applies the guardrail
// (a nil Guardrail is the default, on).
func (s SafetySettings) GuardrailOn() bool { return s.Guardrail == nil || *s.Guardrail }

// GuardrailFrom is the lowest tier the guardrail checks (0 is the default, 2).
func (s SafetySettings) GuardrailFrom() int {
	if s.GuardrailMinTier == 0 {
		return 2
	}
	return s.GuardrailMinTier
}

// JudgeOn reports whether the intent validator asks the judge (a nil Judge
// is the default, on).
func (s IntentSettings) JudgeOn() bool { return s.Judge == nil || *s.Judge }

// ParseValidatorSettings decodes a bundle's validators block strictly: an
// unknown field or a value of the wrong type or out of range is refused with
// an EINVALID naming the field (validators.safety.guardrail_min_tier, ...).
// An empty block (or null) is the defaults.
func ParseValidatorSettings(raw json.RawMessage) (ValidatorSettings, error) {
	var s ValidatorSettings
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return s, nil
	}
	if err := knownFields(raw, reflect.TypeFor[ValidatorSettings](), "validators"); err != nil {
		return ValidatorSettings{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return ValidatorSettings{}, ora.Invalid("validators."+te.Field, "a JSON %s is not a %s", te.Value, kindName(te.Type))
		}
		return ValidatorSettings{}, ora.Invalid("validators", "not a validators block: %v", err)
	}
	if dec.More() {
		return ValidatorSettings{}, ora.Invalid("validators", "holds more than one JSON value")
	}
	switch s.Safety.GuardrailMinTier {
	case 0, 2, 3:
	default:
		return ValidatorSettings{}, ora.Invalid("validators.safety.guardrail_min_tier",
			"%d is not 2 or 3 (safety validates decisions of tier 2 and above)", s.Safety.GuardrailMinTier)
	}
	for i, p := range s.Safety.ForbiddenPaths {
		if strings.TrimSpace(p) == "" {
			return ValidatorSettings{}, ora.Invalid(fmt.Sprintf("validators.safety.forbidden_paths[%d]", i), "is empty")
		}
	}
	return s, nil
}

// knownFields refuses keys of raw (a JSON object, and the objects in it)
// that t's JSON tags do not name, naming the first unknown one by its path.
func knownFields(raw json.RawMessage, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return nil
		}
		return ora.Invalid(path, "must be a JSON object")
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			fields[name] = f.Type
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ft, ok := fields[k]
		if !ok {
			known := make([]string, 0, len(fields))
			for n := range fields {
				known = append(known, n)
			}
			sort.Strings(known)
			return ora.Invalid(path+"."+k, "is not a setting (known: %s)", strings.Join(known, ", "))
		}
		if err := knownFields(m[k], ft, path+"."+k); err != nil {
			return err
		}
	}
	return nil
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "whole number"
	case reflect.String:
		return "string"
	case reflect.Slice:
		return "list"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return t.String()
}

// ValidatorSettings returns the current motor version's validator settings
// and that version, read as Current reads it (within the registry's cache
// TTL of a promotion or rollback). Errors: ETRANSIENT, EINVALID (the stored
// block does not decode: Propose refuses such a bundle, so only one stored
// before the schema existed).
func (r *Registry) ValidatorSettings(ctx context.Context) (ValidatorSettings, string, error) {
	b, _, _, err := r.Current(ctx)
	if err != nil {
		return ValidatorSettings{}, "", err
	}
	s, err := ParseValidatorSettings(b.Validators)
	if err != nil {
		return ValidatorSettings{}, b.Version, fmt.Errorf("motor %s: %w", b.Version, err)
	}
	return s, b.Version, nil
}

// ValidatorSettingsOf returns the validator settings of the motor version
// a decision ran under (ReasonerDecision.MotorVersion), so the waves a
// canary's candidate decides are validated under the candidate's settings
// and the others under the current version's; an empty or unknown version
// gets the current version's. It returns the version whose settings they
// are. Errors: ETRANSIENT, EINVALID (a stored block that does not decode).
func (r *Registry) ValidatorSettingsOf(ctx context.Context, version string) (ValidatorSettings, string, error) {
	st, err := r.cached(ctx)
	if err != nil {
		return ValidatorSettings{}, "", err
	}
	b, ok := st.bundles[version]
	if !ok && version == r.base.Version {
		b, ok = r.base, true
	}
	if !ok {
		return r.ValidatorSettings(ctx)
	}
	s, err := ParseValidatorSettings(b.Validators)
	if err != nil {
		return ValidatorSettings{}, b.Version, fmt.Errorf("motor %s: %w", b.Version, err)
	}
	return s, b.Version, nil
}

// profileModels are the fields of a model profile (reason.Config's JSON)
// that name a model the reasoner invokes.
type profileModels struct {
	Model          *string  `json:"model"`
	FallbackModels []string `json:"fallback_models"`
}

// checkModels refuses a bundle whose model profile names a model outside
// the registry's allowed list (when it has one).
func (r *Registry) checkModels(b Bundle) error {
	if r.models == nil {
		return nil
	}
	if t := bytes.TrimSpace(b.Model); len(t) == 0 || string(t) == "null" {
		return nil
	}
	var p profileModels
	if err := json.Unmarshal(b.Model, &p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return ora.Invalid("model."+te.Field, "a JSON %s is not a %s", te.Value, kindName(te.Type))
		}
		return ora.Invalid("model", "not a model profile (a JSON object): %v", err)
	}
	type named struct{ field, id string }
	var ids []named
	if p.Model != nil {
		ids = append(ids, named{"model.model", *p.Model})
	}
	for i, id := range p.FallbackModels {
		ids = append(ids, named{fmt.Sprintf("model.fallback_models[%d]", i), id})
	}
	for _, n := range ids {
		if !slices.Contains(r.models, n.id) {
			allowed := "none: the stack lets the reason function invoke no model"
			if len(r.models) > 0 {
				allowed = strings.Join(r.models, ", ")
			}
			return ora.Invalid(n.field, "motor %s: model %q is not one the reason function may invoke (allowed: %s)", b.Version, n.id, allowed)
		}
	}
	return nil
}
