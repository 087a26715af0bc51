package rules_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/rules"
)

// providerRules test what the providers' documented deliveries carry: the
// event types normalization gives slash commands and interactions, the
// decoded interaction payload (its type and action ids), a GitHub form
// delivery's decoded JSON, and a default for a field Slack sends as null.
const providerRules = `
version: providers-1
rules:
  - name: slack-mention
    when:
      all:
        - {field: source.provider, equals: slack}
        - {field: source.event_type, equals: app_mention}
    then:
      action: notify
      parameters:
        message: "mentioned in {{ payload.event.channel }}: {{ payload.event.text }}"
      confidence: 0.9
      tier: 1
      author_type: auditor
      reasoning: A mention is answered.
  - name: slack-deploy-command
    when:
      all:
        - {field: source.event_type, equals: slash_command.deploy}
        - {field: payload.text, matches: "^staging"}
    then:
      action: commitment.open
      parameters:
        title: "deploy to {{ payload.text }} for {{ payload.user_name }}"
      confidence: 0.7
      tier: 2
      author_type: auditor
      reasoning: A deploy request is a promise to deploy.
  - name: slack-approve-button
    when:
      all:
        - {field: source.event_type, equals: interactive.block_actions}
        - {field: payload.type, equals: block_actions}
        - {field: "payload.actions[0].action_id", equals: approve_deploy}
    then:
      action: notify
      parameters:
        subject: "{{ payload.enterprise.name | default: 'no enterprise' }}"
        message: "{{ payload.user.name }} approved the deploy to {{ payload.actions[0].value }}"
      confidence: 0.9
      tier: 1
      author_type: auditor
      reasoning: The button says approve.
  - name: github-ping
    when:
      all:
        - {field: source.provider, equals: github}
        - {field: source.event_type, equals: ping}
    then:
      action: notify
      parameters:
        message: "hook {{ payload.hook_id }} on {{ payload.repository.full_name }}: {{ payload.zen }}"
      confidence: 0.9
      tier: 1
      author_type: auditor
      reasoning: A new hook says hello.
default:
  action: notify
  parameters: {message: "unmatched {{ id }}"}
  confidence: 0.1
  tier: 3
  author_type: architect
  reasoning: Nothing matched.
`

// Each provider sample of events/webhook that came from the providers'
// documentation goes, exactly as signed, through the observer and a rule.
func TestProviderSamplesThroughNormalizationAndARule(t *testing.T) {
	clock := time.Unix(1795176000, 0).UTC()
	sources := []observe.SourceConfig{ // the secrets events/README.md documents
		{Name: "github", Type: observe.TypeGitHub, Secret: "ora-test-github-secret"},
		{Name: "slack", Type: observe.TypeSlack, Secret: "ora-test-slack-signing-secret"},
	}
	set, err := rules.Parse([]byte(providerRules))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file, source, rule string
		want               map[string]any
	}{
		{"slack-app-mention-documented.json", "slack", "slack-mention",
			map[string]any{"message": "mentioned in C123ABC456: <@U0LAN0Z89> is it everything a river should be?"}},
		{"slack-slash-command.json", "slack", "slack-deploy-command",
			map[string]any{"title": "deploy to staging --dry-run for steve"}},
		{"slack-block-actions.json", "slack", "slack-approve-button",
			map[string]any{"subject": "no enterprise", "message": "steve approved the deploy to staging"}},
		{"github-ping-form.json", "github", "github-ping",
			map[string]any{"message": "hook 292430183 on octo-org/ora-agent: Design for failure."}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			h, body := delivery(t, tt.file, nil)
			sig := captured(t, sources, clock, tt.source, h, body)
			m, err := set.Evaluate(sig)
			if err != nil {
				t.Fatal(err)
			}
			if m.Rule != tt.rule {
				t.Fatalf("event type %q: rule %q, want %q (payload %s)", sig.Source.EventType, m.Rule, tt.rule, sig.Payload)
			}
			var got map[string]any
			if err := json.Unmarshal(m.Parameters, &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("parameters.%s = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}
