package bedrock

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// GuardrailAPI is the part of the bedrockruntime client ApplyGuardrail
// calls; the SDK's *bedrockruntime.Client satisfies it.
type GuardrailAPI interface {
	ApplyGuardrail(ctx context.Context, in *bedrockruntime.ApplyGuardrailInput, opts ...func(*bedrockruntime.Options)) (*bedrockruntime.ApplyGuardrailOutput, error)
}

var _ GuardrailAPI = (*bedrockruntime.Client)(nil)

// Guard checks texts with a Bedrock guardrail (ApplyGuardrail).
type Guard struct {
	api GuardrailAPI
	g   Guardrail
}

// NewGuard returns a Guard applying g through api. Errors: EINVALID when g
// is not enabled or has no version.
func NewGuard(api GuardrailAPI, g Guardrail) (*Guard, error) {
	if !g.Enabled() {
		return nil, ora.Invalid("guardrail.id", "required")
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return &Guard{api: api, g: g}, nil
}

// GuardVerdict is what the guardrail said about the texts.
type GuardVerdict struct {
	// Intervened: the guardrail blocked or masked some of the content.
	Intervened bool
	// Reason is the guardrail's action reason, when it gave one.
	Reason string
	// Policies names the policies that intervened (e.g. "content:VIOLENCE",
	// "topic:deploy-to-prod", "word:CUSTOM", "pii:EMAIL").
	Policies []string
}

// Check applies the guardrail to texts as source ("INPUT" or "OUTPUT").
// Errors: EINVALID (no text, bad source, Bedrock rejected the request),
// ETRANSIENT, EFORBIDDEN, ENOTFOUND (no such guardrail or version),
// EINTERNAL; every message names the guardrail and the Bedrock error code.
func (g *Guard) Check(ctx context.Context, source string, texts ...string) (GuardVerdict, error) {
	if len(texts) == 0 {
		return GuardVerdict{}, ora.Invalid("guardrail.content", "at least one text is required")
	}
	src := types.GuardrailContentSource(source)
	if src != types.GuardrailContentSourceInput && src != types.GuardrailContentSourceOutput {
		return GuardVerdict{}, ora.Invalid("guardrail.source", "%q is not INPUT or OUTPUT", source)
	}
	in := &bedrockruntime.ApplyGuardrailInput{
		GuardrailIdentifier: aws.String(g.g.ID),
		GuardrailVersion:    aws.String(g.g.Version),
		Source:              src,
	}
	for _, t := range texts {
		in.Content = append(in.Content, &types.GuardrailContentBlockMemberText{Value: types.GuardrailTextBlock{Text: aws.String(t)}})
	}
	out, err := g.api.ApplyGuardrail(ctx, in)
	if err != nil {
		return GuardVerdict{}, fmt.Errorf("apply guardrail %s:%s: %w", g.g.ID, g.g.Version, translate("guardrail "+g.g.ID, err))
	}
	v := GuardVerdict{Intervened: out.Action == types.GuardrailActionGuardrailIntervened, Reason: aws.ToString(out.ActionReason)}
	for _, a := range out.Assessments {
		if p := a.ContentPolicy; p != nil {
			for _, f := range p.Filters {
				v.Policies = append(v.Policies, "content:"+string(f.Type))
			}
		}
		if p := a.TopicPolicy; p != nil {
			for _, t := range p.Topics {
				v.Policies = append(v.Policies, "topic:"+aws.ToString(t.Name))
			}
		}
		if p := a.WordPolicy; p != nil {
			for _, w := range p.CustomWords {
				v.Policies = append(v.Policies, "word:"+aws.ToString(w.Match))
			}
			for _, w := range p.ManagedWordLists {
				v.Policies = append(v.Policies, "word:"+string(w.Type))
			}
		}
		if p := a.SensitiveInformationPolicy; p != nil {
			for _, e := range p.PiiEntities {
				v.Policies = append(v.Policies, "pii:"+string(e.Type))
			}
			for _, r := range p.Regexes {
				v.Policies = append(v.Policies, "regex:"+aws.ToString(r.Name))
			}
		}
	}
	return v, nil
}
