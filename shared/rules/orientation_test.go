package rules_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/rules"
)

// ledgerStore is a hand-written orient.Store: the open commitments and the
// recent entries of each kind it holds.
type ledgerStore struct {
	commitments []ora.Commitment
	recent      map[ora.EntryKind][]ora.Entry
}

func (s ledgerStore) Append(_ context.Context, e ora.Entry) (ora.Entry, error) { return e, nil }
func (s ledgerStore) Entries(context.Context, string) ([]ora.Entry, error) {
	return nil, ora.Errorf(ora.ENOTFOUND, "no entries")
}
func (s ledgerStore) Recent(_ context.Context, kind ora.EntryKind, from, to time.Time, limit int) ([]ora.Entry, error) {
	var out []ora.Entry
	for _, e := range s.recent[kind] {
		if !e.CreatedAt.Before(from) && e.CreatedAt.Before(to) && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}
func (s ledgerStore) OpenCommitments(_ context.Context, limit int) ([]ora.Commitment, error) {
	return s.commitments[:min(limit, len(s.commitments))], nil
}

// compiledPacket orients sig over store as a wave does: the default plan's
// ledger jobs, each observed by the fetcher, the facts compiled into a packet.
func compiledPacket(t *testing.T, store ledgerStore, sig ora.NormalizedSignal) ora.OrientationPacket {
	t.Helper()
	ctx := context.Background()
	f := orient.NewFetcher(store)
	var facts []ora.Fact
	for _, j := range orient.Plan(sig) {
		got, err := f.Observe(ctx, sig.ID, j)
		if err != nil {
			t.Fatalf("observe %s: %v", j.ID, err)
		}
		facts = append(facts, got...)
	}
	p, err := orient.Compile(sig, facts)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return p
}

// contextRules decides a GitHub issue by what the packet holds: a reminder
// when a commitment about flaky builds is open, a pause when a notify
// failed lately, a note when two or more commitments are open, else the
// default.
const contextRules = `
version: ctx-1
rules:
  - name: known-flake
    when:
      all:
        - {field: source.event_type, equals: issues.opened}
        - {field: "orientation.open_commitments[*].title", matches: "(?i)flaky build"}
    then:
      action: notify
      parameters: {subject: "known flake", message: "{{ orientation.counts.open_commitments }} open commitments; see the flaky build one"}
      confidence: 0.9
      tier: 1
      author_type: auditor
      reasoning: an open commitment already tracks flaky builds
  - name: notify-failing
    when:
      field: "orientation.recent_actions[?(@.body.type == 'notify' && @.body.outcome == 'failure')].signal_id"
      exists: true
    then:
      action: none
      parameters: {reason: notify failed lately}
      confidence: 0.9
      tier: 1
      author_type: auditor
      reasoning: the last notify failed, so another would too
  - name: busy
    when: {field: orientation.counts.open_commitments, gt: 1}
    then:
      action: notify
      parameters: {subject: busy, message: several commitments are open}
      confidence: 0.9
      tier: 1
      author_type: auditor
      reasoning: several commitments are open
default:
  action: notify
  parameters: {subject: new issue, message: "new issue: {{ payload.issue.title }}"}
  confidence: 0.9
  tier: 1
  author_type: auditor
  reasoning: nothing in the context changes the default
`

// TestRulesReadTheOrientationPacket: predicates test the wave's compiled
// packet (open commitments, recent actions, counts by family), so the same
// signal gets a different decision in a different context.
func TestRulesReadTheOrientationPacket(t *testing.T) {
	set, err := rules.Parse([]byte(contextRules))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	r := rules.New(set, func(o *rules.Options) { o.Now = func() time.Time { return now } })
	sig := signal(t, "sig-ctx", webhook("github", "issues.opened"), `{"action":"opened","issue":{"number":42,"title":"CI red again"}}`)
	commitment := func(id, title string) ora.Commitment {
		return ora.Commitment{ID: id, SignalID: "sig-" + id, Title: title, Status: ora.CommitmentOpen, OpenedAt: now.Add(-48 * time.Hour), Version: 1}
	}
	evidence := func(signalID, typ, outcome string, at time.Time) ora.Entry {
		e, err := ora.NewEntry(signalID, ora.KindExecutionEvidence, "0", act.Evidence{DecisionID: "d-" + signalID, SignalID: signalID, Type: typ, Outcome: outcome, At: at})
		if err != nil {
			t.Fatal(err)
		}
		e.CreatedAt = at
		return e
	}
	tests := []struct {
		name    string
		store   ledgerStore
		rule    string
		message string
	}{
		{"empty context", ledgerStore{}, "", ""},
		{"an open commitment on the subject", ledgerStore{commitments: []ora.Commitment{commitment("c1", "Fix the flaky build on main")}}, "known-flake",
			"1 open commitments; see the flaky build one"},
		{"a recent failed notify", ledgerStore{recent: map[ora.EntryKind][]ora.Entry{ora.KindExecutionEvidence: {
			evidence("sig-old", act.TypeNotify, act.OutcomeFailure, now.Add(-time.Hour))}}}, "notify-failing", ""},
		{"a recent successful notify", ledgerStore{recent: map[ora.EntryKind][]ora.Entry{ora.KindExecutionEvidence: {
			evidence("sig-old", act.TypeNotify, act.OutcomeSuccess, now.Add(-time.Hour))}}}, "", ""},
		{"two unrelated commitments", ledgerStore{commitments: []ora.Commitment{commitment("c1", "Ship 1.2"), commitment("c2", "Rotate keys")}}, "busy", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := compiledPacket(t, tc.store, sig)
			if p.Digest == "" {
				t.Fatal("the compiled packet has no digest")
			}
			d, err := r.Reason(context.Background(), ora.ReasonerInput{Signal: sig, Packet: p})
			if err != nil {
				t.Fatalf("Reason: %v", err)
			}
			want := "rules/ctx-1#" + tc.rule
			if tc.rule == "" {
				want = "rules/ctx-1#default"
			}
			if d.Scope.Ref != want {
				t.Errorf("decided by %s, want %s", d.Scope.Ref, want)
			}
			if d.PacketDigest != p.Digest {
				t.Errorf("packet digest %q, want %q", d.PacketDigest, p.Digest)
			}
			if tc.message != "" {
				var params struct{ Message string }
				_ = json.Unmarshal(d.Parameters, &params)
				if params.Message != tc.message {
					t.Errorf("message %q, want %q", params.Message, tc.message)
				}
			}
		})
	}
}

// TestOrientationCountsAlwaysHaveTheLedgerQueries: the four ledger queries
// are counted even when the packet has none of their facts, so "lt: 1"
// holds for an empty context.
func TestOrientationCountsAlwaysHaveTheLedgerQueries(t *testing.T) {
	set, err := rules.Parse([]byte(`
version: c-1
rules:
  - name: quiet
    when:
      all:
        - {field: orientation.counts.open_commitments, lt: 1}
        - {field: "$.orientation.counts.recent_actions", lt: 1}
        - {field: "$['orientation'].counts.workspace_state", lt: 1}
        - {field: orientation.counts.actor_history, lt: 1}
    then: {action: none, parameters: {reason: quiet}, confidence: 0.9, tier: 1, author_type: auditor, reasoning: nothing in flight}
default: {action: notify, parameters: {subject: s, message: m}, confidence: 0.3, tier: 1, author_type: architect, reasoning: something in flight}
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	sig := signal(t, "sig-q", webhook("github", "issues.opened"), `{"action":"opened"}`)
	m, err := set.EvaluateWith(sig, compiledPacket(t, ledgerStore{}, sig))
	if err != nil || m.Rule != "quiet" {
		t.Fatalf("rule %q (err %v), want quiet: an empty packet counts 0 for each ledger query", m.Rule, err)
	}
	busy := ledgerStore{commitments: []ora.Commitment{{ID: "c1", Title: "t", Status: ora.CommitmentOpen, OpenedAt: now.Add(-time.Hour)}}}
	if m, _ := set.EvaluateWith(sig, compiledPacket(t, busy, sig)); m.Rule != "" {
		t.Errorf("rule %q with an open commitment, want the default", m.Rule)
	}
}

// TestContextExampleInTheDocs: the rules file docs/rules.md shows for
// reading the context parses, and decides as it says over compiled packets.
func TestContextExampleInTheDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "```yaml\nversion: ctx-1\n")
	if start < 0 {
		t.Fatal("docs/rules.md has no ctx-1 example")
	}
	body := doc[start+len("```yaml\n"):]
	body = body[:strings.Index(body, "```")]
	set, err := rules.Parse([]byte(body))
	if err != nil {
		t.Fatalf("the docs' example does not parse: %v", err)
	}
	sig := signal(t, "sig-doc", webhook("github", "issues.opened"), `{"action":"opened","issue":{"number":3,"title":"Build is red"}}`)
	tests := []struct {
		name  string
		store ledgerStore
		rule  string
	}{
		{"quiet", ledgerStore{}, "quiet"},
		{"flaky", ledgerStore{commitments: []ora.Commitment{{ID: "c1", Title: "Flaky build on main", Status: ora.CommitmentOpen, OpenedAt: now.Add(-time.Hour)}}}, "known-flake"},
		{"neither", ledgerStore{commitments: []ora.Commitment{{ID: "c1", Title: "Ship 1.2", Status: ora.CommitmentOpen, OpenedAt: now.Add(-time.Hour)}}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := set.EvaluateWith(sig, compiledPacket(t, tc.store, sig))
			if err != nil {
				t.Fatal(err)
			}
			if m.Rule != tc.rule {
				t.Errorf("rule %q, want %q", m.Rule, tc.rule)
			}
		})
	}
}

// TestOrientationReadInAnyPathSpelling: a rules file that names the packet
// only as $.orientation or $['orientation'] still gets it.
func TestOrientationReadInAnyPathSpelling(t *testing.T) {
	sig := signal(t, "sig-p", webhook("github", "issues.opened"), `{"action":"opened"}`)
	for _, field := range []string{"orientation.counts.open_commitments", "$.orientation.counts.open_commitments", "$['orientation'].counts.open_commitments", `$["orientation"].counts.open_commitments`} {
		t.Run(field, func(t *testing.T) {
			set, err := rules.Parse([]byte(`
version: p-1
rules:
  - name: quiet
    when: {field: "` + strings.ReplaceAll(field, `"`, `\"`) + `", lt: 1}
    then: {action: none, parameters: {reason: quiet}, confidence: 0.9, tier: 1, author_type: auditor, reasoning: nothing open}
unmatched: ignore
`))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if m, err := set.EvaluateWith(sig, compiledPacket(t, ledgerStore{}, sig)); err != nil || m.Rule != "quiet" {
				t.Errorf("rule %q (%v), want quiet: the packet was not given to the predicate", m.Rule, err)
			}
		})
	}
}
