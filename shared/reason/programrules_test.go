package reason_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/rules"
)

// programRules is a motor version's rules file whose rules name programs:
// one by the payload, one by the packet (a failed check among its facts).
const programRules = `
version: "2026-11-26.1"
rules:
  - name: ship-check
    when: {field: payload.action, equals: ready_for_review}
    program: PhaseTransitionValidator
  - name: failed-checks
    when: {field: orientation.counts.ci, gt: 0}
    program: GuardFailureInterpreter
  - name: label-opened
    when: {field: payload.action, equals: opened}
    program: OPSBlockGenerator
    then: {action: notify, parameters: {message: opened}, confidence: 0.9, tier: 1, author_type: auditor, scope: {allowed_operations: [notify]}, reasoning: a new pull request}
unmatched: ignore
`

// TestReasonProgramPerRule: a rule of the motor's rules file may name the
// program; the first matching rule that names one wins over the
// configuration's routes, and a signal no such rule matches falls back to
// the routes (then SafeOPSDecision).
func TestReasonProgramPerRule(t *testing.T) {
	set, err := rules.Parse([]byte(programRules))
	if err != nil {
		t.Fatal(err)
	}
	withAction := func(action string) ora.ReasonerInput {
		in := input("sig-" + action)
		in.Signal.Payload = []byte(`{"action":"` + action + `","number":7}`)
		return in
	}
	failing := withAction("edited")
	failing.Packet.Bands = []ora.PacketBand{{BandBudget: ora.BandBudget{Band: ora.BandObjectives}, Facts: []ora.Fact{
		{ID: "f1", SourceType: "ci", Normalized: []byte(`{"check":"build","conclusion":"failure"}`)},
	}}}
	tests := []struct {
		name   string
		in     ora.ReasonerInput
		routes []reason.ProgramRoute
		want   ora.ProgramID
	}{
		{"a rule on the payload", withAction("ready_for_review"), nil, ora.ProgramPhaseTransitionValidator},
		{"a rule on the packet", failing, nil, ora.ProgramGuardFailureInterpreter},
		{"a rule wins over a route", withAction("opened"), []reason.ProgramRoute{{Source: "github", Program: ora.ProgramPhaseTransitionValidator}}, ora.ProgramOPSBlockGenerator},
		{"no rule: the route", withAction("closed"), []reason.ProgramRoute{{Source: "github", Program: ora.ProgramPhaseTransitionValidator}}, ora.ProgramPhaseTransitionValidator},
		{"no rule, no route: SafeOPSDecision", withAction("closed"), nil, ora.ProgramSafeOPSDecision},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Programs = tc.routes
			srv := bedrocktest.New(t, stage(0.95, 3, "observed", payloads[tc.want]))
			r, err := reason.NewReasoner(bedrock.New(srv.Client(1)), cfg, func(o *reason.Options) {
				o.Now, o.Rules = func() time.Time { return now }, set
			})
			if err != nil {
				t.Fatal(err)
			}
			d, err := r.Reason(context.Background(), tc.in)
			if err != nil {
				t.Fatalf("Reason: %v", err)
			}
			if q := srv.Requests(); len(q) != 1 || !strings.Contains(prefixOf(q[0]), "PROGRAM: "+string(tc.want)) {
				t.Fatalf("the model was not asked to run %s", tc.want)
			}
			if d.Model.Program != tc.want {
				t.Errorf("trace program %s, want %s", d.Model.Program, tc.want)
			}
		})
	}
}
