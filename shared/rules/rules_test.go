package rules_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/rules"
)

var now = time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)

func signal(t *testing.T, id string, src ora.Source, payload string) ora.NormalizedSignal {
	t.Helper()
	raw := []byte(payload)
	return ora.NormalizedSignal{
		ID: id, Source: src, Timestamp: now, NormalizedAt: now, DedupKey: "k-" + id,
		Payload: json.RawMessage(payload), RawDigest: ora.Digest(raw), Raw: raw,
	}
}

func webhook(provider, event string) ora.Source {
	return ora.Source{Type: ora.SourceWebhook, Name: provider, Provider: provider, EventType: event}
}

func parseDefault(t *testing.T) *rules.Set {
	t.Helper()
	set, err := rules.Parse(defaultrules.Default)
	if err != nil {
		t.Fatalf("the default rules file does not parse: %v", err)
	}
	return set
}

func TestDefaultRulesFile(t *testing.T) {
	set := parseDefault(t)
	r := rules.New(set, func(o *rules.Options) { o.Now = func() time.Time { return now } })
	tests := []struct {
		name       string
		source     ora.Source
		payload    string
		rule       string
		action     string
		confidence float64
		tier       int
		band       ora.ConfidenceBand
		author     ora.AuthorType
	}{
		{"test high", webhook("hmac", ""), `{"confidence":"high"}`, "test-high", "notify", 0.95, 1, ora.BandHigh, ora.AuthorAuditor},
		{"test medium", webhook("hmac", ""), `{"confidence":"medium"}`, "test-medium", "notify", 0.65, 2, ora.BandMedium, ora.AuthorAuditor},
		{"test low", webhook("hmac", ""), `{"confidence":"low"}`, "test-low", "commitment.open", 0.3, 3, ora.BandLow, ora.AuthorArchitect},
		{"test fail", webhook("hmac", ""), `{"confidence":"fail"}`, "test-fail", "http.request", 0.95, 1, ora.BandHigh, ora.AuthorAuditor},
		{"test without confidence", webhook("hmac", ""), `{"hello":"world"}`, "", "notify", 0.3, 3, ora.BandLow, ora.AuthorArchitect},
		{"confidence from another provider", webhook("partner", ""), `{"confidence":"high"}`, "", "notify", 0.3, 3, ora.BandLow, ora.AuthorArchitect},
		{"github push main", webhook("github", "push"), `{"ref":"refs/heads/main","repository":{"full_name":"o/r"},"pusher":{"name":"ana"},"after":"abc"}`, "github-push-default-branch", "notify", 0.9, 1, ora.BandHigh, ora.AuthorAuditor},
		{"github push branch", webhook("github", "push"), `{"ref":"refs/heads/feature","repository":{"full_name":"o/r"}}`, "github-push-other-branch", "notify", 0.7, 2, ora.BandMedium, ora.AuthorAuditor},
		{"github issue opened", webhook("github", "issues.opened"), `{"action":"opened","issue":{"number":7,"title":"Bug"},"repository":{"full_name":"o/r"}}`, "github-issue-opened", "commitment.open", 0.85, 2, ora.BandHigh, ora.AuthorAuditor},
		{"github issue reopened", webhook("github", "issues.reopened"), `{"action":"reopened","issue":{"number":7},"repository":{"full_name":"o/r"}}`, "github-issue-opened", "commitment.open", 0.85, 2, ora.BandHigh, ora.AuthorAuditor},
		{"github issue closed", webhook("github", "issues.closed"), `{"action":"closed","issue":{"number":7},"repository":{"full_name":"o/r"}}`, "github-issue-closed", "commitment.close", 0.85, 2, ora.BandHigh, ora.AuthorAuditor},
		{"github ping", webhook("github", "ping"), `{"zen":"Design for failure.","hook_id":42}`, "github-ping", "none", 0.95, 1, ora.BandHigh, ora.AuthorAuditor},
		{"github issue labeled", webhook("github", "issues.labeled"), `{"action":"labeled","issue":{"number":7}}`, "", "notify", 0.3, 3, ora.BandLow, ora.AuthorArchitect},
		{"slack message", webhook("slack", "event_callback"), `{"type":"event_callback","event":{"type":"message","text":"hi","channel":"C1"}}`, "slack-message", "notify", 0.7, 2, ora.BandMedium, ora.AuthorAuditor},
		{"slack bot message", webhook("slack", "event_callback"), `{"event":{"type":"message","bot_id":"B1"}}`, "", "notify", 0.3, 3, ora.BandLow, ora.AuthorArchitect},
		{"slack edited message", webhook("slack", "event_callback"), `{"event":{"type":"message","subtype":"message_changed"}}`, "", "notify", 0.3, 3, ora.BandLow, ora.AuthorArchitect},
		{"stripe dispute", webhook("stripe", "charge.dispute.created"), `{"id":"evt_1","type":"charge.dispute.created","data":{"object":{"id":"dp_1"}}}`, "stripe-payment-problem", "commitment.open", 0.65, 2, ora.BandMedium, ora.AuthorAuditor},
		{"stripe payment failed", webhook("stripe", ""), `{"id":"evt_2","type":"payment_intent.payment_failed"}`, "stripe-payment-problem", "commitment.open", 0.65, 2, ora.BandMedium, ora.AuthorAuditor},
		{"stripe payment succeeded", webhook("stripe", ""), `{"id":"evt_3","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","amount":2000,"currency":"eur"}}}`, "stripe-payment-succeeded", "notify", 0.9, 1, ora.BandHigh, ora.AuthorAuditor},
		{"stripe other event", webhook("stripe", ""), `{"id":"evt_4","type":"customer.created"}`, "", "notify", 0.3, 3, ora.BandLow, ora.AuthorArchitect},
		{"schedule", ora.Source{Type: ora.SourceSchedule, Schedule: "cron(0 * * * ? *)", JobName: "hourly"}, `{}`, "schedule-tick", "notify", 0.9, 1, ora.BandHigh, ora.AuthorAuditor},
		{"object created", ora.Source{Type: ora.SourceObject, Bucket: "b", Path: "in/a.txt", Event: "create"}, `{}`, "object-created", "notify", 0.85, 1, ora.BandHigh, ora.AuthorAuditor},
		{"object deleted", ora.Source{Type: ora.SourceObject, Bucket: "b", Path: "in/a.txt", Event: "delete"}, `{}`, "object-deleted", "notify", 0.6, 2, ora.BandMedium, ora.AuthorAuditor},
		{"table insert", ora.Source{Type: ora.SourceTable, Table: "commitments", Event: "insert"}, `{}`, "table-insert-or-modify", "notify", 0.85, 1, ora.BandHigh, ora.AuthorAuditor},
		{"table remove", ora.Source{Type: ora.SourceTable, Table: "commitments", Event: "remove"}, `{}`, "table-remove", "notify", 0.6, 2, ora.BandMedium, ora.AuthorAuditor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig := signal(t, "sig-"+strings.ReplaceAll(tt.name, " ", "-"), tt.source, tt.payload)
			m, err := set.Evaluate(sig)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if m.Rule != tt.rule {
				t.Errorf("rule: got %q, want %q", m.Rule, tt.rule)
			}
			d, err := r.Reason(context.Background(), ora.ReasonerInput{Signal: sig, Packet: ora.OrientationPacket{Digest: "pd"}})
			if err != nil {
				t.Fatalf("Reason: %v", err)
			}
			if err := d.Validate(); err != nil {
				t.Errorf("decision does not validate: %v", err)
			}
			if d.ActionType != tt.action || d.Confidence != tt.confidence || d.Tier != tt.tier || d.AuthorType != tt.author {
				t.Errorf("got %s %v tier %d %s, want %s %v tier %d %s", d.ActionType, d.Confidence, d.Tier, d.AuthorType, tt.action, tt.confidence, tt.tier, tt.author)
			}
			if got := d.Band(); got != tt.band {
				t.Errorf("band: got %s, want %s", got, tt.band)
			}
			// What the actor requires of each action's parameters, even for a sparse payload.
			var params map[string]any
			if err := json.Unmarshal(d.Parameters, &params); err != nil {
				t.Fatalf("parameters %s: %v", d.Parameters, err)
			}
			required := map[string]string{"notify": "message", "commitment.open": "title", "commitment.close": "id", "http.request": "url", "none": "reason"}[d.ActionType]
			if s, _ := params[required].(string); strings.TrimSpace(s) == "" {
				t.Errorf("%s parameters %s: %q must be a non-empty string", d.ActionType, d.Parameters, required)
			}
			if d.RulesVersion != set.Version() || d.PacketDigest != "pd" || !d.Timestamp.Equal(now) {
				t.Errorf("got rules_version %q packet_digest %q timestamp %v, want %q, pd, %v", d.RulesVersion, d.PacketDigest, d.Timestamp, set.Version(), now)
			}
		})
	}
}

func TestDefaultRulesParameters(t *testing.T) {
	set := parseDefault(t)
	params := func(t *testing.T, src ora.Source, payload string) map[string]any {
		t.Helper()
		m, err := set.Evaluate(signal(t, "sig-1", src, payload))
		if err != nil {
			t.Fatalf("Evaluate: %v", err)
		}
		var p map[string]any
		if err := json.Unmarshal(m.Parameters, &p); err != nil {
			t.Fatalf("parameters %s: %v", m.Parameters, err)
		}
		return p
	}
	t.Run("fail targets a host that is not allow-listed", func(t *testing.T) {
		p := params(t, webhook("hmac", ""), `{"confidence":"fail"}`)
		u, err := url.Parse(fmt.Sprint(p["url"]))
		if err != nil || u.Hostname() == "" {
			t.Fatalf("url %v: %v", p["url"], err)
		}
		if !strings.HasSuffix(u.Hostname(), ".invalid") {
			t.Errorf("host %q: want a reserved .invalid name no allow-list can hold", u.Hostname())
		}
		body, _ := p["body"].(map[string]any)
		if body["signal_id"] != "sig-1" {
			t.Errorf("body.signal_id: got %v, want sig-1", body["signal_id"])
		}
	})
	t.Run("github issue templates", func(t *testing.T) {
		p := params(t, webhook("github", "issues.opened"), `{"action":"opened","issue":{"number":7,"title":"Bug","html_url":"https://github.com/o/r/issues/7"},"repository":{"full_name":"o/r"}}`)
		want := map[string]any{"id": "github-issue-o/r-7", "title": "GitHub issue #7: Bug", "url": "https://github.com/o/r/issues/7"}
		for k, v := range want {
			if p[k] != v {
				t.Errorf("%s: got %v, want %v", k, p[k], v)
			}
		}
	})
}

// set parses a file made of one rule with the given predicate (indented under
// when:) and a default.
func oneRule(t *testing.T, when string) *rules.Set {
	t.Helper()
	src := "version: v1\nrules:\n  - name: r\n    when:\n" + indent(when, "      ") +
		"    then: {action: notify, parameters: {message: m}, confidence: 0.9, tier: 1, author_type: auditor, reasoning: matched}\n" +
		"default: {action: notify, parameters: {message: m}, confidence: 0.1, tier: 3, author_type: architect, reasoning: none}\n"
	set, err := rules.Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse:\n%s\n%v", src, err)
	}
	return set
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestPredicates(t *testing.T) {
	payload := `{"n":5,"s":"hello","b":true,"z":null,"list":[{"id":"a"},{"id":"b"}],"x-y":"dash","nested":{"k":"v"}}`
	tests := []struct {
		name string
		when string
		want bool
	}{
		{"equals string", "field: payload.s\nequals: hello", true},
		{"equals string differs", "field: payload.s\nequals: world", false},
		{"equals number", "field: payload.n\nequals: 5", true},
		{"equals never crosses types", "field: payload.n\nequals: \"5\"", false},
		{"equals bool", "field: payload.b\nequals: true", true},
		{"equals null", "field: payload.z\nequals: null", true},
		{"equals on a missing field", "field: payload.missing\nequals: hello", false},
		{"in", "field: payload.s\nin: [a, hello]", true},
		{"in misses", "field: payload.s\nin: [a, b]", false},
		{"exists", "field: payload.nested.k\nexists: true", true},
		{"exists false on a missing field", "field: payload.nope\nexists: false", true},
		{"exists false on a present field", "field: payload.s\nexists: false", false},
		{"matches", "field: payload.s\nmatches: \"^h.l+o$\"", true},
		{"matches misses", "field: payload.s\nmatches: \"^x\"", false},
		{"matches a number is false", "field: payload.n\nmatches: \"5\"", false},
		{"gt", "field: payload.n\ngt: 4", true},
		{"gt boundary", "field: payload.n\ngt: 5", false},
		{"lt", "field: payload.n\nlt: 5.5", true},
		{"gt and lt make a range", "field: payload.n\ngt: 1\nlt: 3", false},
		{"gt on a string is false", "field: payload.s\ngt: 1", false},
		{"array index", "field: payload.list[1].id\nequals: b", true},
		{"wildcard holds when any value does", "field: payload.list[*].id\nequals: b", true},
		{"bracket path for odd keys", "field: \"$.payload['x-y']\"\nequals: dash", true},
		{"source field", "field: source.provider\nequals: hmac", true},
		{"signal id", "field: id\nequals: sig-p", true},
		{"all", "all:\n  - {field: payload.s, equals: hello}\n  - {field: payload.n, gt: 1}", true},
		{"all with one false", "all:\n  - {field: payload.s, equals: hello}\n  - {field: payload.n, gt: 10}", false},
		{"any", "any:\n  - {field: payload.s, equals: nope}\n  - {field: payload.n, lt: 10}", true},
		{"any all false", "any:\n  - {field: payload.s, equals: nope}\n  - {field: payload.n, lt: 1}", false},
		{"not", "not: {field: payload.s, equals: nope}", true},
		{"nested", "all:\n  - not:\n      any:\n        - {field: payload.b, equals: false}\n        - {field: payload.missing, exists: true}\n  - {field: \"payload.list[0].id\", in: [a]}", true},
	}
	sig := signal(t, "sig-p", webhook("hmac", ""), payload)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := oneRule(t, tt.when).Evaluate(sig)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if got := m.Rule == "r"; got != tt.want {
				t.Errorf("matched: got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFirstMatchWins(t *testing.T) {
	src := `
version: v2
rules:
  - name: first
    when: {field: payload.a, equals: 1}
    then: {action: notify, parameters: {message: m}, confidence: 0.9, tier: 1, author_type: auditor, reasoning: first}
  - name: second
    when: {field: payload.a, exists: true}
    then: {action: object.put, parameters: {key: "out/{{ id }}.json"}, confidence: 0.6, tier: 2, author_type: auditor, reasoning: second}
default: {action: notify, parameters: {message: m}, confidence: 0.1, tier: 3, author_type: architect, reasoning: none}
`
	set, err := rules.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != 2 || set.Version() != "v2" {
		t.Errorf("got %d rules, version %q; want 2, v2", set.Len(), set.Version())
	}
	tests := []struct{ payload, want string }{
		{`{"a":1}`, "first"},
		{`{"a":2}`, "second"},
		{`{"b":1}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.payload, func(t *testing.T) {
			m, err := set.Evaluate(signal(t, "s", webhook("x", ""), tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			if m.Rule != tt.want {
				t.Errorf("got %q, want %q", m.Rule, tt.want)
			}
		})
	}
}

func TestTemplates(t *testing.T) {
	src := `
version: v1
rules: []
default:
  action: notify
  parameters:
    whole_number: "{{ payload.n }}"
    whole_object: "{{payload.o}}"
    text: "n={{ payload.n }} s={{ payload.s }} missing=[{{ payload.nope }}]"
    missing: "{{ payload.nope }}"
    list: ["{{ source.provider }}", 3, true]
    plain: no templates here
    message: "{{ payload.s | default: none }}"
    fallback: "{{ payload.nope | default: 'n/a' }}"
    fallback_number: "{{ payload.nope | default: 7 }}"
    present_over_default: "{{ payload.s | default: 'unused' }}"
  confidence: 0.1
  tier: 3
  author_type: architect
  reasoning: none
`
	set, err := rules.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, err := set.Evaluate(signal(t, "s", webhook("gh", ""), `{"n":2.5,"s":"x","o":{"k":[1]}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"fallback":"n/a","fallback_number":7,"list":["gh",3,true],"message":"x","missing":null,"plain":"no templates here","present_over_default":"x","text":"n=2.5 s=x missing=[]","whole_number":2.5,"whole_object":{"k":[1]}}`
	if string(m.Parameters) != want {
		t.Errorf("parameters:\n got %s\nwant %s", m.Parameters, want)
	}
}

func TestDecisionIDs(t *testing.T) {
	parse := func(version string) *rules.Reasoner {
		set, err := rules.Parse([]byte("version: " + version + "\nrules: []\ndefault: {action: notify, parameters: {message: m}, confidence: 0.9, tier: 1, author_type: auditor, reasoning: r}\n"))
		if err != nil {
			t.Fatal(err)
		}
		return rules.New(set)
	}
	decide := func(r *rules.Reasoner, id string) ora.ReasonerDecision {
		t.Helper()
		d, err := r.Reason(context.Background(), ora.ReasonerInput{Signal: signal(t, id, webhook("x", ""), `{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	v1, v2 := parse("v1"), parse("v2")
	a, b := decide(v1, "sig-a"), decide(v1, "sig-a")
	if a.ID != b.ID || a.ID != rules.DecisionID("sig-a", "v1") {
		t.Errorf("retry: got ids %s and %s, want both %s", a.ID, b.ID, rules.DecisionID("sig-a", "v1"))
	}
	if c := decide(v1, "sig-b"); c.ID == a.ID {
		t.Errorf("another signal got the same id %s", c.ID)
	}
	if c := decide(v2, "sig-a"); c.ID == a.ID {
		t.Errorf("another rules version got the same id %s", c.ID)
	}
	if string(a.Parameters) != string(b.Parameters) || a.Reasoning != b.Reasoning || a.Scope.Ref != "rules/v1#default" {
		t.Errorf("retry differs or bad scope ref: %+v vs %+v", a, b)
	}
	if _, err := v1.Reason(context.Background(), ora.ReasonerInput{}); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("empty signal: got %v, want EINVALID", err)
	}
	bad := signal(t, "sig-c", webhook("x", ""), `{}`)
	bad.Payload = json.RawMessage(`{not json`)
	if _, err := v1.Reason(context.Background(), ora.ReasonerInput{Signal: bad}); ora.ErrorField(err) != "signal.payload" {
		t.Errorf("bad payload: got %v, want EINVALID on signal.payload", err)
	}
}

func TestParseErrors(t *testing.T) {
	const then = "then: {action: notify, parameters: {message: m}, confidence: 0.9, tier: 1, author_type: auditor, reasoning: r}"
	const def = "default: {action: notify, parameters: {message: m}, confidence: 0.1, tier: 3, author_type: architect, reasoning: r}\n"
	rule := func(name, when, then string) string {
		return "version: v1\nrules:\n  - name: " + name + "\n    when: " + when + "\n    " + then + "\n" + def
	}
	tests := []struct {
		name, src, field string
	}{
		{"empty file", "", "version"},
		{"no version", "rules: []\n" + def, "version"},
		{"unknown key", "version: v1\nrulez: []\n" + def, "rules_file"},
		{"no default", "version: v1\nrules: []\n", "default"},
		{"rule without name", "version: v1\nrules:\n  - when: {field: id, exists: true}\n    " + then + "\n" + def, "rules[0].name"},
		{"duplicate name", "version: v1\nrules:\n  - name: a\n    when: {field: id, exists: true}\n    " + then + "\n  - name: a\n    when: {field: id, exists: true}\n    " + then + "\n" + def, "rules[1](a).name"},
		{"no when", "version: v1\nrules:\n  - name: a\n    " + then + "\n" + def, "rules[0](a).when"},
		{"no then", "version: v1\nrules:\n  - name: a\n    when: {field: id, exists: true}\n" + def, "rules[0](a).then"},
		{"unknown operator", rule("a", "{field: id, equal: x}", then), "rules_file"},
		{"field without operator", rule("a", "{field: id}", then), "rules[0](a).when"},
		{"operator without field", rule("a", "{equals: x}", then), "rules[0](a).when.field"},
		{"bad regexp", rule("a", "{all: [{field: id, exists: true}, {field: id, matches: \"(\"}]}", then), "rules[0](a).when.all[1].matches"},
		{"bad path", rule("a", "{field: \"payload[\", exists: true}", then), "rules[0](a).when.field"},
		{"empty all", rule("a", "{all: []}", then), "rules[0](a).when.all"},
		{"two combinators", rule("a", "{all: [{field: id, exists: true}], not: {field: id, exists: true}}", then), "rules[0](a).when"},
		{"combinator and field", rule("a", "{not: {field: id, exists: true}, field: id, equals: x}", then), "rules[0](a).when"},
		{"empty in", rule("a", "{field: id, in: []}", then), "rules[0](a).when.in"},
		{"in with a map", rule("a", "{field: id, in: [{a: 1}]}", then), "rules[0](a).when.in[0]"},
		{"equals a list", rule("a", "{field: id, equals: [1]}", then), "rules[0](a).when.equals"},
		{"exists with another operator", rule("a", "{field: id, exists: true, equals: x}", then), "rules[0](a).when.exists"},
		{"unknown action", rule("a", "{field: id, exists: true}", "then: {action: rm.rf, confidence: 0.9, tier: 1, author_type: auditor, reasoning: r}"), "rules[0](a).then.action"},
		{"no confidence", rule("a", "{field: id, exists: true}", "then: {action: notify, parameters: {message: m}, tier: 1, author_type: auditor, reasoning: r}"), "rules[0](a).then.confidence"},
		{"confidence above 1", rule("a", "{field: id, exists: true}", "then: {action: notify, parameters: {message: m}, confidence: 1.5, tier: 1, author_type: auditor, reasoning: r}"), "rules[0](a).then.confidence"},
		{"tier 0", rule("a", "{field: id, exists: true}", "then: {action: notify, parameters: {message: m}, confidence: 0.5, tier: 0, author_type: auditor, reasoning: r}"), "rules[0](a).then.tier"},
		{"author executor", rule("a", "{field: id, exists: true}", "then: {action: notify, parameters: {message: m}, confidence: 0.5, tier: 1, author_type: executor, reasoning: r}"), "rules[0](a).then.author_type"},
		{"no reasoning", rule("a", "{field: id, exists: true}", "then: {action: notify, parameters: {message: m}, confidence: 0.5, tier: 1, author_type: auditor}"), "rules[0](a).then.reasoning"},
		{"scope without the action", rule("a", "{field: id, exists: true}", "then: {action: notify, parameters: {message: m}, confidence: 0.5, tier: 1, author_type: auditor, reasoning: r, scope: {allowed_operations: [object.put]}}"), "rules[0](a).then.scope.allowed_operations"},
		{"scope with an unknown operation", rule("a", "{field: id, exists: true}", "then: {action: notify, parameters: {message: m}, confidence: 0.5, tier: 1, author_type: auditor, reasoning: r, scope: {allowed_operations: [notify, shell]}}"), "rules[0](a).then.scope.allowed_operations[1]"},
		{"empty forbidden path", rule("a", "{field: id, exists: true}", "then: {action: notify, parameters: {message: m}, confidence: 0.5, tier: 1, author_type: auditor, reasoning: r, scope: {forbidden_paths: [\"\"]}}"), "rules[0](a).then.scope.forbidden_paths[0]"},
		{"bad template", rule("a", "{field: id, exists: true}", "then: {action: notify, parameters: {m: \"{{ payload[ }}\"}, confidence: 0.5, tier: 1, author_type: auditor, reasoning: r}"), "rules[0](a).then.parameters.m"},
		{"bad default", "version: v1\nrules: []\ndefault: {action: notify, parameters: {message: m}, confidence: 0.1, tier: 4, author_type: architect, reasoning: r}\n", "default.tier"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rules.Parse([]byte(tt.src))
			if ora.ErrorCode(err) != ora.EINVALID {
				t.Fatalf("got %v, want an EINVALID error", err)
			}
			if got := ora.ErrorField(err); got != tt.field {
				t.Errorf("field: got %q, want %q (error: %v)", got, tt.field, err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("version: from-file\nrules: []\ndefault: {action: notify, parameters: {message: m}, confidence: 0.1, tier: 3, author_type: architect, reasoning: r}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, version, field string
	}{
		{"the file when a path is given", good, "from-file", ""},
		{"the fallback when no path is given", "", parseDefault(t).Version(), ""},
		{"a missing file", filepath.Join(dir, "nope.yaml"), "", "rules_file"},
		{"an invalid file", bad, "", "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := rules.Load(tt.path, defaultrules.Default)
			if tt.field != "" {
				if got := ora.ErrorField(err); got != tt.field {
					t.Fatalf("got %v, want EINVALID on %s", err, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if set.Version() != tt.version {
				t.Errorf("version: got %q, want %q", set.Version(), tt.version)
			}
		})
	}
}

// BenchmarkReason decides about a Stripe event with the default rules file:
// eleven rules are tried, the last matches.
func BenchmarkReason(b *testing.B) {
	set, err := rules.Parse(defaultrules.Default)
	if err != nil {
		b.Fatal(err)
	}
	r := rules.New(set)
	raw := `{"id":"evt_3","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","amount":2000,"currency":"eur"}}}`
	in := ora.ReasonerInput{Signal: ora.NormalizedSignal{
		ID: "sig-b", Source: webhook("stripe", ""), Timestamp: now, NormalizedAt: now, DedupKey: "k",
		Payload: json.RawMessage(raw), RawDigest: ora.Digest([]byte(raw)),
	}}
	for b.Loop() {
		if _, err := r.Reason(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// A value interpolated into an http.request url is escaped for the component
// it lands in: it can never add or climb a path segment, start a query or a
// fragment, or change the host.
func TestURLTemplatesEscapePerComponent(t *testing.T) {
	src := `
version: v1
rules: []
default:
  action: http.request
  parameters:
    url: "https://api.example.com/repos/{{ payload.repo }}/issues?label={{ payload.label }}#{{ payload.frag }}"
    body: "{{ payload.repo }}"
  confidence: 0.1
  tier: 3
  author_type: architect
  reasoning: none
`
	set, err := rules.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, payload, want string }{
		{"traversal", `{"repo":"a/../../admin","label":"x","frag":"f"}`, "https://api.example.com/repos/a%2F..%2F..%2Fadmin/issues?label=x#f"},
		{"query and fragment in a path value", `{"repo":"x?y=1#z","label":"x","frag":"f"}`, "https://api.example.com/repos/x%3Fy=1%23z/issues?label=x#f"},
		{"a whole dot-dot segment", `{"repo":"..","label":"x","frag":"f"}`, "https://api.example.com/repos/%2E%2E/issues?label=x#f"},
		{"query value", `{"repo":"r","label":"a&admin=1 b","frag":"f"}`, "https://api.example.com/repos/r/issues?label=a%26admin%3D1+b#f"},
		{"fragment value", `{"repo":"r","label":"x","frag":"a b/c"}`, "https://api.example.com/repos/r/issues?label=x#a%20b%2Fc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := set.Evaluate(signal(t, "s", webhook("gh", ""), tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			var p struct {
				URL  string `json:"url"`
				Body string `json:"body"`
			}
			if err := json.Unmarshal(m.Parameters, &p); err != nil {
				t.Fatal(err)
			}
			if p.URL != tt.want {
				t.Errorf("url\n got %s\nwant %s", p.URL, tt.want)
			}
			u, err := url.Parse(p.URL)
			if err != nil || u.Host != "api.example.com" {
				t.Errorf("host %q (%v), want api.example.com", u.Host, err)
			}
		})
	}
}

// unmatched: ignore decides none, with the reason, for what no rule matches;
// escalate (or no key) uses the default outcome; anything else is refused.
func TestUnmatched(t *testing.T) {
	const rule = `version: "u.1"
rules:
  - name: pushes
    when: {field: source.event_type, equals: push}
    then: {action: notify, parameters: {message: m}, confidence: 0.9, tier: 1, author_type: auditor, reasoning: r}
`
	const def = "default: {action: notify, parameters: {message: unmatched}, confidence: 0.3, tier: 3, author_type: architect, reasoning: d}\n"
	tests := []struct {
		name, file       string
		wantErr          string
		action, contains string
		band             ora.ConfidenceBand
	}{
		{"ignore", rule + "unmatched: ignore\n", "", "none", "no rule matched webhook issues.opened", ora.BandHigh},
		{"escalate", rule + "unmatched: escalate\n" + def, "", "notify", "unmatched", ora.BandLow},
		{"escalate by default", rule + def, "", "notify", "unmatched", ora.BandLow},
		{"ignore with a default", rule + "unmatched: ignore\n" + def, "remove default", "", "", ""},
		{"escalate without a default", rule + "unmatched: escalate\n", "or set unmatched: ignore", "", "", ""},
		{"a typo", rule + "unmatched: drop\n" + def, `"drop" is not ignore or escalate`, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := rules.Parse([]byte(tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse: %v, want an error saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d, err := rules.New(set, func(o *rules.Options) { o.Now = func() time.Time { return now } }).Reason(context.Background(),
				ora.ReasonerInput{Signal: signal(t, "sig-u", webhook("github", "issues.opened"), `{"action":"opened"}`)})
			if err != nil {
				t.Fatal(err)
			}
			if d.ActionType != tt.action || d.Band() != tt.band || !strings.Contains(string(d.Parameters), tt.contains) {
				t.Errorf("decision %s %s %s, want %s %s with %q", d.ActionType, d.Band(), d.Parameters, tt.action, tt.band, tt.contains)
			}
		})
	}
}
