package reason

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/ora"
)

// TestEmittedSchemasAreStrict: every schema ora sends with strict tool use
// (each program's observation, with and without tools, the batch's, the
// intent judge's and the ledger tools') is inside the subset Bedrock
// accepts once strictSchema has run, and a request's strict tools stay
// within the per-request limits.
func TestEmittedSchemasAreStrict(t *testing.T) {
	configured := act.StandardCatalogue(act.Config{HTTP: act.HTTPConfig{AllowedHosts: []string{"api.github.com"}}, Object: act.ObjectConfig{AllowedPrefixes: []string{"reports/"}}})
	schemas := map[string]string{
		"intent judge": intentSchema,
	}
	for _, p := range ora.Programs {
		decision := programs[p].schema
		if p == ora.ProgramSafeOPSDecision {
			decision = SafeOPSSchema(configured)
		}
		for _, tools := range []bool{false, true} {
			name := string(p) + " observation"
			if tools {
				name += " with tool_calls"
			}
			schemas[name] = payloadKind{program: p, decision: decision, toolCalls: tools}.schema()
		}
		schemas[string(p)+" batch"] = payloadKind{program: p, ids: []string{"a", "b", "c"}, decision: decision}.schema()
	}
	for id, d := range toolDefs {
		schemas["ledger tool "+id] = d.schema
	}
	for name, src := range schemas {
		t.Run(name, func(t *testing.T) {
			sent, err := bedrock.StrictSchema(json.RawMessage(src))
			if err != nil {
				t.Fatal(err)
			}
			st, err := bedrock.CheckStrict(sent)
			if err != nil {
				t.Fatalf("CheckStrict: %v\nschema sent: %s", err, sent)
			}
			if st.Optional > bedrock.MaxOptionalParams || st.Unions > bedrock.MaxUnionTypeParams {
				t.Errorf("%d optional and %d union-typed parameters: over the limits", st.Optional, st.Unions)
			}
		})
	}
	t.Run("observation and every ledger tool in one request", func(t *testing.T) {
		var sum bedrock.StrictStats
		srcs := []string{payloadKind{program: ora.ProgramSafeOPSDecision, decision: SafeOPSSchema(configured), toolCalls: true}.schema()}
		for _, d := range toolDefs {
			srcs = append(srcs, d.schema)
		}
		for _, src := range srcs {
			sent, _ := bedrock.StrictSchema(json.RawMessage(src))
			st, err := bedrock.CheckStrict(sent)
			if err != nil {
				t.Fatal(err)
			}
			sum.Optional += st.Optional
			sum.Unions += st.Unions
		}
		if sum.Optional > bedrock.MaxOptionalParams || sum.Unions > bedrock.MaxUnionTypeParams {
			t.Errorf("request totals %+v over the limits", sum)
		}
	})
}

// TestTypedUnion: a decision with real parameters for each configured type
// validates against the union; one with another type's parameters, an
// unknown type or free-form parameters does not.
func TestTypedUnion(t *testing.T) {
	cat := act.StandardCatalogue(act.Config{HTTP: act.HTTPConfig{AllowedHosts: []string{"api.github.com"}}})
	schema := SafeOPSSchema(cat)
	wrap := func(typ, params string) json.RawMessage {
		return json.RawMessage(`{"safety_check_summary":"checked","allowed_action":"PROCEED","action":{"type":"` + typ + `","parameters":` + params +
			`,"tier":2,"allowed_operations":["` + typ + `"],"forbidden_paths":[],"author_type":"architect"},"then":[]}`)
	}
	valid := map[string]string{
		act.TypeNone:            `{"reason":"a label change needs no answer"}`,
		act.TypeNotify:          `{"subject":"new issue","message":"issue 7 was opened by a first-time contributor"}`,
		act.TypeHTTPRequest:     `{"method":"POST","connection":"","path":"","url":"https://api.github.com/repos/o/r/issues/7/labels","body":"{\"labels\":[\"triage\"]}"}`,
		act.TypeObjectPut:       `{"key":"reports/7.md","content_type":"text/markdown","body":"# Issue 7"}`,
		act.TypeCommitmentOpen:  `{"title":"answer issue 7 within a day","id":""}`,
		act.TypeCommitmentClose: `{"id":"c-7"}`,
	}
	for _, d := range cat {
		t.Run(d.Type, func(t *testing.T) {
			params, ok := valid[d.Type]
			if !ok {
				t.Fatalf("no example for %s", d.Type)
			}
			v, err := decodePayload(ora.ProgramSafeOPSDecision, schema, wrap(d.Type, params))
			if err != nil {
				t.Fatalf("a real %s decision does not validate: %v", d.Type, err)
			}
			if got := v.(SafeOPSDecisionResult).Action; got.Type != d.Type || !json.Valid(got.Parameters) {
				t.Errorf("decoded %+v", got)
			}
		})
	}
	for name, raw := range map[string]json.RawMessage{
		"notify with http parameters":   wrap(act.TypeNotify, valid[act.TypeHTTPRequest]),
		"an unknown type":               wrap("github.comment", `{"body":"ack"}`),
		"free-form parameters":          wrap(act.TypeNotify, `{"message":"m","subject":"s","extra":1}`),
		"empty parameters for a notify": wrap(act.TypeNotify, `{}`),
	} {
		t.Run("refused: "+name, func(t *testing.T) {
			if _, err := decodePayload(ora.ProgramSafeOPSDecision, schema, raw); ora.ErrorCode(err) != ora.EINVALID {
				t.Errorf("err = %v, want EINVALID", err)
			}
		})
	}
	if !strings.Contains(schema, `"const":"none"`) {
		t.Error("the union has no none branch")
	}
}
