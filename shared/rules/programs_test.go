package rules_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/rules"
)

const programsFile = `
version: "p1"
rules:
  - name: deploy-gate
    when: {field: payload.action, equals: deploy}
    program: PhaseTransitionValidator
  - name: opened
    when: {field: payload.action, in: [opened, deploy]}
    program: OPSBlockGenerator
    then: {action: notify, parameters: {message: opened}, confidence: 0.9, tier: 1, author_type: auditor, scope: {allowed_operations: [notify]}, reasoning: new}
unmatched: ignore
`

// A rule may name the program a model runs: ProgramFor returns the first
// matching rule that names one; the rules reasoner skips a rule that only
// names a program and decides with the next one.
func TestProgramPerRule(t *testing.T) {
	set, err := rules.Parse([]byte(programsFile))
	if err != nil {
		t.Fatal(err)
	}
	src := ora.Source{Type: ora.SourceWebhook, Name: "github", Provider: "github", EventType: "pull_request"}
	tests := []struct {
		action   string
		program  ora.ProgramID
		rule     string
		decision string // the rules reasoner's action type
	}{
		{"deploy", ora.ProgramPhaseTransitionValidator, "deploy-gate", "notify"},
		{"opened", ora.ProgramOPSBlockGenerator, "opened", "notify"},
		{"closed", "", "", "none"},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			sig := signal(t, "sig-"+tt.action, src, `{"action":"`+tt.action+`"}`)
			p, rule, ok, err := set.ProgramFor(sig, ora.OrientationPacket{})
			if err != nil || p != tt.program || rule != tt.rule || ok != (tt.program != "") {
				t.Errorf("ProgramFor = %q %q %v %v, want %q by %q", p, rule, ok, err, tt.program, tt.rule)
			}
			d, err := rules.New(set).Reason(context.Background(), ora.ReasonerInput{Signal: sig})
			if err != nil || d.ActionType != tt.decision || strings.Contains(d.Reasoning, "deploy-gate") {
				t.Errorf("rules reasoner: %s (%s) %v, want %s, never by deploy-gate", d.ActionType, d.Reasoning, err, tt.decision)
			}
		})
	}
}

// A program must be one of the four, and a rule needs then or a program.
func TestProgramPerRuleValidates(t *testing.T) {
	tests := []struct{ name, rule, field string }{
		{"unknown program", `{name: r, when: {field: payload.a, exists: true}, program: Nope}`, "rules[0](r).program"},
		{"neither then nor program", `{name: r, when: {field: payload.a, exists: true}}`, "rules[0](r).then"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rules.Parse([]byte("version: v\nunmatched: ignore\nrules:\n  - " + tt.rule + "\n"))
			if ora.ErrorCode(err) != ora.EINVALID || ora.ErrorField(err) != tt.field {
				t.Errorf("err %v (field %q), want EINVALID on %s", err, ora.ErrorField(err), tt.field)
			}
		})
	}
}
